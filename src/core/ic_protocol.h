/*
 * ic_protocol: the registry of exchange protocols and the record an exchange leaves behind.
 *
 * Contract
 * - IC_PROTOCOL_LIST is the one place a protocol is named. Each protocol module (ic_dlpack.c,
 *   ic_array_interface.c, ...) provides one `struct ic_protocol_ops`; ic_protocol.c gathers
 *   them. Adding a protocol: add a row to the list, write the module with its ops, its
 *   variants and its unit tests (tests/unit/protocols/test_<protocol>.c).
 * - An exchange is observed through a `struct ic_export_record`, owned by the caller
 *   (ic_exchange). Proxies and reference consumers write into it while the case runs; they
 *   keep a pointer to it, so it must outlive every Python object they create for the case.
 * - All ops are called with the GIL held (ic_python's enter/leave). They return 0 or a
 *   negative IC_E* code for failures of the tool; a producer or consumer that breaks a rule
 *   is recorded in the record's findings, not returned as an error.
 */
#ifndef IC_PROTOCOL_H
#define IC_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_diag.h"
#include "ic_rules.h"
#include "ic_view.h"

typedef struct _object PyObject; /* no Python.h here: most of the tool is plain C */

/* The registry: a protocol's one entry. X(ENUM, id, protocols.md section, summary, ops): `ops`
 * is the `struct ic_protocol_ops` its module (src/protocols/) defines, which holds everything
 * the generic stages ask of it. docs/adding-a-protocol.md says what else a new one adds. */
#define IC_PROTOCOL_LIST(X)                                                                        \
    X(DLPACK, "dlpack", "2", "__dlpack__ / __dlpack_device__ into from_dlpack", ic_dlpack_ops)     \
    X(DLPACK_CAPSULE, "dlpack_capsule", "2",                                                       \
      "a legacy capsule from a to_dlpack function into a consumer that takes capsules",            \
      ic_dlpack_capsule_ops)                                                                       \
    X(ARRAY_INTERFACE, "array_interface", "4.1", "NumPy __array_interface__ (version 3)",          \
      ic_array_interface_ops)                                                                      \
    X(ARRAY_STRUCT, "array_struct", "4.3", "NumPy __array_struct__ (PyArrayInterface capsule)",    \
      ic_array_struct_ops)                                                                         \
    X(BUFFER, "buffer", "5", "the Python buffer protocol (PEP 3118)", ic_buffer_ops)               \
    X(ARRAY_METHOD, "array", "4.4", "__array__(dtype=None, copy=None) (NumPy 2 semantics)",        \
      ic_array_method_ops)                                                                         \
    X(CAI, "cuda_array_interface", "3", "__cuda_array_interface__ (version 3)", ic_cai_ops)        \
    X(ARROW, "arrow", "6",                                                                         \
      "__arrow_c_array__: ArrowSchema and ArrowArray capsules (the C data interface)",             \
      ic_arrow_ops)                                                                                \
    X(ARROW_DEVICE, "arrow_device", "6.3",                                                         \
      "__arrow_c_device_array__: ArrowSchema and ArrowDeviceArray capsules (the C device data "    \
      "interface)",                                                                                \
      ic_arrow_device_ops)                                                                         \
    X(ARROW_STREAM, "arrow_stream", "6",                                                           \
      "__arrow_c_stream__: an ArrowArrayStream capsule, read to its end (the C stream "            \
      "interface)",                                                                                \
      ic_arrow_stream_ops)

enum ic_protocol {
#define IC_PROTOCOL_ENUM(e, id, section, summary, ops) IC_PROTOCOL_##e,
    IC_PROTOCOL_LIST(IC_PROTOCOL_ENUM)
#undef IC_PROTOCOL_ENUM
        IC_PROTOCOL_COUNT
};

/* Case variants. A variant changes how a case is run; the plain case has variant NONE.
 * X(ENUM, id, protocol, applies to, devices, all layouts, all dtypes, summary).
 * "reference" variants are run by interopcheck's own consumer only; "any" variants apply to
 * every consumer; "copy"/"device keyword" ones, on any protocol, to the library consumers
 * whose import of it takes that keyword as from_dlpack does (the import's "keywords" in the
 * probe's load() info: today DLPack imports only). Devices: the device kinds the variant
 * means something on. Layouts/dtypes "all" span the whole matrix dimension; otherwise only
 * flat / float32. */
#define IC_VARIANT_LIST(X)                                                                         \
    X(NONE, "", -1, IC_APPLIES_ANY, IC_ON_ANY, true, true, "")                                     \
    X(READONLY, "readonly", -1, IC_APPLIES_ANY, IC_ON_ANY, false, true,                            \
      "the producer's array is read-only; the export and the import must say so")                  \
    X(DL_LEGACY, "legacy", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY, true, true,        \
      "__dlpack__() without max_version: an old consumer gets a legacy capsule")                   \
    X(DL_MAX_VERSION_2, "max_version_2", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY,      \
      false, false, "__dlpack__(max_version=(2, 0)): a 1.x producer still exports its own 1.x")    \
    X(DL_MAX_VERSION_0_8, "max_version_0_8", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY,  \
      false, false, "__dlpack__(max_version=(0, 8)): a legacy capsule or BufferError, never 1.x")  \
    X(DL_MAX_VERSION_1_0, "max_version_1_0", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY,  \
      false, false, "__dlpack__(max_version=(1, 0)): the first versioned release")                 \
    X(DL_MAX_VERSION_1_99, "max_version_1_99", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE,           \
      IC_ON_ANY, false, false, "__dlpack__(max_version=(1, 99)): a minor no producer knows yet")   \
    X(DL_COPY, "copy", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY, false, true,           \
      "__dlpack__(copy=True): distinct memory and DLPACK_FLAG_BITMASK_IS_COPIED")                  \
    X(DL_NO_COPY, "no_copy", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_ANY, false, false,    \
      "__dlpack__(copy=False): the same memory and no IS_COPIED flag")                             \
    X(DL_CPU_STREAM, "cpu_stream", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CPU, false,     \
      false, "__dlpack__(stream=1) on a CPU array must raise")                                     \
    X(DL_DEVICE_CPU, "dl_device_cpu", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CPU, false,  \
      false, "__dlpack__(dl_device=(1, 0)) on a CPU array exports in place")                       \
    X(BUF_CONTIG, "contig", IC_PROTOCOL_BUFFER, IC_APPLIES_REFERENCE, IC_ON_CPU, true, false,      \
      "PyBUF_C_CONTIGUOUS | PyBUF_FORMAT: a C-contiguous buffer or BufferError")                   \
    X(BUF_WRITABLE, "writable", IC_PROTOCOL_BUFFER, IC_APPLIES_REFERENCE, IC_ON_CPU, false, false, \
      "PyBUF_RECORDS (writable): read-only exporters must raise BufferError")                      \
    X(ARR_COPY, "copy", IC_PROTOCOL_ARRAY_METHOD, IC_APPLIES_REFERENCE, IC_ON_CPU, false, true,    \
      "__array__(copy=True) returns fresh memory")                                                 \
    X(ARR_NO_COPY, "no_copy", IC_PROTOCOL_ARRAY_METHOD, IC_APPLIES_REFERENCE, IC_ON_CPU, true,     \
      false, "__array__(copy=False) shares memory or raises ValueError")                           \
    X(DL_STREAM_LEGACY, "stream_1", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CUDA, false,   \
      false, "__dlpack__(stream=1): ordered before work on the legacy default stream")             \
    X(DL_STREAM_PER_THREAD, "stream_2", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CUDA,      \
      false, false, "__dlpack__(stream=2): ordered before the per-thread default stream")          \
    X(DL_STREAM_HANDLE, "stream_handle", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CUDA,     \
      false, false, "__dlpack__(stream=<a non-blocking stream>): the producer makes it wait")      \
    X(DL_STREAM_NO_SYNC, "stream_minus_1", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CUDA,   \
      false, false, "__dlpack__(stream=-1): no synchronisation; the consumer orders its reads")    \
    X(DL_STREAM_ZERO, "stream_0", IC_PROTOCOL_DLPACK, IC_APPLIES_REFERENCE, IC_ON_CUDA, false,     \
      false, "__dlpack__(stream=0) is ambiguous: a producer should refuse it")                     \
    X(DL_STREAM_ORDER, "stream_order", IC_PROTOCOL_DLPACK, IC_APPLIES_ANY, IC_ON_CUDA, false,      \
      true, "the producer's kernel still writes the array when the consumer imports it")           \
    X(CAI_STREAM_ORDER, "stream_order", IC_PROTOCOL_CAI, IC_APPLIES_ANY, IC_ON_CUDA, false, true,  \
      "the producer's kernel still writes the array when the consumer imports it")                 \
    X(DL_C_API, "c_api", IC_PROTOCOL_DLPACK, IC_APPLIES_C_API, IC_ON_ANY, true, true,              \
      "type(x).__dlpack_c_exchange_api__: its table, its export, agreement with __dlpack__")       \
    X(FROM_C_API, "from_c_api", IC_PROTOCOL_DLPACK, IC_APPLIES_C_API_KEYWORD, IC_ON_ANY, false,    \
      true, "the consumer imports a versioned capsule through its own C exchange API table")       \
    X(DL_LEGACY_ONLY, "legacy_only", IC_PROTOCOL_DLPACK, IC_APPLIES_LIBRARY, IC_ON_ANY, false,     \
      true, "a producer older than max_version: any keyword raises TypeError, a retry works")      \
    X(DL_VERSIONED_ONLY, "versioned_only", IC_PROTOCOL_DLPACK, IC_APPLIES_LIBRARY, IC_ON_ANY,      \
      false, true, "a producer of versioned capsules only: __dlpack__() raises BufferError")       \
    X(DL_USED_CAPSULE, "used_capsule", IC_PROTOCOL_DLPACK, IC_APPLIES_LIBRARY, IC_ON_ANY, false,   \
      false, "a capsule consumed already (named used_*), as if handed out twice: refused")         \
    X(FROM_COPY, "from_copy", -1, IC_APPLIES_COPY_KEYWORD, IC_ON_ANY, false, false,                \
      "the import called with copy=True (from_dlpack(x, copy=True)): memory of its own")           \
    X(FROM_NO_COPY, "from_no_copy", -1, IC_APPLIES_COPY_KEYWORD, IC_ON_ANY, false, false,          \
      "the import called with copy=False: the producer's memory, or BufferError / ValueError")     \
    X(FROM_COPY_NONE, "from_copy_none", -1, IC_APPLIES_COPY_KEYWORD, IC_ON_ANY, false, false,      \
      "the import called with copy=None spelled out: as the plain call")                           \
    X(FROM_DEVICE, "from_device", -1, IC_APPLIES_DEVICE_KEYWORD, IC_ON_ANY, false, false,          \
      "the import called with device= the array's own device: imported there")                     \
    X(ARROW_REQUESTED_SCHEMA, "requested_schema", IC_PROTOCOL_ARROW, IC_APPLIES_REFERENCE,         \
      IC_ON_ANY, false, true,                                                                      \
      "__arrow_c_array__(requested_schema=) with the export's own schema: honoured, not refused")  \
    X(ARROW_STREAM_REQUESTED_SCHEMA, "requested_schema", IC_PROTOCOL_ARROW_STREAM,                 \
      IC_APPLIES_REFERENCE, IC_ON_ANY, false, true,                                                \
      "__arrow_c_stream__(requested_schema=) with the stream's own schema: honoured, not refused") \
    X(ARROW_UNKNOWN_KEYWORD, "unknown_keyword", IC_PROTOCOL_ARROW_DEVICE, IC_APPLIES_REFERENCE,    \
      IC_ON_ANY, false, false,                                                                     \
      "__arrow_c_device_array__(interopcheck_unknown=True) must raise NotImplementedError")        \
    X(ARROW_NULLS, "nulls", IC_PROTOCOL_ARROW, IC_APPLIES_ANY, IC_ON_CPU, true, true,              \
      "the array has nulls (base elements 1, 4, 7, ...): the export's validity bitmap and the "    \
      "import mark exactly those, and the other elements compare")                                 \
    X(ARROW_DEVICE_NULLS, "nulls", IC_PROTOCOL_ARROW_DEVICE, IC_APPLIES_ANY, IC_ON_CPU, true,      \
      true,                                                                                        \
      "the array has nulls (base elements 1, 4, 7, ...): the export's validity bitmap and the "    \
      "import mark exactly those, and the other elements compare")                                 \
    X(ARROW_RELAY_DLPACK, "relay_dlpack", IC_PROTOCOL_ARROW, IC_APPLIES_RELAY, IC_ON_CPU, true,    \
      true,                                                                                        \
      "the consumer hands its Arrow import on over DLPack (its own __dlpack__), read by "          \
      "interopcheck: the values, dtype and shape it imported")

enum ic_on_device {
    IC_ON_ANY,
    IC_ON_CPU,
    IC_ON_CUDA,
};

enum ic_applies {
    IC_APPLIES_ANY,
    IC_APPLIES_REFERENCE,
    IC_APPLIES_COPY_KEYWORD,   /* library consumers whose import takes copy= */
    IC_APPLIES_DEVICE_KEYWORD, /* library consumers whose import takes device= */
    IC_APPLIES_C_API, /* interopcheck's consumer, of producers whose export says "c_api" */
    IC_APPLIES_C_API_KEYWORD, /* library consumers whose import takes c_api=True */
    IC_APPLIES_LIBRARY,       /* every library consumer (a producer the proxy plays) */
    IC_APPLIES_RELAY,         /* library consumers whose arrays export DLPack on the device */
};

enum ic_variant {
#define IC_VARIANT_ENUM(e, id, proto, applies, devices, layouts, dtypes, summary) IC_VARIANT_##e,
    IC_VARIANT_LIST(IC_VARIANT_ENUM)
#undef IC_VARIANT_ENUM
        IC_VARIANT_COUNT
};

struct ic_variant_info {
    enum ic_variant variant;
    const char *id;
    int protocol; /* -1: every protocol */
    enum ic_applies applies;
    enum ic_on_device devices;
    bool all_layouts; /* false: only the flat layout (1-D, which every library has) */
    bool all_dtypes;  /* false: only float32 */
    const char *summary;
};

/* The name interopcheck's own C consumer has in the matrix. */
#define IC_REFERENCE_CONSUMER "interopcheck"

/* What one exchange left behind. Zero-initialise, then set `protocol` and `variant`. */
struct ic_export_record {
    enum ic_protocol protocol;
    enum ic_variant variant;

    int export_calls;  /* times the consumer asked for the export */
    char request[160]; /* the consumer's request, e.g. "__dlpack__(max_version=(1, 3))" */

    /* The producer raised instead of exporting; the exception went on to the consumer. */
    bool producer_raised;
    char producer_exc_type[64];
    char producer_exc_message[400];

    /* DLPack requests of a library consumer: whether some __dlpack__ call passed max_version,
     * whether such a call was refused with TypeError, and whether a call without max_version
     * followed that refusal (the spec's fallback for old producers). A refused call that also
     * passed copy or dl_device (not None) carried a request of the consumer's user, which a
     * call without keywords cannot honour: raising then is the consumer's choice (NumPy's). */
    bool dl_max_version_asked;
    bool dl_max_version_refused;
    bool dl_refused_with_user_keywords;
    bool dl_retried;

    /* The consumer broke the C API while asking (it requested an export with a Python
     * exception still set, as if its previous failed request were not its problem): the
     * producer's code then runs in a broken state, and what follows is the consumer's fault. */
    bool consumer_misuse;
    char consumer_misuse_text[200];

    /* The producer the case's variant has the proxy play cannot be played over this one (a
     * producer that predates max_version cannot answer with versioned capsules only): why,
     * which makes the case unsupported, charged to no side. Empty otherwise. */
    char unplayable[240];

    /* The variant has the proxy hand the consumer an export it must refuse (a capsule used
     * already): an import breaks consumer_refusal_rule, a refusal passes. */
    bool consumer_refusal_required;
    enum ic_rule consumer_refusal_rule;
    char consumer_refusal_why[160];

    /* An object of the tester's that the view points into (bit-packed booleans unpacked, a
     * byte each), released with the case; NULL when the view is the producer's memory. */
    PyObject *owned;

    /* The first export, as parsed and validated in C. */
    bool have_view;
    struct ic_view view;
    struct ic_diag diag;
    char detail[160]; /* what was exported, e.g. "dltensor_versioned 1.3 flags=0x1" */

    /* DLPack: the byte_offset of the export whose view the record keeps (the view's data
     * already includes it); lets the judge recognise a consumer that ignored it. */
    uint64_t byte_offset;

    /* Zero-copy expectations of this export; set by the protocol module. */
    bool copy_expected;    /* the request asked for a copy (copy=True): memory must differ */
    bool no_copy_required; /* the request forbade a copy (copy=False): memory must be shared */
    bool copy_flagged;     /* the export says it is a copy (DLPack IS_COPIED) */
    bool zero_copy_known;  /* true when the export must share the producer's memory unless it
                            * says it copied; false when copying is the producer's choice */

    /* The request was one the producer must refuse (a CPU array asked for a stream, a
     * non-contiguous array asked for a contiguous buffer): a refusal is the conformant answer,
     * and an export is an error finding. Set by reference_consume. */
    bool refusal_required;
    enum ic_rule refusal_rule; /* the rule an export would break */
    /* The request is one the spec says a producer should refuse without naming an exception
     * (DLPack's stream=0 on CUDA): a refusal of any type is conformant, an export is judged
     * as usual (the protocol module warns about it). */
    bool refusal_expected;

    /* The stream the export names for the consumer to order its work after (CUDA Array
     * Interface, version 3: the producer hands it over in the dict). has_stream is false and
     * stream 0 when the export names none (absent or None: no synchronisation needed), when
     * its version predates streams, or when the value is invalid (a finding). Otherwise 1
     * (legacy default stream), 2 (per-thread default stream) or a cudaStream_t handle. Set
     * by the protocol module from the export whose view the record keeps. */
    bool has_stream;
    int64_t stream;
    /* The export's version predates streams (CUDA Array Interface < 3): the only ordering its
     * consumers knew was the legacy default stream's, which blocking streams wait for; the
     * reference consumer, which reads on a non-blocking stream, waits for it as they would. */
    bool legacy_stream_implied;

    /* Lifetime accounting: DLPack deleter calls and capsule renames, buffer get/release. */
    int acquired;
    int released;
    bool consumed; /* DLPack: the capsule was renamed to used_* */
    int watch[4];  /* ids of instrumented deleters or release callbacks, in the protocol
                    * module's own table (ic_dlpack.c, ic_arrow.c) */
    int watch_count;
    bool lifetime_checked;
    struct ic_diag lifetime;
};

/* True when a DLPack consumer asked with max_version and the export it got is a legacy
 * capsule (no read-only flag to know): a 0.x producer's valid answer, which a consumer must
 * read by the capsule's name. False for every other protocol (it asks no max_version). */
static inline bool ic_export_legacy_answer(const struct ic_export_record *rec)
{
    return rec->dl_max_version_asked && rec->have_view && !rec->view.readonly_known;
}

/* Zero-fills `rec` and sets its protocol and variant. */
void ic_export_record_init(struct ic_export_record *rec, enum ic_protocol protocol,
                           enum ic_variant variant);

/* Which element types a protocol has names for. */
enum ic_dtype_names {
    IC_NAMES_ALL,     /* every dtype of the matrix (DLPack's codes, a library's own dtype) */
    IC_NAMES_TYPESTR, /* the array interface's typestr grammar: no bfloat16 */
    IC_NAMES_PEP3118, /* struct-module formats: no bfloat16 */
};

/* What the generic stages (plan, exchange, judge) need to know of a protocol, so that they
 * hold no protocol's name: each module states its own. */
struct ic_protocol_facts {
    /* The rules the generic checks cite when this protocol's export breaks them. */
    enum ic_rule readonly_rule; /* it says writable for a read-only array's shared memory */
    enum ic_rule memory_rule;   /* it points at memory that cannot be read */
    enum ic_rule copy_rule;     /* copy=True answered with shared memory (NONE: no copy request) */
    enum ic_rule no_copy_rule;  /* copy=False answered with a copy */
    enum ic_rule silent_copy_rule;     /* a copy where the export promises the producer's memory,
                                        * not flagged as a copy (NONE: exchange.shared, the
                                        * rule of every protocol without a copy flag) */
    enum ic_rule device_pointer_rule;  /* the driver does not vouch for its device pointer
                                        * (NONE: the protocol describes host memory only) */
    enum ic_rule stream_order_rule;    /* read before the producer's queued writes finished */
    enum ic_rule contiguity_rule;      /* an export without strides whose bytes are not the
                                        * array in C order (NONE: every export has strides) */
    enum ic_rule advised_refusal_rule; /* a consumer refused with another exception than the
                                        * spec advises (IC_REFUSAL_LIST): a note */
    enum ic_rule nulls_rule;           /* the nulls variants: an export or import that marks
                                        * other elements null than the array (NONE: no nulls) */
    enum ic_dtype_names dtype_names;
    enum ic_variant stream_order_variant; /* its variant whose producer still writes the array
                                           * when the consumer imports it (NONE: none) */
    bool device_only;         /* it describes device memory only (the CUDA Array Interface) */
    bool consumer_asks_copy;  /* a consumer's request says copy= itself, so whether its import
                               * must share memory is its request's word (DLPack's copy=False),
                               * not the probe's zero_copy promise */
    bool export_names_stream; /* the export hands over a stream the consumer must wait for */
    bool device_from_driver;  /* the export does not carry the device ordinal: the driver tells
                               * it from the pointer, and an empty export's pointer 0 says
                               * nothing */
    bool raw_bytes;           /* a consumer may import untyped bytes (a buffer without format) */
    bool export_call_judged;  /* the export is a library function (to_dlpack) whose refusals
                               * the refusal policy judges, not the probe's own code */
};

struct ic_protocol_ops {
    enum ic_protocol protocol; /* its row in IC_PROTOCOL_LIST, which has its id and summary */
    struct ic_protocol_facts facts;

    /* Wraps `target` (the producer's export object) in a proxy (ic_proxy.h) that offers this
     * protocol and nothing else, validates each export it forwards, and records it in `rec`.
     * Returns a new reference, or NULL with a Python exception set (a tool failure). NULL op:
     * the consumer receives the export object itself, and `inspect` validates it first. */
    PyObject *(*proxy_new)(PyObject *target, struct ic_export_record *rec);

    /* For protocols without a proxy: validates the export object (and instruments it, e.g.
     * the DLPack deleter) before the consumer takes it. */
    int (*inspect)(PyObject *export_obj, struct ic_export_record *rec);

    /* interopcheck's own consumer: imports `export_obj` in C as `rec->variant` asks and leaves
     * the export view in rec->view. *ret_handle receives a new reference that keeps the
     * import alive (its release is the consumer letting go: the DLPack deleter runs, the
     * buffer is released), or NULL when the producer raised; a producer's exception is
     * recorded in `rec`, never left pending. Negative return: a tool failure. */
    int (*reference_consume)(PyObject *export_obj, struct ic_export_record *rec,
                             PyObject **ret_handle);

    /* Right after the consumer returned (or raised): records what the import left on the
     * export (a DLPack capsule renamed to used_*). `obj` is the proxy, or the export object
     * when there is no proxy. May be NULL. */
    void (*observe)(PyObject *obj, struct ic_export_record *rec);

    /* After the consumer's array and every other object of the case were released and
     * collected, while the caller still holds `obj` (as for observe): checks the lifetime
     * counters (deleter exactly once, one release per get) into rec->lifetime and sets
     * rec->lifetime_checked. May be NULL. */
    void (*finish)(PyObject *obj, struct ic_export_record *rec);

    /* Before interopcheck's consumer asks: whether `rec->variant` asks for what the producer
     * must refuse for this array (sets rec->refusal_required and rec->refusal_rule). May be
     * NULL: no request of the protocol must be refused. */
    void (*preset_refusal)(struct ic_export_record *rec, const struct ic_view *produced,
                           bool readonly_known);

    /* interopcheck's consumer on a GPU: the stream its request names for `rec->variant`
     * (rec->has_stream and rec->stream; -1 asks for no synchronisation, so the consumer
     * orders its reads itself), and *read_stream, the stream it reads on, preset to `ours`,
     * its own non-blocking stream. May be NULL: the request names no stream. */
    void (*request_stream)(struct ic_export_record *rec, uintptr_t ours, uintptr_t *read_stream);

    /* A consumer raised `exc_type`: `exc_message` although the export was valid: when what
     * this protocol's export was explains it as the consumer's mistake, writes what the
     * consumer did (a sentence that follows its name) into `why` and returns the rule it broke;
     * else IC_RULE_NONE. May be NULL. */
    enum ic_rule (*consumer_error_cause)(const struct ic_export_record *rec, const char *exc_type,
                                         const char *exc_message, char *why, size_t size);
};

const struct ic_protocol_ops *ic_protocol_ops(enum ic_protocol protocol);
/* True for protocols that describe device memory (the CUDA Array Interface): on a GPU the
 * host protocols (buffer, array interface, ...) have no exports to check. */
bool ic_protocol_on_devices(enum ic_protocol protocol);
const char *ic_protocol_id(enum ic_protocol protocol);
int ic_protocol_from_id(const char *id, enum ic_protocol *ret);

const struct ic_variant_info *ic_variant_info(enum ic_variant variant);
/* Variant by id within a protocol ("" is NONE). IC_ENOTFOUND if the protocol has none such. */
int ic_variant_from_id(enum ic_protocol protocol, const char *id, enum ic_variant *ret);

/* The protocol a relay variant's consumer hands its import on over (IC_APPLIES_RELAY), or -1
 * for every other variant. */
int ic_variant_relay_protocol(enum ic_variant variant);

/* True for the variants whose producer builds its array with nulls (ic_pattern_is_null). */
static inline bool ic_variant_has_nulls(enum ic_variant variant)
{
    return variant == IC_VARIANT_ARROW_NULLS || variant == IC_VARIANT_ARROW_DEVICE_NULLS;
}

/* The ops of the protocol modules, named in IC_PROTOCOL_LIST. */
#define IC_PROTOCOL_OPS_DECLARE(e, id, section, summary, ops)                                      \
    extern const struct ic_protocol_ops ops;
IC_PROTOCOL_LIST(IC_PROTOCOL_OPS_DECLARE)
#undef IC_PROTOCOL_OPS_DECLARE

#endif
