/*
 * ic_exchange: runs one case inside a worker and judges it. This is the verify stage.
 *
 * Contract
 * - ic_exchange_run builds the producer's array from a seeded pattern, exports it, lets the
 *   consumer (a library through its probe, or interopcheck's own C consumer) import it through
 *   the protocol's proxy, and checks the result in C against the pattern and the layout
 *   recipe: export validity, zero-copy, contents, dtype, shape, element addresses, device,
 *   read-only, lifetime. An import that passes them is then computed with: the consumer's
 *   probe runs one operation of its library on it (compute()), whose result must hold the
 *   import's values. Every check lands in the result on its own.
 * - The outcome follows the rules of ic_result.h: a library's refusal by BufferError is
 *   `unsupported` with its message; a broken rule is `fail` with the rule; a probe that cannot
 *   build or describe an array is `error` (the tool's side), never the library's failure.
 * - Called with the GIL held (ic_py_enter). Every Python object of the case is released, and
 *   the garbage collector run, before it returns, so lifetime checks see the deleters run.
 * - Returns 0 when the result is filled; a negative IC_E* code only when the tool itself
 *   broke (no memory), with the result set to `error`.
 */
#ifndef IC_EXCHANGE_H
#define IC_EXCHANGE_H

#include <stdint.h>

#include "ic_case.h"
#include "ic_probe.h"
#include "ic_result.h"

/* What a worker carries from one case to the next, for speed only, so that no case's verdict
 * depends on hidden state: the caller owns it, zero-initialised, one per worker. */
struct ic_exchange_cache {
    /* The stream interopcheck's consumer reads GPU cases on: made once per worker, since
     * creating one per case costs more than the case. 0 until the first GPU case. */
    uintptr_t reference_stream;
    /* The last producer/consumer pair whose missing deleter a full garbage collection did not
     * bring back: a consumer that leaks, leaks in every case of its pair, and a full collection
     * costs tens of milliseconds once big libraries are loaded. */
    char full_collect_useless[2 * IC_NAME_MAX + 2];
};

/* Who hears, during a case with a library consumer, that an export the consumer is about to
 * be handed breaks a harmful rule of the producer's: the rule and what broke it, once per case,
 * before the consumer touches the export. The worker tells the supervisor, so that a consumer
 * that then dies is not charged with what the producer handed it. One listener per process;
 * NULL: none. */
typedef void (*ic_flaw_fn)(void *context, enum ic_rule rule, const char *text);
void ic_exchange_set_flaw_listener(ic_flaw_fn fn, void *context);

/* `consumer` is NULL for interopcheck's own consumer. */
int ic_exchange_run(struct ic_exchange_cache *cache, const struct ic_case *c,
                    struct ic_probe *producer, struct ic_probe *consumer, uint64_t run_seed,
                    struct ic_result *res);

#endif
