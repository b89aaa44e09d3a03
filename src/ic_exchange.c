#include "ic_exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ic_error.h"
#include "ic_gpu.h"
#include "ic_pattern.h"
#include "ic_proxy.h"

/* Per protocol: the section a fidelity finding (wrong dtype, shape, address) cites, and the
 * rule behind the consumer's promise to share memory. */
static const struct {
    const char *fidelity;
    const char *sharing;
    const char *readonly;
    const char *refusal;
} ic_protocol_rules[IC_PROTOCOL_COUNT] = {
    [IC_PROTOCOL_DLPACK] = {"dlpack 2.2", "dlpack 2.3 copy", "dlpack 2.3 read-only",
                            "dlpack 2.3 errors"},
    [IC_PROTOCOL_DLPACK_CAPSULE] = {"dlpack 2.2", "dlpack 2.3 copy", "dlpack 2.3 read-only",
                                    "dlpack 2.3 errors"},
    [IC_PROTOCOL_ARRAY_INTERFACE] = {"array_interface 4.1", "array_interface 4.1 data",
                                     "array_interface 4.1 data", "array_interface 4.1"},
    [IC_PROTOCOL_ARRAY_STRUCT] = {"array_struct 4.3", "array_struct 4.3",
                                  "array_struct 4.3 WRITEABLE", "array_struct 4.3"},
    [IC_PROTOCOL_BUFFER] = {"buffer 5", "buffer 5", "buffer 5.1.5", "buffer 5.1.8"},
    [IC_PROTOCOL_ARRAY_METHOD] = {"array 4.4", "array 4.5.7", "array 4.4", "array 4.4"},
    [IC_PROTOCOL_CAI] = {"cai 3", "cai 3", "cai 3.1.10", "cai 3"},
};

/* Stages return IC_STAGE_GO to continue, IC_STAGE_DECIDED when the result is already set, or
 * a negative IC_E* code when the tool failed (the result then says error). */
enum { IC_STAGE_GO = 0, IC_STAGE_DECIDED = 1 };

/* Everything one case holds; released in one place (ic_case_state_release). */
struct ic_case_state {
    const struct ic_case *c;
    struct ic_probe *producer;
    struct ic_probe *consumer; /* NULL: interopcheck's own consumer */
    const struct ic_protocol_ops *ops;
    const char *consumer_name;
    struct ic_import_traits traits;

    unsigned char *base;     /* the pattern the producer's array is built from */
    struct ic_view expected; /* the layout applied to `base` */
    uint64_t seed;           /* of the pattern in `base` */
    uintptr_t read_stream;   /* the stream the consumer reads on (GPU cases; 0 = legacy) */
    uintptr_t queued_stream; /* stream-ordering cases: the producer's stream with our writes */
    bool queued;

    PyObject *data;       /* bytes of `base` handed to build() */
    PyObject *array;      /* the producer's array */
    PyObject *export_obj; /* what export() returned */
    PyObject *proxy;      /* what the consumer received (proxy, or export_obj itself) */
    PyObject *imported;   /* the consumer's array, or the reference consumer's handle */

    struct ic_described produced;
    struct ic_described consumed;
    bool have_consumed;

    struct ic_export_record rec;
    struct ic_py_exc exc;
};

static double ic_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- Stage 1: the producer's array ---------------------------------------------------------- */

static int ic_stage_build(struct ic_case_state *st, uint64_t run_seed, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    const struct ic_dtype_info *dtype = ic_dtype_info(c->dtype);
    const struct ic_layout_info *layout = ic_layout_info(c->layout);
    char id[IC_CASE_ID_MAX];

    if (ic_case_format_id(c, id, sizeof(id)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "invalid case");
        return IC_STAGE_DECIDED;
    }
    size_t bytes = (size_t)layout->base_len * (size_t)dtype->itemsize;
    st->base = malloc(bytes ? bytes : 1);
    if (!st->base) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "out of memory");
        return IC_ENOMEM;
    }
    st->seed = ic_pattern_seed(run_seed, id);
    ic_pattern_fill(st->base, layout->base_len, c->dtype, st->seed);
    struct ic_view base = {.data = (uintptr_t)st->base,
                           .device_type = IC_DEVICE_CPU,
                           .dtype = c->dtype,
                           .itemsize = dtype->itemsize};
    if (ic_layout_apply(layout, &base, &st->expected) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "the layout table cannot express %s",
                      layout->name);
        return IC_STAGE_DECIDED;
    }

    st->data = PyBytes_FromStringAndSize((const char *)st->base, (Py_ssize_t)bytes);
    if (!st->data) {
        ic_py_fetch(&st->exc);
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "out of memory");
        return IC_ENOMEM;
    }
    bool readonly = c->variant == IC_VARIANT_READONLY;
    st->array =
        ic_probe_build(st->producer, st->data, c->dtype, layout, readonly, c->device, &st->exc);
    if (!st->array) {
        char text[IC_DIAGNOSTIC_MAX];
        ic_py_exc_format(&st->exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "the %s probe could not build a %s %s array: %s (%s)", c->producer,
                      dtype->name, layout->name, text, st->exc.where);
        return IC_STAGE_DECIDED;
    }
    if (ic_probe_describe(st->producer, st->array, &st->produced, &st->exc) < 0) {
        char text[IC_DIAGNOSTIC_MAX];
        ic_py_exc_format(&st->exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "the %s probe could not describe its array: %s",
                      c->producer, text);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

/* True when the host may read the view's memory directly (the CPU, pinned host memory, or
 * a host copy of a probe that could give only the contents). */
static bool ic_host_readable(const struct ic_view *view)
{
    return view->host_copy || view->device_type == IC_DEVICE_CPU ||
           view->device_type == IC_DEVICE_CUDA_HOST;
}

/* The GPU's description of the expected view's elements: the pattern of `seed` over the
 * layout's base, addressed like the expected view. IC_EUNSUPPORTED when the view has more
 * dimensions than the kernels take. */
static int ic_expected_pattern(const struct ic_case_state *st, uint64_t seed,
                               struct ic_pattern_ref *ref)
{
    const struct ic_dtype_info *info = ic_dtype_info(st->c->dtype);
    const struct ic_view *x = &st->expected;
    if (x->ndim > IC_CUDA_MAX_NDIM)
        return IC_EUNSUPPORTED;
    *ref = (struct ic_pattern_ref){
        .seed = seed,
        .value_class = (int)info->value_class,
        .itemsize = info->itemsize,
        .base_count = ic_layout_info(st->c->layout)->base_len,
        .ndim = x->ndim,
        .first = (int64_t)(x->data - (uintptr_t)st->base) / info->itemsize,
    };
    for (int d = 0; d < x->ndim; d++) {
        ref->shape[d] = x->shape[d];
        ref->element_strides[d] = x->strides[d] / info->itemsize;
    }
    return 0;
}

/* Checks `got` (shaped like the expected view) against the pattern: on the host through
 * both views' strides, or for device memory with the GPU's pattern kernel on `stream`.
 * 1: equal; 0: they differ (note says where); negative: the check itself could not run
 * (note says why). */
static int ic_pattern_compare(const struct ic_case_state *st, const struct ic_view *got,
                              uintptr_t stream, const char *who, char *note, size_t size)
{
    struct ic_compare_result cmp;
    char err[400];
    if (got->device_type == IC_DEVICE_CUDA_HOST && !got->host_copy &&
        strcmp(st->c->device, "cuda") == 0) {
        /* The host reads pinned memory like the GPU's consumer would, after the work ordered
         * before `stream` has run: synchronising that stream is the host's way to wait. */
        if (ic_cuda_stream_synchronize(ic_gpu(), stream, err, sizeof(err)) < 0) {
            snprintf(note, size, "%s could not be ordered on its stream: %s", who, err);
            return IC_EIO;
        }
    }
    if (ic_host_readable(got)) {
        if (ic_view_compare(&st->expected, got, &cmp) < 0) {
            snprintf(note, size, "%s cannot be compared with the pattern", who);
            return IC_EINVAL;
        }
    } else {
        struct ic_pattern_ref ref;
        if (ic_expected_pattern(st, st->seed, &ref) < 0) {
            snprintf(note, size, "%s has %d dimensions, more than the GPU check takes", who,
                     st->expected.ndim);
            return IC_EUNSUPPORTED;
        }
        struct ic_cuda *cuda = ic_gpu();
        if (!cuda || ic_cuda_state(cuda) != IC_CUDA_READY) {
            snprintf(note, size, "%s is in device memory and no GPU can read it: %s", who,
                     cuda ? ic_cuda_reason(cuda) : "no CUDA driver");
            return IC_EUNSUPPORTED;
        }
        int rc = ic_cuda_check_pattern(cuda, got, &ref, stream, &cmp, err, sizeof(err));
        if (rc < 0) {
            snprintf(note, size, "%s could not be checked on the GPU: %s", who, err);
            return rc;
        }
    }
    if (cmp.mismatches == 0)
        return 1;
    char index[96];
    ic_view_format_index(&st->expected, cmp.first_mismatch, index, sizeof(index));
    snprintf(note, size, "%s: %lld of %lld elements differ from the pattern, the first at %s", who,
             (long long)cmp.mismatches, (long long)cmp.compared, index);
    return 0;
}

/* The probe's own array must be what was asked for before any exchange is judged: a wrong
 * array here is the probe's fault (error), not the library's. */
static int ic_stage_check_producer(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_view *p = &st->produced.view;
    const struct ic_view *x = &st->expected;
    char want[128], got[128];

    if (p->dtype != st->c->dtype) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "the %s probe built a %s array where %s was asked for", st->c->producer,
                      st->produced.dtype_name, ic_dtype_name(st->c->dtype));
        return IC_STAGE_DECIDED;
    }
    bool same_shape = p->ndim == x->ndim;
    for (int i = 0; same_shape && i < x->ndim; i++)
        same_shape = p->shape[i] == x->shape[i];
    if (!same_shape) {
        ic_view_format_shape(x, want, sizeof(want));
        ic_view_format_shape(p, got, sizeof(got));
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "the %s probe built shape %s where the %s layout has %s", st->c->producer,
                      got, ic_layout_name(st->c->layout), want);
        return IC_STAGE_DECIDED;
    }
    char note[IC_NOTE_MAX];
    int equal = ic_pattern_compare(st, p, 0, "its array", note, sizeof(note));
    if (equal <= 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "the %s probe's array does not hold the bytes it was built from (%s)",
                      st->c->producer, note);
        return IC_STAGE_DECIDED;
    }
    if (st->c->variant == IC_VARIANT_READONLY && !(st->produced.readonly_known && p->readonly)) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "the %s probe was asked for a read-only array but describes it as writable",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

/* --- Stage 2: export and import ------------------------------------------------------------ */

static bool ic_is_stream_order(enum ic_variant variant)
{
    return variant == IC_VARIANT_DL_STREAM_ORDER || variant == IC_VARIANT_CAI_STREAM_ORDER;
}

/* The stream interopcheck's own consumer reads on: one non-blocking stream per worker, which
 * the legacy default stream does not order, so a read on it sees exactly the ordering the
 * producer arranged. 0 when no stream could be made (the error is in err). */
static uintptr_t ic_reference_stream(char *err, size_t size)
{
    static uintptr_t stream;
    if (!stream && ic_cuda_stream_create(ic_gpu(), 0, &stream, err, size) < 0)
        stream = 0;
    return stream;
}

/* The requests of interopcheck's consumer on a GPU: which stream it names in __dlpack__, and
 * which it reads on. */
static int ic_preset_streams(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record *rec = &st->rec;
    char err[400] = "";
    if (strcmp(st->c->device, "cuda") != 0 || st->consumer)
        return IC_STAGE_GO;
    uintptr_t ours = ic_reference_stream(err, sizeof(err));
    if (!ours) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "cannot create a CUDA stream: %s", err);
        return IC_STAGE_DECIDED;
    }
    st->read_stream = ours;
    if (st->c->protocol != IC_PROTOCOL_DLPACK)
        return IC_STAGE_GO;
    rec->has_stream = true;
    switch (st->c->variant) {
    case IC_VARIANT_DL_STREAM_LEGACY:
        rec->stream = 1;
        st->read_stream = 1; /* CU_STREAM_LEGACY, a valid handle of the driver API */
        break;
    case IC_VARIANT_DL_STREAM_PER_THREAD:
        rec->stream = 2;
        st->read_stream = 2; /* CU_STREAM_PER_THREAD */
        break;
    case IC_VARIANT_DL_STREAM_NO_SYNC:
        rec->stream = -1; /* ordering is ours: ic_order_reads waits for the producer */
        break;
    case IC_VARIANT_DL_STREAM_ZERO:
        rec->stream = 0;
        st->read_stream = 0;
        break;
    case IC_VARIANT_DL_STREAM_HANDLE:
    case IC_VARIANT_DL_STREAM_ORDER:
        rec->stream = (int64_t)ours;
        break;
    default:
        /* A plain request names no stream: None, the legacy default stream, is read on. */
        rec->has_stream = false;
        st->read_stream = 0;
        break;
    }
    return IC_STAGE_GO;
}

/* Stream-ordering cases: a long kernel, then new values, queued on the producer's own stream
 * before the export, so an import that does not wait for that stream reads the old values. */
static int ic_stage_queue_writes(struct ic_case_state *st, struct ic_result *res)
{
    char err[400];
    if (!ic_is_stream_order(st->c->variant))
        return IC_STAGE_GO;
    if (!st->produced.pointer_known) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL,
                      "the %s probe gives its array's contents but not their address, so no "
                      "writes can be queued into it",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    uintptr_t stream;
    int rc = ic_probe_stream(st->producer, st->array, &stream, &st->exc);
    if (rc == IC_ENOTFOUND) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL,
                      "the %s probe names no stream (stream()), so no work can be queued behind "
                      "its array",
                      st->c->producer);
        return IC_STAGE_DECIDED;
    }
    if (rc < 0) {
        ic_py_exc_format(&st->exc, err, sizeof(err));
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "the %s probe's stream() failed: %s",
                      st->c->producer, err);
        return IC_STAGE_DECIDED;
    }
    uint64_t new_seed = st->seed ^ 0x5bd1e9955bd1e995ULL;
    struct ic_pattern_ref ref;
    if (ic_expected_pattern(st, new_seed, &ref) < 0) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL,
                      "the array has %d dimensions, more than the GPU fill takes",
                      st->expected.ndim);
        return IC_STAGE_DECIDED;
    }
    struct ic_cuda *cuda = ic_gpu();
    if (ic_cuda_spin(cuda, stream, 200 * 1000 * 1000ULL, err, sizeof(err)) < 0 ||
        ic_cuda_fill_pattern(cuda, &st->produced.view, &ref, stream, err, sizeof(err)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "cannot queue writes on %s's stream: %s",
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
    if (strcmp(st->c->device, "cuda") != 0)
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
    if (st->c->protocol == IC_PROTOCOL_CAI && rec->has_stream) {
        wait = true; /* rule 3.1.9: a consumer orders its work after the exported stream */
        producer = (uintptr_t)rec->stream;
    } else if (st->c->variant == IC_VARIANT_DL_STREAM_NO_SYNC && st->queued) {
        wait = true; /* stream=-1 leaves the ordering to the consumer */
        producer = st->queued_stream;
    }
    if (wait && ic_cuda_stream_wait(cuda, st->read_stream, producer, err, sizeof(err)) < 0) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "interopcheck's consumer could not wait for stream 0x%llx: %s",
                      (unsigned long long)producer, err);
        return IC_STAGE_DECIDED;
    }
    return IC_STAGE_GO;
}

static void ic_preset_refusals(struct ic_case_state *st)
{
    struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    switch (st->c->variant) {
    case IC_VARIANT_DL_CPU_STREAM:
        rec->refusal_required = p->device_type == IC_DEVICE_CPU;
        snprintf(rec->refusal_rule, sizeof(rec->refusal_rule), "dlpack 2.5.11");
        break;
    case IC_VARIANT_BUF_CONTIG:
        rec->refusal_required = !ic_view_is_c_contiguous(p);
        snprintf(rec->refusal_rule, sizeof(rec->refusal_rule), "buffer 5.1.6");
        break;
    case IC_VARIANT_BUF_WRITABLE:
        rec->refusal_required = st->produced.readonly_known && p->readonly;
        snprintf(rec->refusal_rule, sizeof(rec->refusal_rule), "buffer 5.1.5");
        break;
    default:
        break;
    }
}

/* Exports, then imports through the proxy or interopcheck's consumer. An import that fails
 * is not decided here: the judge looks at who raised what. */
static int ic_stage_exchange(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    char text[IC_DIAGNOSTIC_MAX];

    st->export_obj = ic_probe_export(st->producer, st->array, c->protocol, &st->exc);
    if (!st->export_obj) {
        ic_py_exc_format(&st->exc, text, sizeof(text));
        if (st->exc.buffer_error)
            ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL, "%s refused to export: %s",
                          c->producer, text);
        else if (c->protocol == IC_PROTOCOL_DLPACK_CAPSULE)
            ic_result_set(res, IC_OUTCOME_FAIL, "dlpack 2.3 errors",
                          "%s's to_dlpack raised %s where a refusal must be BufferError",
                          c->producer, text);
        else
            ic_result_set(res, IC_OUTCOME_ERROR, NULL, "the %s probe's export() failed: %s",
                          c->producer, text);
        return IC_STAGE_DECIDED;
    }

    ic_export_record_init(&st->rec, c->protocol, c->variant);
    ic_preset_refusals(st);
    if (ic_preset_streams(st, res) != IC_STAGE_GO)
        return IC_STAGE_DECIDED;

    if (!st->consumer) {
        if (st->ops->reference_consume(st->export_obj, &st->rec, &st->imported) < 0) {
            ic_py_fetch(&st->exc);
            ic_result_set(res, IC_OUTCOME_ERROR, NULL, "interopcheck's %s consumer failed",
                          st->ops->id);
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
            ic_result_set(res, IC_OUTCOME_ERROR, NULL, "cannot create the %s proxy: %s",
                          st->ops->id, text);
            return IC_EPYTHON;
        }
    } else {
        if (st->ops->inspect && st->ops->inspect(st->export_obj, &st->rec) < 0) {
            ic_result_set(res, IC_OUTCOME_ERROR, NULL, "cannot inspect the %s export", st->ops->id);
            return IC_EPYTHON;
        }
        st->proxy = Py_NewRef(st->export_obj);
    }
    st->imported = ic_probe_consume(st->consumer, st->proxy, c->protocol, c->dtype, &st->exc);
    if (st->ops->observe)
        st->ops->observe(st->proxy, &st->rec);
    if (!st->imported)
        return IC_STAGE_GO;
    if (ic_probe_describe(st->consumer, st->imported, &st->consumed, &st->exc) < 0) {
        ic_py_exc_format(&st->exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR, NULL, "the %s probe could not describe its import: %s",
                      st->consumer_name, text);
        return IC_STAGE_DECIDED;
    }
    st->have_consumed = true;
    return IC_STAGE_GO;
}

/* --- Stage 3: judging ------------------------------------------------------------------------ */

static bool ic_on_cuda(const struct ic_view *view)
{
    return view->device_type == IC_DEVICE_CUDA || view->device_type == IC_DEVICE_CUDA_HOST ||
           view->device_type == IC_DEVICE_CUDA_MANAGED;
}

/* Every exported device pointer is checked against the driver (memory type, device ordinal,
 * the whole span inside one allocation); findings join the export's. A protocol that does not
 * carry the device (the CUDA Array Interface) gets its ordinal from the driver here. */
static void ic_check_device_pointers(struct ic_case_state *st)
{
    struct ic_export_record *rec = &st->rec;
    struct ic_cuda *cuda = ic_gpu();
    char err[400];
    if (!rec->have_view || !ic_on_cuda(&rec->view) || !cuda || ic_cuda_state(cuda) != IC_CUDA_READY)
        return;
    const char *rule =
        st->c->protocol == IC_PROTOCOL_DLPACK || st->c->protocol == IC_PROTOCOL_DLPACK_CAPSULE
            ? "dlpack 2.5.19"
            : "cai 3.1.5";
    if (st->c->protocol == IC_PROTOCOL_CAI) {
        /* The interface promises a device-accessible pointer, which pinned host and managed
         * memory are too: the driver says which, and which device (rule 3.1.5). Memory the
         * driver does not know stays "device memory", as the export implies, and fails. */
        struct ic_cuda_pointer info;
        if (ic_cuda_pointer_info(cuda, rec->view.data, &info, err, sizeof(err)) == 0) {
            if (info.memory == IC_CUDA_MEMORY_HOST)
                rec->view.device_type = IC_DEVICE_CUDA_HOST, rec->view.device_id = 0;
            else if (info.memory == IC_CUDA_MEMORY_MANAGED)
                rec->view.device_type = IC_DEVICE_CUDA_MANAGED, rec->view.device_id = 0;
            else if (info.device_ordinal >= 0)
                rec->view.device_id = info.device_ordinal;
        }
    }
    if (ic_cuda_check_view(cuda, &rec->view, rule, &rec->diag, err, sizeof(err)) < 0)
        ic_diag_warn(&rec->diag, rule, "the driver could not check the pointer: %s", err);
}

static void ic_check_export(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record *rec = &st->rec;
    char text[IC_NOTE_MAX];
    const struct ic_finding *error = ic_diag_first_error(&rec->diag);

    if (error) {
        /* The broken rule leads; the other findings follow for context. */
        int used = snprintf(text, sizeof(text), "[%s] %s", error->rule, error->message);
        for (int i = 0; i < rec->diag.count && used < (int)sizeof(text); i++) {
            const struct ic_finding *item = &rec->diag.items[i];
            if (item == error)
                continue;
            used += snprintf(text + used, sizeof(text) - (size_t)used, "; [%s%s] %s",
                             item->severity == IC_SEV_WARNING ? "warning: " : "", item->rule,
                             item->message);
        }
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_FAIL, error->rule, "%s", text);
    } else if (rec->refusal_required && !rec->producer_raised) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_FAIL, rec->refusal_rule,
                        "%s exported for %s, a request it must refuse", st->c->producer,
                        rec->request[0] ? rec->request : "the request");
    } else if (!rec->have_view && !rec->producer_raised) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_SKIP, NULL,
                        "%s never asked %s for the export", st->consumer_name, st->c->producer);
    } else if (rec->diag.count > 0) {
        ic_diag_format(&rec->diag, text, sizeof(text));
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, NULL, "%s", text);
    } else {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, NULL, NULL);
    }
}

/* The producer raised, or the consumer did: decides unsupported / fail / pass. */
static void ic_judge_refusal(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record *rec = &st->rec;
    const struct ic_case *c = st->c;
    const char *refusal_rule = ic_protocol_rules[c->protocol].refusal;
    char text[IC_DIAGNOSTIC_MAX];

    ic_check_export(st, res);
    if (rec->consumer_misuse) {
        const struct ic_finding *first = rec->diag.count ? &rec->diag.items[0] : NULL;
        ic_result_set(res, IC_OUTCOME_FAIL, "python c-api errors",
                      "%s %s: the C API must not be called with an exception set, and the "
                      "producer then failed in that state%s%s%s%s",
                      st->consumer_name, rec->consumer_misuse_text, first ? "; before that: [" : "",
                      first ? first->rule : "", first ? "] " : "", first ? first->message : "");
        return;
    }
    if (res->checks[IC_CHECK_EXPORT].status == IC_CHECK_FAIL) {
        /* A broken export explains the consumer's failure: the producer is at fault. */
        ic_result_conclude(res);
        return;
    }
    /* The producer refused only if no request of the consumer got an export: a consumer may
     * retry (without max_version, or read-only after writable) and fail later on its own. */
    if (rec->producer_raised && !rec->have_view) {
        snprintf(text, sizeof(text), "%s: %s", rec->producer_exc_type, rec->producer_exc_message);
        if (rec->refusal_required) {
            ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, NULL,
                            "%s refused %s as it must: %s", c->producer, rec->request, text);
            ic_result_conclude(res);
        } else if (strcmp(rec->producer_exc_type, "BufferError") == 0) {
            ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL, "%s refused %s: %s", c->producer,
                          rec->request[0] ? rec->request : "the export", text);
        } else if (strcmp(rec->producer_exc_type, "TypeError") == 0 &&
                   c->variant != IC_VARIANT_NONE && !st->consumer) {
            ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL,
                          "%s does not accept %s (%s): it predates these keywords", c->producer,
                          rec->request, text);
        } else if (strcmp(rec->producer_exc_type, "TypeError") == 0 && st->consumer &&
                   c->protocol == IC_PROTOCOL_DLPACK) {
            ic_result_set(res, IC_OUTCOME_FAIL, "dlpack 2.3 max_version",
                          "%s asked %s, %s raised %s, and %s did not retry without the new "
                          "keywords as a consumer must",
                          st->consumer_name, rec->request, c->producer, text, st->consumer_name);
        } else if (rec->producer_exc_type[0] &&
                   (strcmp(rec->producer_exc_type, "AttributeError") == 0) &&
                   (c->protocol == IC_PROTOCOL_ARRAY_INTERFACE ||
                    c->protocol == IC_PROTOCOL_ARRAY_STRUCT)) {
            ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL, "%s does not offer it here: %s",
                          c->producer, text);
        } else {
            ic_result_set(res, IC_OUTCOME_FAIL, refusal_rule,
                          "%s raised %s for %s; a producer that cannot export must raise "
                          "BufferError",
                          c->producer, text, rec->request[0] ? rec->request : "the export");
        }
        return;
    }
    if (!st->consumer) {
        ic_result_set(res, IC_OUTCOME_ERROR, NULL,
                      "interopcheck's %s consumer imported nothing and recorded no refusal",
                      st->ops->id);
        return;
    }
    /* The consumer refused on its own. */
    ic_py_exc_format(&st->exc, text, sizeof(text));
    if (st->exc.buffer_error)
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL, "%s refused the import: %s",
                      st->consumer_name, text);
    else
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, NULL,
                      "%s refused the import: %s (the spec recommends BufferError for a refusal)",
                      st->consumer_name, text);
}

static bool ic_same_shape(const struct ic_view *a, const struct ic_view *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i])
            return false;
    }
    return true;
}

static bool ic_view_is_empty(const struct ic_view *view)
{
    int64_t numel = 0;
    return ic_view_numel(view, &numel) == 0 && numel == 0;
}

/* The consumer's view: its own description, or the export for interopcheck's consumer. */
static const struct ic_view *ic_consumer_view(const struct ic_case_state *st)
{
    if (!st->consumer)
        return st->rec.have_view ? &st->rec.view : NULL;
    return st->have_consumed ? &st->consumed.view : NULL;
}

static bool ic_consumer_pointer_known(const struct ic_case_state *st)
{
    return st->consumer ? st->consumed.pointer_known : st->rec.have_view;
}

static void ic_check_zero_copy(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    const struct ic_view *e = rec->have_view ? &rec->view : NULL;
    const struct ic_view *c = ic_consumer_view(st);
    const char *rule = ic_protocol_rules[st->c->protocol].sharing;
    char note[IC_NOTE_MAX] = "";

    if (ic_view_is_empty(&st->expected)) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP, NULL,
                        "an empty array has no element to locate");
        return;
    }
    if (!st->produced.pointer_known || !e) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP, NULL,
                        e ? "the producer has no pointer API" : "no export to locate");
        return;
    }
    bool export_shares = e->data == p->data;
    if (rec->copy_expected) {
        if (export_shares) {
            ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_FAIL, rule,
                            "%s asked for a copy but the export points at the producer's data "
                            "(0x%llx)",
                            rec->request, (unsigned long long)p->data);
            return;
        }
        snprintf(note, sizeof(note), "copied as asked");
    } else if (rec->no_copy_required && !export_shares) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_FAIL, rule,
                        "%s forbade a copy but the export is at 0x%llx, the producer's data at "
                        "0x%llx",
                        rec->request, (unsigned long long)e->data, (unsigned long long)p->data);
        return;
    } else if (!export_shares) {
        if (rec->copy_flagged) {
            snprintf(note, sizeof(note), "%s exported a copy and said so", st->c->producer);
        } else if (rec->zero_copy_known) {
            ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_FAIL,
                            st->c->protocol == IC_PROTOCOL_DLPACK ||
                                    st->c->protocol == IC_PROTOCOL_DLPACK_CAPSULE
                                ? "dlpack 2.5.9"
                                : rule,
                            "the export's first element is at 0x%llx, the producer's at 0x%llx, "
                            "and the export does not say it copied",
                            (unsigned long long)e->data, (unsigned long long)p->data);
            return;
        } else {
            snprintf(note, sizeof(note), "%s exported a copy (its choice on this path)",
                     st->c->producer);
        }
    }

    if (st->consumer && c && ic_consumer_pointer_known(st)) {
        bool import_shares = c->data == e->data;
        if (st->traits.zero_copy && !import_shares) {
            /* Consumers that copy for alignment's sake copy some runs and not others: the
             * export's alignment makes the result reproducible to a reader. */
            uintptr_t align = e->data ? (e->data & (~e->data + 1)) : 0;
            ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_FAIL, rule,
                            "%s promises to share memory, but its array starts at 0x%llx and the "
                            "export at 0x%llx (aligned to %llu bytes)",
                            st->consumer_name, (unsigned long long)c->data,
                            (unsigned long long)e->data,
                            (unsigned long long)(align > 4096 ? 4096 : align));
            return;
        }
        if (!import_shares) {
            size_t used = strlen(note);
            snprintf(note + used, sizeof(note) - used,
                     "%s%s copied on import (it does not "
                     "promise to share)",
                     used ? "; " : "", st->consumer_name);
        }
    } else if (st->consumer && c) {
        size_t used = strlen(note);
        snprintf(note + used, sizeof(note) - used,
                 "%s%s has no pointer API: only the export "
                 "was located",
                 used ? "; " : "", st->consumer_name);
    }
    ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_PASS, NULL, "%s", note);
}

static void ic_check_contents(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *c = ic_consumer_view(st);
    char note[IC_NOTE_MAX];
    const char *rule = ic_protocol_rules[st->c->protocol].fidelity;

    if (rec->have_view && rec->view.dtype == st->c->dtype && !st->queued &&
        ic_same_shape(&rec->view, &st->expected)) {
        int equal = ic_pattern_compare(st, &rec->view, 0, "the export", note, sizeof(note));
        if (equal <= 0) {
            ic_result_check(res, IC_CHECK_CONTENTS, equal < 0 ? IC_CHECK_SKIP : IC_CHECK_FAIL,
                            equal < 0 ? NULL : rule, "%s", note);
            return;
        }
    }
    if (!c) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, NULL, "nothing was imported");
        return;
    }
    if (st->consumer && !st->traits.typed) {
        /* An untyped import holds the bytes: compare them in C order as a flat array of the
         * expected element size. */
        int64_t numel_expected = 0, bytes_got = 0;
        ic_view_numel(&st->expected, &numel_expected);
        if (ic_view_numel(c, &bytes_got) == 0)
            bytes_got *= c->itemsize;
        if (bytes_got != numel_expected * st->expected.itemsize) {
            ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_FAIL, rule,
                            "the import holds %lld bytes, the array %lld", (long long)bytes_got,
                            (long long)(numel_expected * st->expected.itemsize));
            return;
        }
        if (!ic_view_is_c_contiguous(c)) {
            ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, NULL,
                            "an untyped import that is not contiguous");
            return;
        }
        struct ic_view flat = {.data = c->data,
                               .itemsize = st->expected.itemsize,
                               .dtype = st->expected.dtype,
                               .device_type = c->device_type,
                               .device_id = c->device_id,
                               .host_copy = c->host_copy};
        flat.ndim = st->expected.ndim;
        memcpy(flat.shape, st->expected.shape, sizeof(flat.shape));
        ic_view_set_c_strides(&flat);
        int equal = ic_pattern_compare(st, &flat, 0, "the import", note, sizeof(note));
        if (equal <= 0)
            ic_result_check(res, IC_CHECK_CONTENTS, equal < 0 ? IC_CHECK_SKIP : IC_CHECK_FAIL,
                            equal < 0 ? NULL : rule, "%s", note);
        else
            ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_PASS, NULL, "compared as raw bytes");
        return;
    }
    if (c->dtype != st->c->dtype || c->itemsize != st->expected.itemsize) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, NULL,
                        "the import's dtype differs (see dtype)");
        return;
    }
    if (!ic_same_shape(c, &st->expected)) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, NULL,
                        "the import's shape differs (see shape)");
        return;
    }
    int equal = ic_pattern_compare(st, c, st->read_stream, "the import", note, sizeof(note));
    if (equal == 0 && st->queued) {
        /* Who broke the ordering: a DLPack producer must make the consumer's stream wait; a
         * CAI producer with queued work must export its stream, and a consumer then waits. */
        bool cai = st->c->protocol == IC_PROTOCOL_CAI;
        const char *culprit = cai && rec->has_stream ? st->consumer_name : st->c->producer;
        const char *why = !cai ? "did not make the consumer's stream wait for its queued writes"
                          : rec->has_stream
                              ? "did not wait for the stream the export names"
                              : "exported no stream while its writes were still queued";
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_FAIL,
                        cai ? "cai 3.1.9" : "dlpack 2.3 stream",
                        "the import read the array before the producer's queued writes finished: "
                        "%s %s (%s)",
                        culprit, why, note);
    } else if (equal <= 0) {
        ic_result_check(res, IC_CHECK_CONTENTS, equal < 0 ? IC_CHECK_SKIP : IC_CHECK_FAIL,
                        equal < 0 ? NULL : rule, "%s", note);
    } else {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_PASS, NULL, NULL);
    }
}

static void ic_check_dtype(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const char *rule = ic_protocol_rules[st->c->protocol].fidelity;
    const char *want = ic_dtype_name(st->c->dtype);

    if (rec->have_view && rec->view.dtype != st->c->dtype &&
        !(rec->view.dtype == IC_DTYPE_INVALID && st->c->protocol == IC_PROTOCOL_BUFFER &&
          rec->view.itemsize == st->expected.itemsize && st->consumer && !st->traits.typed)) {
        if (rec->view.dtype == IC_DTYPE_INVALID)
            ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_FAIL, rule,
                            "the export does not spell a dtype the protocol defines for a %s "
                            "array (%s)",
                            want, rec->detail[0] ? rec->detail : "no detail");
        else
            ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_FAIL, rule,
                            "the export says %s for a %s array", ic_dtype_name(rec->view.dtype),
                            want);
        return;
    }
    if (!st->consumer) {
        ic_result_check(res, IC_CHECK_DTYPE, rec->have_view ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL,
                        NULL);
        return;
    }
    if (!st->have_consumed) {
        ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_SKIP, NULL, "nothing was imported");
    } else if (!st->traits.typed) {
        ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_SKIP, NULL,
                        "%s's import is untyped: the dtype came from the caller",
                        st->consumer_name);
    } else if (st->consumed.view.dtype != st->c->dtype) {
        ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_FAIL, rule, "%s imported a %s array as %s",
                        st->consumer_name, want, st->consumed.dtype_name);
    } else {
        ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_PASS, NULL, NULL);
    }
}

static void ic_check_shape(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const char *rule = ic_protocol_rules[st->c->protocol].fidelity;
    char want[128], got[128];

    ic_view_format_shape(&st->expected, want, sizeof(want));
    if (rec->have_view && !ic_same_shape(&rec->view, &st->expected) &&
        !(st->consumer && !st->traits.typed)) {
        ic_view_format_shape(&rec->view, got, sizeof(got));
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_FAIL, rule,
                        "the export says shape %s for a %s array", got, want);
        return;
    }
    if (!st->consumer) {
        ic_result_check(res, IC_CHECK_SHAPE, rec->have_view ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL,
                        NULL);
        return;
    }
    if (!st->have_consumed) {
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_SKIP, NULL, "nothing was imported");
    } else if (!st->traits.typed) {
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_SKIP, NULL,
                        "%s's import is untyped: it holds flat bytes", st->consumer_name);
    } else if (!ic_same_shape(&st->consumed.view, &st->expected)) {
        ic_view_format_shape(&st->consumed.view, got, sizeof(got));
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_FAIL, rule,
                        "%s imported a %s array as shape %s", st->consumer_name, want, got);
    } else {
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_PASS, NULL, NULL);
    }
}

/* Element addresses: strides "as addressed bytes", so size-1 dimensions and equivalent
 * spellings of the same layout compare equal. */
static void ic_check_strides(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    const char *rule = ic_protocol_rules[st->c->protocol].fidelity;
    struct ic_compare_result cmp;
    char index[96], a[128], b[128];

    if (ic_view_is_empty(&st->expected)) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, NULL, "no elements");
        return;
    }
    if (rec->have_view && st->produced.pointer_known && rec->view.data == p->data &&
        ic_same_shape(&rec->view, p)) {
        if (ic_view_compare_addresses(p, &rec->view, &cmp) == 0 && cmp.mismatches > 0) {
            ic_view_format_index(p, cmp.first_mismatch, index, sizeof(index));
            ic_view_format_strides(p, a, sizeof(a));
            ic_view_format_strides(&rec->view, b, sizeof(b));
            ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_FAIL, rule,
                            "the export puts element %s elsewhere: producer strides %s, export "
                            "strides %s (bytes)",
                            index, a, b);
            return;
        }
    }
    if (!st->consumer) {
        ic_result_check(res, IC_CHECK_STRIDES, rec->have_view ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL,
                        NULL);
        return;
    }
    const struct ic_view *c = ic_consumer_view(st);
    if (!c || !rec->have_view || !st->consumed.pointer_known || !st->traits.typed) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, NULL,
                        !c                  ? "nothing was imported"
                        : !st->traits.typed ? "an untyped import has no strides of its own"
                                            : "the import cannot be located");
        return;
    }
    if (c->data != rec->view.data) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, NULL,
                        "the import is a copy: its layout is the consumer's own");
        return;
    }
    if (!ic_same_shape(c, &rec->view)) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, NULL, "shapes differ (see shape)");
        return;
    }
    if (ic_view_compare_addresses(&rec->view, c, &cmp) == 0 && cmp.mismatches > 0) {
        ic_view_format_index(c, cmp.first_mismatch, index, sizeof(index));
        ic_view_format_strides(&rec->view, a, sizeof(a));
        ic_view_format_strides(c, b, sizeof(b));
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_FAIL, rule,
                        "%s reads element %s from another address: export strides %s, import "
                        "strides %s (bytes)",
                        st->consumer_name, index, a, b);
        return;
    }
    ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_PASS, NULL, NULL);
}

static void ic_check_device(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_view *p = &st->produced.view;
    const struct ic_export_record *rec = &st->rec;
    const char *rule = ic_protocol_rules[st->c->protocol].fidelity;

    /* A protocol that does not carry the device id (the CUDA Array Interface) leaves it -1
     * unless the driver could tell it from the pointer; an empty one has pointer 0 and says
     * nothing about its memory at all. */
    if (rec->have_view && st->c->protocol == IC_PROTOCOL_CAI && rec->view.data == 0) {
        ic_result_check(res, IC_CHECK_DEVICE, IC_CHECK_SKIP, NULL,
                        "an empty CUDA array interface has pointer 0: its device is unknown");
        return;
    }
    bool id_known = rec->view.device_id >= 0;
    if (rec->have_view && (rec->view.device_type != p->device_type ||
                           (id_known && rec->view.device_id != p->device_id))) {
        ic_result_check(res, IC_CHECK_DEVICE, IC_CHECK_FAIL, rule,
                        "the export says device (%d, %lld) for an array on (%d, %lld)",
                        rec->view.device_type, (long long)rec->view.device_id, p->device_type,
                        (long long)p->device_id);
        return;
    }
    if (st->consumer && st->have_consumed &&
        (st->consumed.view.device_type != p->device_type ||
         st->consumed.view.device_id != p->device_id)) {
        ic_result_check(res, IC_CHECK_DEVICE, IC_CHECK_FAIL, rule,
                        "%s's import is on device (%d, %lld), the array on (%d, %lld)",
                        st->consumer_name, st->consumed.view.device_type,
                        (long long)st->consumed.view.device_id, p->device_type,
                        (long long)p->device_id);
        return;
    }
    ic_result_check(res, IC_CHECK_DEVICE,
                    rec->have_view || st->have_consumed ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL,
                    NULL);
}

/* Read-only matters where memory is shared: a copy's writability is its owner's business,
 * so each hop is judged only when its two sides are the same memory. */
static void ic_check_readonly(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    const char *rule = ic_protocol_rules[st->c->protocol].readonly;
    bool producer_ro = st->produced.readonly_known && p->readonly;
    char note[IC_NOTE_MAX] = "";

    if (!rec->have_view) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, NULL, "no export");
        return;
    }
    bool dlpack =
        st->c->protocol == IC_PROTOCOL_DLPACK || st->c->protocol == IC_PROTOCOL_DLPACK_CAPSULE;
    bool export_shares = st->produced.pointer_known && rec->view.data == p->data;
    if (producer_ro && rec->view.readonly_known && !rec->view.readonly) {
        if (export_shares) {
            ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_FAIL, dlpack ? "dlpack 2.5.10" : rule,
                            "the array is read-only but the export, which shares its memory, "
                            "says writable");
            return;
        }
        snprintf(note, sizeof(note), "the export is a writable copy of a read-only array");
    }
    if (producer_ro && !rec->view.readonly_known)
        snprintf(note, sizeof(note),
                 "a read-only array went out as a legacy capsule, which "
                 "cannot say so (rule 2.5.10 expects BufferError)");
    if (!st->consumer || !st->have_consumed) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, NULL, "%s", note);
        return;
    }
    const struct ic_described *c = &st->consumed;
    size_t used = strlen(note);
    if (c->pointer_known && c->view.data != rec->view.data) {
        snprintf(note + used, sizeof(note) - used,
                 "%sthe import is a copy: its writability is "
                 "%s's own",
                 used ? "; " : "", st->consumer_name);
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, NULL, "%s", note);
        return;
    }
    if (!c->readonly_known) {
        snprintf(note + used, sizeof(note) - used,
                 "%s%s cannot say whether its array is "
                 "read-only",
                 used ? "; " : "", st->consumer_name);
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, NULL, "%s", note);
        return;
    }
    bool export_ro = rec->view.readonly_known ? rec->view.readonly : producer_ro;
    if (export_ro && !c->view.readonly) {
        if (st->traits.readonly == IC_READONLY_NEVER) {
            snprintf(note + used, sizeof(note) - used,
                     "%s%s cannot mark arrays read-only: the "
                     "import is writable",
                     used ? "; " : "", st->consumer_name);
            ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, NULL, "%s", note);
        } else {
            ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_FAIL, rule,
                            "the export is read-only but %s's import, which shares its memory, "
                            "is writable",
                            st->consumer_name);
        }
        return;
    }
    if (!export_ro && c->view.readonly && rec->view.readonly_known &&
        st->traits.readonly == IC_READONLY_BOTH) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_FAIL, rule,
                        "the export is writable but %s's import is read-only", st->consumer_name);
        return;
    }
    ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, NULL, "%s", note);
}

static void ic_check_lifetime(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    char text[IC_NOTE_MAX];

    if (!rec->lifetime_checked) {
        ic_result_check(res, IC_CHECK_LIFETIME, IC_CHECK_SKIP, NULL,
                        "the %s protocol has no lifetime rules to check", st->ops->id);
        return;
    }
    const struct ic_finding *error = ic_diag_first_error(&rec->lifetime);
    ic_diag_format(&rec->lifetime, text, sizeof(text));
    ic_result_check(res, IC_CHECK_LIFETIME, error ? IC_CHECK_FAIL : IC_CHECK_PASS,
                    error ? error->rule : NULL, "%s", text);
}

/* --- Driver -------------------------------------------------------------------------------- */

static void ic_case_state_release_imports(struct ic_case_state *st)
{
    ic_described_release(&st->consumed);
    Py_CLEAR(st->imported);
    /* The consumer has let go: collect young cycles so deleters of freed arrays have run. */
    ic_py_collect(false);
}

/* The last pair for which a full collection did not change a lifetime verdict. A full
 * collection costs tens of milliseconds once big libraries are loaded; a consumer that leaks
 * leaks in every case of its pair, so the worker pays for the proof once per pair. */
static char ic_full_collect_useless[2 * IC_NAME_MAX + 2];

/* Judges lifetime; a deleter that looks missing gets one more chance after a full collection,
 * in case the consumer's array sat in an older generation's cycle. */
static void ic_stage_finish(struct ic_case_state *st)
{
    char pair[sizeof(ic_full_collect_useless)];
    if (!st->ops->finish)
        return;
    st->ops->finish(st->proxy, &st->rec);
    snprintf(pair, sizeof(pair), "%s/%s", st->c->producer, st->consumer_name);
    if (st->rec.lifetime.errors > 0 && strcmp(pair, ic_full_collect_useless) != 0) {
        ic_py_collect(true);
        ic_diag_init(&st->rec.lifetime);
        st->rec.lifetime_checked = false;
        st->ops->finish(st->proxy, &st->rec);
        if (st->rec.lifetime.errors > 0)
            snprintf(ic_full_collect_useless, sizeof(ic_full_collect_useless), "%s", pair);
    }
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
    Py_CLEAR(st->export_obj);
    ic_described_release(&st->produced);
    Py_CLEAR(st->array);
    Py_CLEAR(st->data);
    free(st->base);
    st->base = NULL;
}

int ic_exchange_run(const struct ic_case *c, struct ic_probe *producer, struct ic_probe *consumer,
                    uint64_t run_seed, struct ic_result *res)
{
    struct ic_case_state st;
    double start = ic_now_ms();
    int rc;

    memset(res, 0, sizeof(*res));
    memset(&st, 0, sizeof(st));
    st.c = c;
    st.producer = producer;
    st.consumer = consumer;
    st.consumer_name = consumer ? c->consumer : IC_REFERENCE_CONSUMER;
    st.ops = ic_protocol_ops(c->protocol);
    if (consumer)
        ic_probe_import_traits(consumer, c->protocol, &st.traits);

    rc = ic_stage_build(&st, run_seed, res);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_check_producer(&st, res);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_queue_writes(&st, res);
    if (rc == IC_STAGE_GO)
        rc = ic_stage_exchange(&st, res);
    if (rc == IC_STAGE_GO)
        rc = ic_order_reads(&st, res);
    if (rc != IC_STAGE_GO)
        goto done;

    snprintf(res->request, sizeof(res->request), "%s", st.rec.request);
    snprintf(res->exported, sizeof(res->exported), "%s", st.rec.detail);
    bool imported = st.imported != NULL;
    ic_check_device_pointers(&st);
    if (imported) {
        ic_check_export(&st, res);
        ic_check_zero_copy(&st, res);
        ic_check_contents(&st, res);
        ic_check_dtype(&st, res);
        ic_check_shape(&st, res);
        ic_check_strides(&st, res);
        ic_check_device(&st, res);
        ic_check_readonly(&st, res);
    } else {
        ic_judge_refusal(&st, res);
    }
    /* Lifetime is judged after the consumer let go, also when it failed: a consumer that
     * renamed a capsule and then raised still owes the deleter call. */
    ic_case_state_release_imports(&st);
    ic_stage_finish(&st);
    ic_check_lifetime(&st, res);
    bool lifetime_failed = res->checks[IC_CHECK_LIFETIME].status == IC_CHECK_FAIL;
    if (imported || (lifetime_failed &&
                     (res->outcome == IC_OUTCOME_UNSUPPORTED || res->outcome == IC_OUTCOME_PASS)))
        ic_result_conclude(res);

done:
    ic_case_state_release(&st);
    res->duration_ms = ic_now_ms() - start;
    return rc < 0 ? rc : 0;
}
