/*
 * ic_merge: several reports (one per CI job: CPU and GPU machines, other CUDA or library
 * versions) made into one report in which the environment is a dimension of the matrix.
 *
 * Contract
 * - The merged report is a report of the same schema version with an "environments" array:
 *   one entry per merged run, in input order, holding that run's own tool, run and environment
 *   objects and an id. Every case and every summary cell and gap carries "environment", the id
 *   of the run it came from, so cells are per (protocol, producer, consumer, device,
 *   environment). Totals, per-protocol counts and summary.total are over every environment.
 *   The top-level tool, run and environment repeat those of the first environment, so a reader
 *   of single reports still finds them.
 * - A merged input contributes each of its environments with its cases, keeping their ids
 *   (merging merged reports works; ids only change to stay unique, with a -2, -3... suffix).
 * - Ids of the other inputs are made from what tells the environments apart, so that they stay
 *   the same from one CI run to the next: the parts below are joined by '-', each only when it
 *   differs between the environments merged: the machine (platform.machine), the Python version
 *   ("py3_13_0"), "cpu" or "cuda" (whether a CUDA device was available), then each library
 *   whose version differs between environments that loaded it ("torch_2_15_0_cu132"). Only when
 *   these leave two environments the same (or nothing differs) is the host name appended,
 *   since CI hosts are often named at random. Anything outside [a-z0-9_] becomes '_'. Ids that
 *   still collide get -2, -3... in input order.
 * - Inputs are borrowed and left unchanged; the result is a new tree the caller deletes. An
 *   input that is not a well-formed report (or a merged report whose cases name an environment
 *   it does not list) is refused with err naming the input, and nothing is returned.
 */
#ifndef IC_MERGE_H
#define IC_MERGE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define IC_ENVIRONMENT_ID_MAX 128

/* Merges `count` reports (loaded by ic_report_load); `names` (the file names) label inputs in
 * messages. Returns 0, IC_EINVAL for an input that cannot be merged, IC_ENOMEM. */
int ic_merge_reports(const cJSON *const *reports, const char *const *names, int count, cJSON **ret,
                     char *err, size_t err_size);

#endif
