/*
 * ic_outputs: the files a command writes, named and checked before any work is done.
 *
 * Contract
 * - ic_output_sibling derives a path from the JSON report's or the stream's: RUN.json or
 *   RUN.jsonl, either with .gz -> RUN + the extension; any other name gets the extension
 *   appended.
 * - ic_output_check says whether `path` may be written: its directory exists and is writable,
 *   and the path is absent or a regular file. A symbolic link, a directory, a device, a FIFO
 *   or a socket is never replaced (the atomic write renames over whatever is there). It
 *   writes nothing; IC_EIO with the reason in `err` when the path is refused.
 * - ic_output_list collects the paths a run or `report` will write, so that all of them are
 *   checked up front and the closing message can name exactly those written. It owns copies
 *   of the paths (ic_output_list_release).
 */
#ifndef IC_OUTPUTS_H
#define IC_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>

void ic_output_sibling(const char *json_path, const char *ext, char *buf, size_t size);

int ic_output_check(const char *path, char *err, size_t err_size);

#define IC_OUTPUT_MAX 8

struct ic_output_list {
    char *paths[IC_OUTPUT_MAX];
    int count;
};

/* Adds `path` (ignored when NULL). IC_ENOMEM, IC_ERANGE beyond IC_OUTPUT_MAX. */
int ic_output_list_add(struct ic_output_list *list, const char *path);

/* Checks every path; the first refusal's reason goes into `err`. */
int ic_output_list_check(const struct ic_output_list *list, char *err, size_t err_size);

void ic_output_list_release(struct ic_output_list *list);

#endif
