#include "ic_exchange.h"
#include "ic_exchange_state.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ic_error.h"
#include "ic_export.h"
#include "ic_gpu.h"
#include "ic_pattern.h"
#include "ic_proxy.h"
#include "ic_text.h"

static double ic_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- Stage 1: the producer's array ---------------------------------------------------------- */

/* Charges the time since the last mark to `stage` of the case's result. */
static void ic_stage_mark(struct ic_case_state *st, struct ic_result *res, enum ic_stage stage)
{
    double now = ic_now_ms();
    res->stage_ms[stage] += now - st->stage_at;
    st->stage_at = now;
}

static int ic_stage_build(struct ic_case_state *st, uint64_t run_seed, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    const struct ic_dtype_info *dtype = ic_dtype_info(c->dtype);
    const struct ic_layout_info *layout = ic_layout_info(c->layout);
    char id[IC_CASE_ID_MAX];

    if (ic_case_format_id(c, id, sizeof(id)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, "invalid case");
        return IC_STAGE_DECIDED;
    }
    size_t bytes = (size_t)layout->base_len * (size_t)dtype->itemsize;
    st->base = malloc(bytes ? bytes : 1);
    if (!st->base) {
        ic_result_set(res, IC_OUTCOME_ERROR, "out of memory");
        return IC_ENOMEM;
    }
    st->seed = ic_pattern_seed(run_seed, id);
    ic_pattern_fill(st->base, layout->base_len, c->dtype, st->seed);
    struct ic_view base = {.data = (uintptr_t)st->base,
                           .device_type = IC_DEVICE_CPU,
                           .dtype = c->dtype,
                           .itemsize = dtype->itemsize};
    if (ic_layout_apply(layout, &base, &st->expected) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, "the layout table cannot express %s", layout->name);
        return IC_STAGE_DECIDED;
    }

    st->data = PyBytes_FromStringAndSize((const char *)st->base, (Py_ssize_t)bytes);
    if (!st->data) {
        ic_py_fetch(&st->exc);
        ic_result_set(res, IC_OUTCOME_ERROR, "out of memory");
        return IC_ENOMEM;
    }
    if (ic_variant_has_nulls(c->variant) && !(st->valid = ic_probe_valid_bytes(layout))) {
        ic_py_fetch(&st->exc);
        ic_result_set(res, IC_OUTCOME_ERROR, "out of memory");
        return IC_ENOMEM;
    }
    bool readonly = c->variant == IC_VARIANT_READONLY;
    st->array = ic_probe_build(st->producer, st->data, c->dtype, layout, readonly, st->valid,
                               ic_device_kind_name(c->device.kind), &st->exc);
    if (!st->array) {
        char text[IC_DIAGNOSTIC_MAX];
        ic_py_exc_format(&st->exc, text, sizeof(text));
        /* NotImplementedError is the probe saying its library cannot make this array here
         * (JAX's second device where there is one GPU): what the plan decides for whole
         * dtypes and layouts, said for one case. Any other exception is the probe's error. */
        bool cannot = strcmp(st->exc.type, "NotImplementedError") == 0;
        ic_result_set(res, cannot ? IC_OUTCOME_UNSUPPORTED : IC_OUTCOME_ERROR,
                      "the %s probe %s %s %s %s array: %s (%s)", c->producer,
                      cannot ? "cannot build" : "could not build", ic_text_article(dtype->name),
                      dtype->name, layout->name, text, st->exc.where);
        return IC_STAGE_DECIDED;
    }
    st->array_ref = ic_py_weak_ref(st->array);
    if (ic_probe_describe(st->producer, st->array, &st->produced, &st->exc) < 0) {
        char text[IC_DIAGNOSTIC_MAX];
        ic_py_exc_format(&st->exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR, "the %s probe could not describe its array: %s",
                      c->producer, text);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

/* The probe's own array must be what was asked for before any exchange is judged: a wrong
 * array here is the probe's fault (error), not the library's. */
/* The read-only variant's array must say it is read-only. */
static int ic_check_built_readonly(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_view *p = &st->produced.view;
    if (st->c->variant == IC_VARIANT_READONLY && !(st->produced.readonly_known && p->readonly)) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe was asked for a read-only array but describes it as writable",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

static int ic_stage_check_producer(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_view *p = &st->produced.view;
    const struct ic_view *x = &st->expected;
    char want[128], got[128];

    if (p->dtype != st->c->dtype) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe built %s %s array where %s was asked for", st->c->producer,
                      ic_text_article(st->produced.dtype_name), st->produced.dtype_name,
                      ic_dtype_name(st->c->dtype));
        return IC_STAGE_DECIDED;
    }
    bool same_shape = p->ndim == x->ndim;
    for (int i = 0; same_shape && i < x->ndim; i++)
        same_shape = p->shape[i] == x->shape[i];
    if (!same_shape) {
        ic_view_format_shape(x, want, sizeof(want));
        ic_view_format_shape(p, got, sizeof(got));
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe built shape %s where the %s layout has %s", st->c->producer,
                      got, ic_layout_name(st->c->layout), want);
        return IC_STAGE_DECIDED;
    }
    /* Under a lazy negation or conjugation the memory holds the negated (conjugated) values
     * by construction: only what the export and the import hold is compared. */
    if (ic_layout_is_value_view(ic_layout_info(st->c->layout)))
        return ic_check_built_readonly(st, res);
    char note[IC_NOTE_MAX];
    int equal = ic_pattern_compare(st, p, 0, "its array", note, sizeof(note));
    if (equal == IC_EFAULT) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe describes an array interopcheck cannot read (%s)",
                      st->c->producer, note);
        return IC_STAGE_DECIDED;
    }
    if (equal <= 0) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe's array does not hold the bytes it was built from (%s)",
                      st->c->producer, note);
        return IC_STAGE_DECIDED;
    }
    return ic_check_built_readonly(st, res);
}

/* --- Stage 2: export and import ------------------------------------------------------------ */

static bool ic_is_stream_order(const struct ic_case *c)
{
    return c->variant != IC_VARIANT_NONE &&
           c->variant == ic_protocol_ops(c->protocol)->facts.stream_order_variant;
}

/* The stream interopcheck's own consumer reads on: one non-blocking stream per worker, which
 * the legacy default stream does not order, so a read on it sees exactly the ordering the
 * producer arranged. 0 when no stream could be made (the error is in err). */
static uintptr_t ic_reference_stream(struct ic_exchange_cache *cache, char *err, size_t size)
{
    if (!cache->reference_stream &&
        ic_cuda_stream_create(ic_gpu(), 0, &cache->reference_stream, err, size) < 0)
        cache->reference_stream = 0;
    return cache->reference_stream;
}

/* The requests of interopcheck's consumer on a GPU: which stream it names in __dlpack__, and
 * which it reads on. */
static int ic_preset_streams(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record *rec = &st->rec;
    char err[400] = "";
    if (!ic_device_is_cuda(st->c->device) || st->consumer)
        return IC_STAGE_GO;
    uintptr_t ours = ic_reference_stream(st->cache, err, sizeof(err));
    if (!ours) {
        ic_result_set(res, IC_OUTCOME_ERROR, "cannot create a CUDA stream: %s", err);
        return IC_STAGE_DECIDED;
    }
    st->read_stream = ours;
    const struct ic_protocol_ops *ops = ic_protocol_ops(st->c->protocol);
    if (ops->request_stream)
        ops->request_stream(rec, ours, &st->read_stream);
    return IC_STAGE_GO;
}

/* Stream-ordering cases: a long kernel, then new values, queued on the producer's own stream
 * before the export, so an import that does not wait for that stream reads the old values. */
static int ic_stage_queue_writes(struct ic_case_state *st, struct ic_result *res)
{
    char err[400];
    if (!ic_is_stream_order(st->c))
        return IC_STAGE_GO;
    if (!st->produced.pointer_known) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED,
                      "the %s probe gives its array's contents but not their address, so no "
                      "writes can be queued into it",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    uintptr_t stream;
    int rc = ic_probe_stream(st->producer, st->array, &stream, &st->exc);
    if (rc == IC_ENOTFOUND) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED,
                      "the %s probe names no stream (stream()), so no work can be queued behind "
                      "its array",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    if (rc < 0) {
        ic_py_exc_format(&st->exc, err, sizeof(err));
        ic_result_set(res, IC_OUTCOME_ERROR, "the %s probe's stream() failed: %s", st->c->producer,
                      err);
        return IC_STAGE_DECIDED;
    }
    uint64_t new_seed = st->seed ^ 0x5bd1e9955bd1e995ULL;
    struct ic_pattern_ref ref;
    if (ic_expected_pattern(st, new_seed, &ref) < 0) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED,
                      "the array has %d dimensions, more than the GPU fill takes",
                      st->expected.ndim);
        return IC_STAGE_DECIDED;
    }
    struct ic_cuda *cuda = ic_gpu();
    if (ic_cuda_spin(cuda, stream, 200 * 1000 * 1000ULL, err, sizeof(err)) < 0 ||
        ic_cuda_fill_pattern(cuda, &st->produced.view, &ref, stream, err, sizeof(err)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, "cannot queue writes on %s's stream: %s",
                      st->c->producer, err);
        return IC_STAGE_DECIDED;
    }
    /* From here on the array's contents are the new pattern, once the stream gets to them;
     * host-side compares (pinned memory) read the expected values from `base`. */
    st->seed = new_seed;
    ic_pattern_fill(st->base, ic_layout_info(st->c->layout)->base_len, st->c->dtype, new_seed);
    st->queued_stream = stream;
    st->queued = true;
    return IC_STAGE_GO;
}

/* Where the consumer's reads are ordered: a library consumer reads on its own stream (as its
 * kernels would); interopcheck's consumer does what the protocol asks of a consumer. */
static int ic_order_reads(struct ic_case_state *st, struct ic_result *res)
{
    char err[400];
    if (!ic_device_is_cuda(st->c->device))
        return IC_STAGE_GO;
    struct ic_cuda *cuda = ic_gpu();
    if (st->consumer) {
        uintptr_t stream;
        if (st->imported && ic_probe_stream(st->consumer, st->imported, &stream, &st->exc) == 0)
            st->read_stream = stream;
        return IC_STAGE_GO;
    }
    struct ic_export_record *rec = &st->rec;
    bool wait = false;
    uintptr_t producer = 0;
    if (ic_protocol_ops(st->c->protocol)->facts.export_names_stream && rec->has_stream) {
        wait = true; /* rule 3.1.9: a consumer orders its work after the exported stream */
        producer = (uintptr_t)rec->stream;
    } else if (rec->has_stream && rec->stream == -1 && st->queued) {
        wait = true; /* stream=-1 leaves the ordering to the consumer */
        producer = st->queued_stream;
    } else if (rec->legacy_stream_implied) {
        wait = true; /* a version without streams: after the legacy default stream */
        producer = IC_CUDA_STREAM_LEGACY;
    }
    if (wait && ic_cuda_stream_wait(cuda, st->read_stream, producer, err, sizeof(err)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "interopcheck's consumer could not wait for stream 0x%llx: %s",
                      (unsigned long long)producer, err);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

static void ic_preset_refusals(struct ic_case_state *st)
{
    const struct ic_protocol_ops *ops = ic_protocol_ops(st->c->protocol);
    if (ops->preset_refusal)
        ops->preset_refusal(&st->rec, &st->produced.view, st->produced.readonly_known);
}

/* The probe's export() raised. For a bare capsule that is the library's to_dlpack refusing,
 * judged by the refusal policy; for the other protocols export() only hands the array over,
 * so a failure there is the probe's (the tool's side). */
static int ic_export_failed(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    const struct ic_refusal_policy *policy = ic_refusal_policy(ic_protocol_id(c->protocol));
    char text[IC_DIAGNOSTIC_MAX];

    ic_py_exc_format(&st->exc, text, sizeof(text));
    if (!ic_protocol_ops(c->protocol)->facts.export_call_judged) {
        ic_result_set(res, IC_OUTCOME_ERROR, "the %s probe's export() failed: %s", c->producer,
                      text);
    } else if (st->exc.buffer_error || !policy || !policy->producer) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s refused to export: %s", c->producer, text);
    } else {
        ic_result_fail(res, IC_CHECK_EXPORT, IC_RULE_EXCHANGE_REFUSAL, IC_SIDE_PRODUCER,
                       "%s's to_dlpack refused, not with %s but with %s", c->producer,
                       policy->producer, text);
        ic_result_conclude(res);
    }
    return IC_STAGE_DECIDED;
}

/* Exports, then imports through the proxy or interopcheck's consumer. An import that fails
 * is not decided here: the judge looks at who raised what. */
static int ic_stage_exchange(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    char text[IC_DIAGNOSTIC_MAX];

    st->export_obj = ic_probe_export(st->producer, st->array, c->protocol, &st->exc);
    ic_stage_mark(st, res, IC_STAGE_EXPORT);
    if (!st->export_obj)
        return ic_export_failed(st, res);

    ic_export_record_init(&st->rec, c->protocol, c->variant);
    ic_preset_refusals(st);
    if (ic_preset_streams(st, res) != IC_STAGE_GO)
        return IC_STAGE_DECIDED;

    if (!st->consumer) {
        int consumed = st->ops->reference_consume(st->export_obj, &st->rec, &st->imported);
        ic_stage_mark(st, res, IC_STAGE_IMPORT);
        if (consumed < 0) {
            ic_py_fetch(&st->exc);
            ic_result_set(res, IC_OUTCOME_ERROR, "interopcheck's %s consumer failed",
                          ic_protocol_id(st->ops->protocol));
            return IC_EPYTHON;
        }
        st->proxy = Py_NewRef(st->export_obj);
        return IC_STAGE_GO;
    }

    if (st->ops->proxy_new) {
        st->proxy = st->ops->proxy_new(st->export_obj, &st->rec);
        if (!st->proxy) {
            ic_py_fetch(&st->exc);
            ic_py_exc_format(&st->exc, text, sizeof(text));
            ic_result_set(res, IC_OUTCOME_ERROR, "cannot create the %s proxy: %s",
                          ic_protocol_id(st->ops->protocol), text);
            return IC_EPYTHON;
        }
    } else {
        if (st->ops->inspect && st->ops->inspect(st->export_obj, &st->rec) < 0) {
            ic_result_set(res, IC_OUTCOME_ERROR, "cannot inspect the %s export",
                          ic_protocol_id(st->ops->protocol));
            return IC_EPYTHON;
        }
        st->proxy = Py_NewRef(st->export_obj);
    }
    ic_stage_mark(st, res, IC_STAGE_EXPORT);
    st->imported = ic_probe_consume(st->consumer, st->proxy, c, &st->exc);
    ic_stage_mark(st, res, IC_STAGE_IMPORT);
    if (st->ops->observe)
        st->ops->observe(st->proxy, &st->rec);
    if (!st->imported) {
        st->consumer_exc = st->exc;
        st->consumer_raised = true;
        return IC_STAGE_GO;
    }
    if (ic_probe_describe(st->consumer, st->imported, &st->consumed, &st->exc) < 0) {
        ic_py_exc_format(&st->exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR, "the %s probe could not describe its import: %s",
                      st->consumer_name, text);
        return IC_STAGE_DECIDED;
    }
    st->have_consumed = true;
    ic_stage_mark(st, res, IC_STAGE_DESCRIBE);
    return IC_STAGE_GO;
}

/* --- Stage 3: computing with the import ------------------------------------------------------ */

/* Whether the consumer's operation raises on an array of its own as well: one built by its
 * probe from the case's bytes (flat), of the case's dtype and device. Then the import is not
 * what it cannot compute with (torch has no uint16 multiply on CUDA, for its own tensors as
 * for imported ones). False when no such array can be built: the verdict stands. */
static bool ic_compute_fails_natively(struct ic_case_state *st)
{
    struct ic_py_exc *exc = &st->native_compute_exc;
    PyObject *result = NULL;
    char why[8];
    PyObject *own =
        ic_probe_build(st->consumer, st->data, st->c->dtype, ic_layout_info(IC_LAYOUT_FLAT), false,
                       NULL, ic_device_kind_name(st->c->device.kind), exc);
    bool built = own != NULL;
    int rc = built ? ic_probe_compute(st->consumer, own, st->c->dtype, &result, why, sizeof(why),
                                      exc)
                   : IC_EPYTHON;
    Py_XDECREF(result);
    Py_XDECREF(own);
    return built && rc == IC_EPROBE;
}

/* The consumer's own operation on its import, then its description of the result. An import
 * that passes every check can still be one its library cannot use (TensorFlow aborts when it
 * computes with a misaligned DLPack import), and only computing shows it. A crash here dies
 * inside the consumer probe's compute(), which ic_crash charges to the consumer. */
static void ic_stage_compute(struct ic_case_state *st)
{
    st->compute_rc = ic_probe_compute(st->consumer, st->imported, st->c->dtype, &st->computed,
                                      st->compute_why, sizeof(st->compute_why), &st->compute_exc);
    if (st->compute_rc == IC_EPROBE)
        st->compute_fails_natively = ic_compute_fails_natively(st);
    if (st->compute_rc == 0 &&
        ic_probe_describe(st->consumer, st->computed, &st->computed_desc, &st->compute_exc) == 0)
        st->have_computed = true;
}

/* --- Driver -------------------------------------------------------------------------------- */

static void ic_case_state_release_imports(struct ic_case_state *st)
{
    /* Once is enough: the driver lets the consumer go before lifetime is judged, and the
     * release at the end has nothing of the consumer's left to collect. */
    if (st->imports_released)
        return;
    st->imports_released = true;
    ic_described_release(&st->computed_desc);
    Py_CLEAR(st->computed);
    ic_described_release(&st->consumed);
    Py_CLEAR(st->imported);
    /* The consumer has let go: collect young cycles so deleters of freed arrays have run. */
    ic_py_collect(false);
}

/* True for a lifetime finding about calls that happened: a collection can only make missing
 * calls happen, so a second look cannot take it back (and the first look retired its watch
 * entry, so the second would not see it). */
/* A finding a second look cannot change: all but a deleter not called yet. */
static bool ic_lifetime_final(const struct ic_diag_entry *entry)
{
    return !entry->provisional;
}

static bool ic_diag_holds(const struct ic_diag *diag, const struct ic_diag_entry *entry)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].rule == entry->rule &&
            strcmp(diag->items[i].message, entry->message) == 0)
            return true;
    }
    return false;
}

static int ic_lifetime_open_errors(const struct ic_diag *lifetime)
{
    int open = 0;
    for (int i = 0; i < lifetime->count; i++)
        open +=
            lifetime->items[i].severity == IC_SEV_ERROR && !ic_lifetime_final(&lifetime->items[i]);
    return open;
}

/* Judges lifetime; a deleter that looks missing gets one more chance after a full collection,
 * in case the consumer's array sat in an older generation's cycle. */
static void ic_stage_finish(struct ic_case_state *st)
{
    char *useless = st->cache->full_collect_useless;
    char pair[sizeof(st->cache->full_collect_useless)];
    if (!st->ops->finish)
        return;
    st->ops->finish(st->proxy, &st->rec);
    snprintf(pair, sizeof(pair), "%s/%s", st->c->producer, st->consumer_name);
    if (ic_lifetime_open_errors(&st->rec.lifetime) > 0 && strcmp(pair, useless) != 0) {
        struct ic_diag first = st->rec.lifetime;
        ic_py_collect(true);
        ic_diag_init(&st->rec.lifetime);
        st->rec.lifetime_checked = false;
        st->ops->finish(st->proxy, &st->rec);
        for (int i = 0; i < first.count; i++) {
            const struct ic_diag_entry *entry = &first.items[i];
            /* The second look sees only what is still watched: what the first settled
             * (a deleter called twice, one called early) is kept from it, once. */
            if (ic_lifetime_final(entry) && !ic_diag_holds(&st->rec.lifetime, entry))
                ic_diag_add_side(&st->rec.lifetime, entry->severity, entry->rule, entry->side, "%s",
                                 entry->message);
        }
        if (ic_lifetime_open_errors(&st->rec.lifetime) > 0)
            snprintf(useless, sizeof(pair), "%s", pair);
    }
}

/* Whether a fresh array of the producer's, built as the case's and dropped untouched, is freed
 * at once: the control that tells a library keeping every array alive (a cache of its own)
 * from one whose export keeps this one alive. */
static bool ic_fresh_array_freed(struct ic_case_state *st)
{
    struct ic_py_exc exc = {0};
    const struct ic_case *c = st->c;
    PyObject *fresh = ic_probe_build(st->producer, st->data, c->dtype, ic_layout_info(c->layout),
                                     c->variant == IC_VARIANT_READONLY, st->valid,
                                     ic_device_kind_name(c->device.kind), &exc);
    PyObject *ref = ic_py_weak_ref(fresh);
    Py_XDECREF(fresh);
    ic_py_collect(false);
    bool freed = ref && !ic_py_weak_alive(ref);
    Py_XDECREF(ref);
    return freed;
}

/* Once the consumer let go and the protocol's finish op counted the deleter calls, the
 * producer's array must be freeable: the tester drops its own references (the proxy, the
 * export object, the description, the array) and looks whether anything else still holds
 * it. Judged only where every export is accounted for: a lifetime finding or warning (a
 * deleter not called, a capsule nobody took and still alive, held perhaps by what the
 * consumer raised) or a consumer that still holds the export object explain a live array
 * otherwise; a library that keeps every array alive is told apart by a control array. */
static void ic_stage_owner_released(struct ic_case_state *st)
{
    struct ic_export_record *rec = &st->rec;
    /* A library consumer receives a proxy only the tester holds, unless the consumer kept it;
     * interopcheck's own consumer lets go of the export object, by construction. */
    bool consumer_holds = st->consumer && st->proxy && Py_REFCNT(st->proxy) > 1;
    if (!st->array_ref || st->queued || consumer_holds || rec->lifetime.count > 0)
        return;
    ic_proxy_detach(st->proxy);
    Py_CLEAR(st->proxy);
    Py_CLEAR(st->export_obj);
    ic_described_release(&st->produced);
    Py_CLEAR(st->array);
    /* Most arrays go with their last reference: a collection only for one still alive. */
    if (ic_py_weak_alive(st->array_ref))
        ic_py_collect(false);
    if (ic_py_weak_alive(st->array_ref))
        ic_py_collect(true); /* a cycle through an older generation */
    rec->lifetime_checked = true;
    if (!ic_py_weak_alive(st->array_ref) || !ic_fresh_array_freed(st))
        return;
    ic_diag_add_side(&rec->lifetime, IC_SEV_ERROR, IC_RULE_EXCHANGE_OWNER_RELEASED,
                     IC_SIDE_PRODUCER,
                     "%s's array is still alive after the consumer let go of its import and "
                     "the tester dropped its own references (a fresh array of the same kind is "
                     "freed at once): what the producer keeps for the export holds it, and "
                     "leaks it",
                     st->c->producer);
}

static void ic_case_state_release(struct ic_case_state *st)
{
    char err[200];
    /* Work we queued must finish before the memory it writes can be freed. */
    if (st->queued)
        ic_cuda_stream_synchronize(ic_gpu(), st->queued_stream, err, sizeof(err));
    ic_case_state_release_imports(st);
    ic_proxy_detach(st->proxy);
    Py_CLEAR(st->proxy);
    Py_CLEAR(st->rec.owned);
    Py_CLEAR(st->export_obj);
    ic_described_release(&st->produced);
    Py_CLEAR(st->array);
    Py_CLEAR(st->array_ref);
    Py_CLEAR(st->data);
    Py_CLEAR(st->valid);
    free(st->base);
    st->base = NULL;
}

static ic_flaw_fn ic_flaw_listener;
static void *ic_flaw_context;

void ic_exchange_set_flaw_listener(ic_flaw_fn fn, void *context)
{
    ic_flaw_listener = fn;
    ic_flaw_context = context;
}

/* The export observer of a case with a library consumer: the first harmful error of the
 * producer's in an export goes to the flaw listener. */
static void ic_exchange_observe_export(void *context, const struct ic_diag *diag)
{
    struct ic_case_state *st = context;
    for (int i = 0; i < diag->count && !st->flaw_told; i++) {
        const struct ic_diag_entry *entry = &diag->items[i];
        const struct ic_rule_info *info = ic_rule_info(entry->rule);
        enum ic_side side = entry->side != IC_SIDE_NONE ? entry->side
                            : info                      ? info->side
                                                        : IC_SIDE_NONE;
        if (entry->severity == IC_SEV_ERROR && info && info->severity == IC_CLASS_HARMFUL &&
            side == IC_SIDE_PRODUCER) {
            st->flaw_told = true;
            ic_flaw_listener(ic_flaw_context, entry->rule, entry->message);
        }
    }
}

int ic_exchange_run(struct ic_exchange_cache *cache, const struct ic_case *c,
                    struct ic_probe *producer, struct ic_probe *consumer, uint64_t run_seed,
                    struct ic_result *res)
{
    struct ic_case_state st;
    double start = ic_now_ms();
    int rc;

    memset(res, 0, sizeof(*res));
    memset(&st, 0, sizeof(st));
    st.cache = cache;
    st.c = c;
    st.producer = producer;
    st.consumer = consumer;
    st.consumer_name = consumer ? c->consumer : IC_REFERENCE_CONSUMER;
    st.stage_at = start;
    st.ops = ic_protocol_ops(c->protocol);
    if (consumer)
        ic_probe_import_traits(consumer, c->protocol, &st.traits);

    if (consumer && ic_flaw_listener)
        ic_export_set_observer(ic_exchange_observe_export, &st);
    rc = ic_stage_build(&st, run_seed, res);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_check_producer(&st, res);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_queue_writes(&st, res);
    ic_stage_mark(&st, res, IC_STAGE_BUILD);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_exchange(&st, res);
    ic_stage_mark(&st, res, IC_STAGE_CHECKS); /* what the stages above left unmarked */
    if (rc == IC_STAGE_GO)
        rc = ic_order_reads(&st, res);
    if (rc != IC_STAGE_GO)
        goto done;

    snprintf(res->request, sizeof(res->request), "%s", st.rec.request);
    snprintf(res->exported, sizeof(res->exported), "%s", st.rec.detail);
    ic_judge_exchange(&st, res);
    if (ic_judge_compute_wanted(&st, res)) {
        ic_stage_mark(&st, res, IC_STAGE_CHECKS);
        ic_stage_compute(&st);
        ic_stage_mark(&st, res, IC_STAGE_COMPUTE);
        ic_judge_compute(&st, res);
        ic_stage_mark(&st, res, IC_STAGE_CHECKS);
        ic_write_through_run(&st, res);
        ic_stage_mark(&st, res, IC_STAGE_WRITE_THROUGH);
        ic_relay_run(&st, res);
        ic_stage_mark(&st, res, IC_STAGE_RELAY);
    }
    ic_stage_mark(&st, res, IC_STAGE_CHECKS);
    /* Lifetime is judged after the consumer let go, also when it failed: a consumer that
     * renamed a capsule and then raised still owes the deleter call. */
    ic_case_state_release_imports(&st);
    ic_stage_finish(&st);
    ic_stage_owner_released(&st);
    ic_judge_conclude(&st, res);

done:
    ic_export_set_observer(NULL, NULL);
    ic_case_state_release(&st);
    ic_stage_mark(&st, res, IC_STAGE_LIFETIME);
    /* Whole microseconds: the clock's finer digits tell nothing, and a duration so rounded is
     * written without printf's floating point (ic_number_text), once by the worker and again
     * by the supervisor for each case. */
    res->duration_ms = (double)(int64_t)((ic_now_ms() - start) * 1000.0 + 0.5) / 1000.0;
    return rc < 0 ? rc : 0;
}
