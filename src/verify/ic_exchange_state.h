/*
 * ic_exchange_state: what one case holds while it runs, shared by the two halves of the verify
 * stage: ic_exchange.c (build, export, import) and ic_judge.c (the checks and the verdict).
 * Private to those two files.
 *
 * Contract
 * - ic_exchange_run owns the state: it fills it stage by stage and releases every Python
 *   object and buffer in one place when the case ends, whatever happened.
 * - The judge only reads the state (and the record the protocol module filled) and writes the
 *   result; it keeps nothing between cases.
 * - Everything here runs with the GIL held.
 */
#ifndef IC_EXCHANGE_STATE_H
#define IC_EXCHANGE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "ic_case.h"
#include "ic_cuda.h"
#include "ic_exchange.h"
#include "ic_probe.h"
#include "ic_protocol.h"
#include "ic_result.h"

/* Stages return IC_STAGE_GO to continue, IC_STAGE_DECIDED when the result is already set, or
 * a negative IC_E* code when the tool failed (the result then says error). */
enum { IC_STAGE_GO = 0, IC_STAGE_DECIDED = 1 };

struct ic_case_state {
    struct ic_exchange_cache *cache; /* the worker's, across cases (ic_exchange.h) */
    const struct ic_case *c;
    struct ic_probe *producer;
    struct ic_probe *consumer; /* NULL: interopcheck's own consumer */
    const struct ic_protocol_ops *ops;
    const char *consumer_name;
    struct ic_import_traits traits;

    double stage_at; /* when the stage being timed began (ic_stage_mark), in ms */

    unsigned char *base;     /* the pattern the producer's array is built from */
    struct ic_view expected; /* the layout applied to `base` */
    uint64_t seed;           /* of the pattern in `base` */
    uintptr_t read_stream;   /* the stream the consumer reads on (GPU cases; 0 = legacy) */
    uintptr_t queued_stream; /* stream-ordering cases: the producer's stream with our writes */
    bool queued;

    PyObject *data;       /* bytes of `base` handed to build() */
    PyObject *valid;      /* the nulls variants' build(valid=...): a byte per base element */
    PyObject *array;      /* the producer's array */
    PyObject *export_obj; /* what export() returned */
    PyObject *proxy;      /* what the consumer received (proxy, or export_obj itself) */
    PyObject *imported;   /* the consumer's array, or the reference consumer's handle */
    PyObject *array_ref;  /* a weak reference to `array`, NULL where it takes none */

    struct ic_described produced;
    struct ic_described consumed;
    bool have_consumed;

    /* The compute step, where the judge wanted it: the consumer's own operation on its import
     * (ic_probe_compute). */
    int compute_rc;        /* what ic_probe_compute returned */
    char compute_why[400]; /* IC_EUNSUPPORTED: the probe's reason */
    PyObject *computed;    /* the result, a new array */
    struct ic_described computed_desc;
    bool have_computed;           /* computed_desc describes the result */
    struct ic_py_exc compute_exc; /* what compute() or describe() of its result raised */
    /* compute() raised on the import, and on an array of the consumer's own of that dtype and
     * device too (what that raised): the library's coverage, not the exchange's doing. */
    bool compute_fails_natively;
    struct ic_py_exc native_compute_exc;

    struct ic_export_record rec;
    struct ic_py_exc exc;          /* the last exception fetched from a probe */
    struct ic_py_exc consumer_exc; /* what the consumer raised, when it raised */
    bool consumer_raised;
    bool refused;         /* the judge found an allowed refusal and set the outcome (unsupported) */
    bool flaw_told;       /* the flaw listener heard of a broken export of this case */
    bool imports_released; /* ic_case_state_release_imports ran: the consumer let go */
    char nulls_note[200]; /* the nulls variants: what the contents check's pass covered */
};

/* The GPU's description of the expected view's elements: the pattern of `seed` over the
 * layout's base, addressed like the expected view. IC_EUNSUPPORTED when the view has more
 * dimensions than the kernels take. */
int ic_expected_pattern(const struct ic_case_state *st, uint64_t seed, struct ic_pattern_ref *ref);

/* Checks `got` (shaped like the expected view) against the pattern: on the host through both
 * views' strides, or for device memory with the GPU's pattern kernel on `stream`. 1: equal;
 * 0: they differ (note says where); IC_EFAULT: `got` points at memory that cannot be read
 * (the guard of ic_view_compare found it before reading; note says which element); other
 * negatives: the check itself could not run (note says why). `who` names the view in the
 * note ("the import"). */
int ic_pattern_compare(const struct ic_case_state *st, const struct ic_view *got, uintptr_t stream,
                       const char *who, char *note, size_t size);
/* In the nulls variants (ic_variant_has_nulls) the elements the case made null hold undefined
 * values: ic_pattern_compare compares the others only, and ic_nulls_compare checks that `got`
 * marks exactly those null. 1: it does; 0: it does not, or has no nulls (note says which
 * element); IC_ENOTFOUND: `got` cannot say (its validity is unknown); IC_EFAULT: its bitmap
 * cannot be read. */
int ic_nulls_compare(const struct ic_case_state *st, const struct ic_view *got, const char *who,
                     char *note, size_t size);

/* Judges an exchange whose consumer imported something, or raised: every check but lifetime,
 * and the outcome of a refusal. */
void ic_judge_exchange(struct ic_case_state *st, struct ic_result *res);

/* Whether the consumer's import is to be computed with: an import that every check so far
 * judged, of a library consumer. When it is not, the compute check says why (or stays not run
 * where nothing was imported to judge). */
bool ic_judge_compute_wanted(struct ic_case_state *st, struct ic_result *res);

/* Judges the compute step that ran (compute_rc, computed_desc): the result against the
 * pattern, through the same comparison as the import's contents. */
void ic_judge_compute(struct ic_case_state *st, struct ic_result *res);

/* The write-through check (ic_write_through.c), on an import the judge wanted computed with:
 * where it shares the producer's memory and both libraries write in place, one element is
 * written through each side and read through the other. Leaves the arrays with the written
 * values; skips, with the reason, where it cannot run. */
void ic_write_through_run(struct ic_case_state *st, struct ic_result *res);

/* The relay check (ic_relay.c), for the relay variants, on an import the judge wanted computed
 * with: the consumer hands its import on over DLPack, and interopcheck reads what it hands on.
 * Does nothing in other variants. */
void ic_relay_run(struct ic_case_state *st, struct ic_result *res);

/* Judges lifetime once the consumer let go (the protocol's finish op has run), then concludes
 * the case: a failed check makes it fail (also after an allowed refusal); an allowed refusal
 * stays unsupported; a case in which no check could pass is an error, never a pass. */
void ic_judge_conclude(struct ic_case_state *st, struct ic_result *res);

#endif
