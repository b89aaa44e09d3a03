/*
 * ic_rules: every rule interopcheck judges an exchange by, in one table.
 *
 * Contract
 * - IC_RULE_LIST is the only place a rule is named. Code cites a rule by its enum value
 *   (IC_RULE_DLPACK_DEVICE_TUPLE); the id ("dlpack.device_tuple") is its spelling in reports,
 *   expectations and docs/rules.md, and never changes once released. A rule that is retired
 *   stays in the table, so old reports still resolve.
 * - Each rule has the side that usually breaks it and a severity class:
 *     harmful        silent wrong values, memory unsafety, a crash or an abort, a leak or a
 *                    double free, lost writes;
 *     nonconformant  the spec says otherwise, but the user gets a clear error or a correct
 *                    result;
 *     note           conformant but worth knowing; a note never fails a case.
 *   A fourth class, documented, is never a rule's own: it is given to a failure whose library
 *   documents the deviation (a probe's `deviations`, with a link to that documentation).
 * - docs/rules.md is generated from this table (`interopcheck rules --markdown`); a test keeps
 *   the two equal and fails when a rule of the table is made to fire by no test.
 * - Everything here is constant data; nothing allocates.
 */
#ifndef IC_RULES_H
#define IC_RULES_H

#include <stdbool.h>

/* The side of an exchange a failure is charged to: X(ENUM, name). NONE is nobody (a pass, a
 * skip, the tool's own error). */
#define IC_SIDE_LIST(X)                                                                            \
    X(NONE, "none") X(PRODUCER, "producer") X(CONSUMER, "consumer") X(BOTH, "both")

enum ic_side {
#define IC_SIDE_ENUM(e, name) IC_SIDE_##e,
    IC_SIDE_LIST(IC_SIDE_ENUM)
#undef IC_SIDE_ENUM
        IC_SIDE_COUNT
};

/* Severity classes, from the most to the least serious (the order sorts findings). */
#define IC_SEVERITY_LIST(X)                                                                        \
    X(HARMFUL, "harmful", "silent wrong values, memory unsafety, a crash, a leak or lost writes")  \
    X(NONCONFORMANT, "nonconformant",                                                              \
      "the spec says otherwise, but the user gets a clear error or a correct result")              \
    X(DOCUMENTED, "documented", "a deviation the library documents")                               \
    X(NOTE, "note", "conformant, but worth knowing")

enum ic_severity_class {
#define IC_SEVERITY_ENUM(e, name, summary) IC_CLASS_##e,
    IC_SEVERITY_LIST(IC_SEVERITY_ENUM)
#undef IC_SEVERITY_ENUM
        IC_CLASS_COUNT
};

/* X(ENUM, id, side, class, text). Side P: the producer; C: the consumer; E: either, named by
 * the code that finds the failure. The text is one line in our own words. */
#define IC_RULE_LIST(X)                                                                            \
    /* --- Any protocol: what an exchange must preserve --------------------------------- */       \
    X(EXCHANGE_CONTENTS, "exchange.contents", E, HARMFUL,                                          \
      "Every element read through the export or the import equals the producer's element.")        \
    X(EXCHANGE_DTYPE, "exchange.dtype", E, HARMFUL,                                                \
      "The element type survives: the export and the import say the producer's dtype.")            \
    X(EXCHANGE_DTYPE_NAMED, "exchange.dtype_named", C, NONCONFORMANT,                              \
      "A consumer that accepts an import can name its dtype (otherwise every use of the array "    \
      "raises).")                                                                                  \
    X(EXCHANGE_SHAPE, "exchange.shape", E, HARMFUL,                                                \
      "The shape survives: the export and the import have the producer's extents.")                \
    X(EXCHANGE_ADDRESSES, "exchange.addresses", E, HARMFUL,                                        \
      "Where memory is shared, every element lies at the same address on both sides.")             \
    X(EXCHANGE_DEVICE, "exchange.device", E, HARMFUL,                                              \
      "The device survives: the export and the import name the producer's device.")                \
    X(EXCHANGE_SHARED, "exchange.shared", E, HARMFUL,                                              \
      "Where the protocol or the request promises shared memory, the import shares it "            \
      "(otherwise writes are lost).")                                                              \
    X(EXCHANGE_READONLY, "exchange.readonly", E, HARMFUL,                                          \
      "Read-only memory stays read-only on the other side wherever it is shared.")                 \
    X(EXCHANGE_WRITABLE, "exchange.writable", C, NONCONFORMANT,                                    \
      "A consumer that can mark arrays read-only imports writable shared memory as writable.")     \
    X(EXCHANGE_REFUSAL, "exchange.refusal", E, NONCONFORMANT,                                      \
      "A side that cannot export or import refuses with the protocol's refusal exception "         \
      "(BufferError for a DLPack or buffer-protocol producer).")                                   \
    X(EXCHANGE_ROUND_TRIP, "exchange.round_trip", C, NONCONFORMANT,                                \
      "A library imports what it exports itself over the same protocol.")                          \
    X(EXCHANGE_CRASH, "exchange.crash", E, HARMFUL,                                                \
      "An exchange, and computing with what it imported, never kills the process (no "             \
      "segmentation fault, no abort).")                                                            \
    X(EXCHANGE_TIMEOUT, "exchange.timeout", E, HARMFUL,                                            \
      "An exchange finishes: it does not hang or deadlock.")                                       \
    X(EXCHANGE_COMPUTE, "exchange.compute", C, HARMFUL,                                            \
      "A consumer computes right with what it imported: an operation of its own on the import "    \
      "gives the values the import holds.")                                                        \
    X(EXCHANGE_RELAY, "exchange.relay", C, HARMFUL,                                                \
      "A library that imports an array over one protocol and exports it over another (Arrow in, "  \
      "DLPack out) hands on the values, dtype and shape it imported.")                             \
    X(EXCHANGE_COMPUTE_ERROR, "exchange.compute_error", C, NONCONFORMANT,                          \
      "A consumer that accepted an import can compute with it: an operation of its own on the "    \
      "import does not raise for a dtype it computes with.")                                       \
    X(EXCHANGE_WRITE_THROUGH, "exchange.write_through", E, HARMFUL,                                \
      "Where memory is shared, a write through either side is read back through the other at "     \
      "the same element (otherwise writes are lost or land elsewhere).")                           \
    X(EXCHANGE_CONSUMER_COPY, "exchange.consumer_copy", C, HARMFUL,                                \
      "A consumer asked to copy (from_dlpack(x, copy=True)) returns memory of its own, never "     \
      "the producer's.")                                                                           \
    X(EXCHANGE_CONSUMER_NO_COPY, "exchange.consumer_no_copy", C, HARMFUL,                          \
      "A consumer asked not to copy (from_dlpack(x, copy=False)) returns the producer's "          \
      "memory, or raises BufferError or ValueError.")                                              \
    X(EXCHANGE_OWNER_RELEASED, "exchange.owner_released", P, HARMFUL,                              \
      "Once the consumer let go of its import (and every deleter or release callback ran), "       \
      "nothing the producer keeps for the export holds the producer's array alive.")               \
    X(EXCHANGE_COPY_ALLOWED, "exchange.copy_allowed", C, NOTE,                                     \
      "A consumer copied where the request let it choose (copy=None): conformant, but not "        \
      "zero-copy.")                                                                                \
    X(PYTHON_CAPI_EXCEPTION, "python.capi_exception", C, NONCONFORMANT,                            \
      "C code does not call into the Python C API while an exception is set.")                     \
    /* --- DLPack: the capsule and the managed tensor ---------------------------------- */        \
    X(DLPACK_CAPSULE_NAME, "dlpack.capsule_name", P, NONCONFORMANT,                                \
      "The export is a PyCapsule named dltensor or dltensor_versioned; a used_* name means it "    \
      "was consumed already.")                                                                     \
    X(DLPACK_MANAGED_TENSOR, "dlpack.managed_tensor", P, HARMFUL,                                  \
      "The capsule's name and pointer are readable memory: the pointer is a DLManagedTensor (or "  \
      "DLManagedTensorVersioned) that lives as long as the capsule.")                              \
    X(DLPACK_MAJOR_VERSION, "dlpack.major_version", P, NONCONFORMANT,                              \
      "A versioned capsule's major version is one the consumer understands (1); otherwise the "    \
      "consumer only calls the deleter.")                                                          \
    X(DLPACK_MAX_VERSION, "dlpack.max_version", P, NONCONFORMANT,                                  \
      "The producer answers max_version with a major version no greater than the request's.")      \
    X(DLPACK_PREFER_VERSIONED, "dlpack.prefer_versioned", P, NOTE,                                 \
      "When max_version allows DLPack 1.x, a versioned capsule is expected; a legacy one is "      \
      "legal.")                                                                                    \
    X(DLPACK_LEGACY_REQUEST, "dlpack.legacy_request", P, NONCONFORMANT,                            \
      "__dlpack__() without max_version returns a legacy dltensor capsule, which old consumers "   \
      "expect.")                                                                                   \
    X(DLPACK_CONSUMER_MAX_VERSION, "dlpack.consumer_max_version", C, NONCONFORMANT,                \
      "A consumer passes max_version to __dlpack__, so that the producer may answer with a "       \
      "versioned capsule.")                                                                        \
    X(DLPACK_CONSUMER_RETRY, "dlpack.consumer_retry", C, NONCONFORMANT,                            \
      "A consumer whose __dlpack__(max_version=...) call raises TypeError retries without the "    \
      "new keywords.")                                                                             \
    X(DLPACK_CONSUMER_REFUSAL, "dlpack.consumer_refusal", C, NOTE,                                 \
      "A consumer that cannot import a DLPack export is advised to raise BufferError; another "    \
      "exception is conformant, and noted.")                                                       \
    X(DLPACK_CONSUMER_CAPSULE_KIND, "dlpack.consumer_capsule_kind", C, NONCONFORMANT,              \
      "A consumer reads the capsule's name: a producer may answer max_version with a legacy "      \
      "dltensor capsule.")                                                                         \
    X(DLPACK_CONSUMER_RENAME, "dlpack.consumer_rename", C, NONCONFORMANT,                          \
      "A consumer takes a capsule by renaming it to used_dltensor or used_dltensor_versioned.")    \
    X(DLPACK_DELETER_ONCE, "dlpack.deleter_once", C, HARMFUL,                                      \
      "A consumer that took a capsule calls its deleter exactly once: never is a leak, twice a "   \
      "double free.")                                                                              \
    X(DLPACK_DELETER_EARLY, "dlpack.deleter_early", P, HARMFUL,                                    \
      "A producer never calls the deleter of a tensor it exported: the consumer that took it "     \
      "does, once done with the memory (or the destructor of a capsule nobody took).")             \
    X(DLPACK_CAPSULE_DESTRUCTOR, "dlpack.capsule_destructor", P, HARMFUL,                          \
      "The destructor of a capsule nobody took calls the deleter exactly once.")                   \
    X(DLPACK_STATIC_NAME, "dlpack.static_name", P, NOTE,                                           \
      "Capsule names are static strings that outlive the capsule.")                                \
    X(DLPACK_DEVICE_TUPLE, "dlpack.device_tuple", P, NONCONFORMANT,                                \
      "__dlpack_device__() returns a 2-tuple of ints (device_type, device_id).")                   \
    X(DLPACK_DEVICE_MATCH, "dlpack.device_match", P, HARMFUL,                                      \
      "The tensor's device is __dlpack_device__(), or the dl_device the consumer asked for.")      \
    X(DLPACK_CONSUMER_USED_CAPSULE, "dlpack.consumer_used_capsule", C, HARMFUL,                    \
      "A consumer refuses a capsule named used_dltensor or used_dltensor_versioned: another "      \
      "consumer owns that tensor and calls its deleter.")                                          \
    X(DLPACK_COPY_FLAG, "dlpack.copy_flag", P, NONCONFORMANT,                                      \
      "An export made by copying (copy=True) sets DLPACK_FLAG_BITMASK_IS_COPIED; one that shares " \
      "memory does not.")                                                                          \
    X(DLPACK_COPY_TRUE, "dlpack.copy_true", P, HARMFUL,                                            \
      "__dlpack__(copy=True) exports memory distinct from the producer's.")                        \
    X(DLPACK_NO_COPY, "dlpack.no_copy", P, HARMFUL,                                                \
      "__dlpack__(copy=False) shares the producer's memory or raises BufferError.")                \
    X(DLPACK_FLAG_BITS, "dlpack.flag_bits", P, NOTE,                                               \
      "Flags use only the bits the DLPack version defines.")                                       \
    X(DLPACK_READONLY_FLAG, "dlpack.readonly_flag", P, HARMFUL,                                    \
      "A read-only array is exported with DLPACK_FLAG_BITMASK_READ_ONLY; a legacy capsule, "       \
      "which cannot say so, should be refused with BufferError.")                                  \
    X(DLPACK_CPU_STREAM, "dlpack.cpu_stream", P, NONCONFORMANT,                                    \
      "A CPU producer raises for any stream other than None.")                                     \
    X(DLPACK_STREAM_VALUE, "dlpack.stream_value", P, NONCONFORMANT,                                \
      "A CUDA or ROCm stream is None or an int >= -1; 0 is ambiguous and should be refused "       \
      "(by any exception: none is named).")                                                        \
    X(DLPACK_STREAM_ORDER, "dlpack.stream_order", P, HARMFUL,                                      \
      "The producer makes the consumer's stream wait for its pending work before the consumer "    \
      "reads.")                                                                                    \
    X(DLPACK_NDIM, "dlpack.ndim", P, NONCONFORMANT, "ndim is between 0 and 64.")                   \
    X(DLPACK_SHAPE_STRIDES, "dlpack.shape_strides", P, HARMFUL,                                    \
      "A tensor with dimensions has a readable shape array of ndim entries, and (DLPack 1.2 and "  \
      "later) a strides array too.")                                                               \
    X(DLPACK_SHAPE, "dlpack.shape", P, HARMFUL,                                                    \
      "Extents are >= 0 and the tensor's size in bytes fits in int64.")                            \
    X(DLPACK_STRIDES, "dlpack.strides", P, HARMFUL,                                                \
      "Strides count elements, and the span they address fits in int64.")                          \
    X(DLPACK_DATA, "dlpack.data", P, HARMFUL, "data is not NULL when the tensor has elements.")    \
    X(DLPACK_ADDRESS, "dlpack.address", P, HARMFUL,                                                \
      "data + byte_offset and every addressed element lie in readable memory inside the address "  \
      "space; the first element should be aligned to its size.")                                   \
    X(DLPACK_DTYPE, "dlpack.dtype", P, NONCONFORMANT,                                              \
      "The dtype is a DLPack type code with bits legal for it, and lanes >= 1.")                   \
    X(DLPACK_DEVICE, "dlpack.device", P, NONCONFORMANT,                                            \
      "The device type is a DLPack device type, and the device id is >= 0 (0 for host memory).")   \
    X(DLPACK_SUBBYTE, "dlpack.subbyte", P, NOTE,                                                   \
      "The sub-byte padding flag only accompanies sub-byte types.")                                \
    X(DLPACK_DEVICE_POINTER, "dlpack.device_pointer", P, HARMFUL,                                  \
      "A device pointer is memory of the device type and id the tensor names, and every "          \
      "addressed byte lies inside one allocation.")                                                \
    X(DLPACK_C_API_TABLE, "dlpack.c_api_table", P, NONCONFORMANT,                                  \
      "type(x).__dlpack_c_exchange_api__ is a PyCapsule named dlpack_exchange_api whose "          \
      "DLPackExchangeAPI has major version 1 and every required function set.")                    \
    X(DLPACK_C_API_AGREES, "dlpack.c_api_agrees", P, HARMFUL,                                      \
      "The C exchange API exports what __dlpack__ exports for the same array: the same first "     \
      "element, dtype, device, shape and strides.")                                                \
    X(DLPACK_C_API_STREAM, "dlpack.c_api_stream", P, NONCONFORMANT,                                \
      "The table's current_work_stream answers (returns 0) for the device of an array it "         \
      "exports.")                                                                                  \
    /* --- The buffer protocol (PEP 3118) ---------------------------------------------- */        \
    X(BUFFER_FIELDS, "buffer.fields", P, HARMFUL,                                                  \
      "After a successful get, obj, buf, len, itemsize and ndim are valid whatever was asked, "    \
      "and every pointer filled in (buf, format, shape, strides, suboffsets) is readable "         \
      "memory.")                                                                                   \
    X(BUFFER_SCALAR, "buffer.scalar", P, NONCONFORMANT,                                            \
      "A buffer with ndim 0 has no shape, strides or suboffsets.")                                 \
    X(BUFFER_SIZE, "buffer.size", P, HARMFUL,                                                      \
      "len equals the product of the shape times itemsize, and extents are >= 0.")                 \
    X(BUFFER_FORMAT_REQUEST, "buffer.format_request", P, NONCONFORMANT,                            \
      "format is filled exactly when PyBUF_FORMAT was asked for.")                                 \
    X(BUFFER_FORMAT, "buffer.format", P, HARMFUL,                                                  \
      "The format is a struct-module format whose item size equals itemsize.")                     \
    X(BUFFER_SHAPE_STRIDES, "buffer.shape_strides", P, NONCONFORMANT,                              \
      "shape is filled when PyBUF_ND is asked, strides when PyBUF_STRIDES is, suboffsets only "    \
      "for PyBUF_INDIRECT.")                                                                       \
    X(BUFFER_WRITABLE, "buffer.writable", P, HARMFUL,                                              \
      "A PyBUF_WRITABLE request gets writable memory, or BufferError.")                            \
    X(BUFFER_CONTIGUOUS, "buffer.contiguous", P, HARMFUL,                                          \
      "A contiguity request (or one without strides) gets memory of that contiguity, or "          \
      "BufferError.")                                                                              \
    X(BUFFER_STRIDES, "buffer.strides", P, HARMFUL,                                                \
      "The span the strides address fits in memory arithmetic; strides should be multiples of "    \
      "itemsize.")                                                                                 \
    X(BUFFER_FAILED_GET, "buffer.failed_get", P, NONCONFORMANT,                                    \
      "A failed get sets an exception (BufferError) and leaves view->obj NULL.")                   \
    X(BUFFER_RELEASE, "buffer.release", C, HARMFUL,                                                \
      "Every successful get is released exactly once.")                                            \
    /* --- NumPy's __array_interface__ ------------------------------------------------ */         \
    X(ARRAY_INTERFACE_DICT, "array_interface.dict", P, NONCONFORMANT,                              \
      "__array_interface__ is a dict with shape, typestr and version.")                            \
    X(ARRAY_INTERFACE_SHAPE, "array_interface.shape", P, HARMFUL,                                  \
      "shape and strides are tuples of ints of one length; strides count bytes; spans fit in "     \
      "int64.")                                                                                    \
    X(ARRAY_INTERFACE_TYPESTR, "array_interface.typestr", P, NONCONFORMANT,                        \
      "typestr follows <byteorder><kind><size>, and descr, when given, has the same size.")        \
    X(ARRAY_INTERFACE_DATA, "array_interface.data", P, HARMFUL,                                    \
      "data is (pointer, read-only) or an object with a buffer that holds every element; offset "  \
      "applies only to buffers.")                                                                  \
    X(ARRAY_INTERFACE_MASK, "array_interface.mask", P, NOTE,                                       \
      "mask is None or an array interface whose shape broadcasts to shape (NumPy ignores it).")    \
    X(ARRAY_INTERFACE_READONLY, "array_interface.readonly", P, HARMFUL,                            \
      "data[1] is True when the memory is read-only.")                                             \
    /* --- NumPy's __array_struct__ ---------------------------------------------------- */        \
    X(ARRAY_STRUCT_STRUCT, "array_struct.struct", P, NONCONFORMANT,                                \
      "__array_struct__ is an unnamed capsule of a PyArrayInterface with two == 2, a legal "       \
      "typekind and itemsize, and shape and strides for its dimensions.")                          \
    X(ARRAY_STRUCT_FLAGS, "array_struct.flags", P, HARMFUL,                                        \
      "The flags tell the truth: WRITEABLE only for writable memory, the contiguity bits only "    \
      "for contiguous data.")                                                                      \
    X(ARRAY_STRUCT_MEMORY, "array_struct.memory", P, HARMFUL,                                      \
      "The PyArrayInterface, its shape and strides arrays, and every element its data addresses "  \
      "are readable memory while the capsule lives.")                                              \
    /* --- __array__ (NumPy 2) ---------------------------------------------------------- */       \
    X(ARRAY_RETURNS_NDARRAY, "array.returns_ndarray", P, NONCONFORMANT,                            \
      "__array__ returns a numpy.ndarray (NumPy rejects anything else).")                          \
    X(ARRAY_COPY_KEYWORD, "array.copy_keyword", P, NOTE,                                           \
      "__array__ accepts dtype= and copy= (the NumPy 2 signature).")                               \
    X(ARRAY_COPY_TRUE, "array.copy_true", P, HARMFUL,                                              \
      "__array__(copy=True) returns memory distinct from the producer's.")                         \
    X(ARRAY_NO_COPY, "array.no_copy", P, HARMFUL,                                                  \
      "__array__(copy=False) shares the producer's memory, or raises.")                            \
    X(ARRAY_NO_COPY_ERROR, "array.no_copy_error", P, NONCONFORMANT,                                \
      "__array__(copy=False) that would need a copy raises ValueError.")                           \
    X(ARRAY_READONLY, "array.readonly", P, HARMFUL,                                                \
      "An __array__ result that shares a read-only array's memory is read-only.")                  \
    /* --- The CUDA Array Interface, version 3 ------------------------------------------- */      \
    X(CAI_DICT, "cai.dict", P, NONCONFORMANT,                                                      \
      "__cuda_array_interface__ is a dict with shape, typestr, data and version.")                 \
    X(CAI_VERSION, "cai.version", P, NONCONFORMANT,                                                \
      "version is an int from 0 to 3 (newer versions are read as 3).")                             \
    X(CAI_SHAPE, "cai.shape", P, HARMFUL,                                                          \
      "shape is a tuple of ints >= 0 whose size in bytes fits in int64.")                          \
    X(CAI_TYPESTR, "cai.typestr", P, NONCONFORMANT,                                                \
      "typestr follows <byteorder><kind><size> with a little-endian or order-free byte order.")    \
    X(CAI_DATA, "cai.data", P, HARMFUL,                                                            \
      "data is (pointer, read-only): 0 for an empty array and a device-accessible pointer "        \
      "otherwise.")                                                                                \
    X(CAI_STRIDES, "cai.strides", P, HARMFUL,                                                      \
      "strides are absent, None, or one int of bytes per dimension whose span fits in int64.")     \
    X(CAI_DESCR, "cai.descr", P, NONCONFORMANT, "descr, when given, has the size of typestr.")     \
    X(CAI_MASK, "cai.mask", P, NOTE,                                                               \
      "mask is None or a CUDA array interface whose shape broadcasts to shape.")                   \
    X(CAI_STREAM, "cai.stream", P, NONCONFORMANT,                                                  \
      "stream is absent, None, 1, 2 or a stream handle; 0 and negative values are invalid.")       \
    X(CAI_STREAM_ORDER, "cai.stream_order", E, HARMFUL,                                            \
      "A producer with pending work exports the stream it runs on, and the consumer orders its "   \
      "reads after that stream.")                                                                  \
    X(CAI_READONLY, "cai.readonly", P, HARMFUL, "data[1] is True when the memory is read-only.")   \
    X(CAI_DEVICE_POINTER, "cai.device_pointer", P, HARMFUL,                                        \
      "The pointer is device-accessible memory, and every addressed byte lies inside one "         \
      "allocation.")                                                                               \
    /* --- Arrow: the PyCapsule interface over the C data interface -------------------- */        \
    X(ARROW_CAPSULES, "arrow.capsules", P, NONCONFORMANT,                                          \
      "__arrow_c_array__ returns a tuple of two PyCapsules, named arrow_schema and arrow_array, "  \
      "in that order.")                                                                            \
    X(ARROW_STRUCTS, "arrow.structs", P, HARMFUL,                                                  \
      "Each capsule points at a readable ArrowSchema or ArrowArray that is not released yet (its " \
      "release callback is set).")                                                                 \
    X(ARROW_SCHEMA, "arrow.schema", P, NONCONFORMANT,                                              \
      "The schema's format is a readable, non-empty string; a primitive type has no children, "    \
      "and only the defined flag bits are set.")                                                   \
    X(ARROW_ARRAY, "arrow.array", P, HARMFUL,                                                      \
      "length and offset are >= 0, null_count is -1 or 0..length, and n_buffers, n_children and "  \
      "the dictionary follow the format's layout (two buffers for a fixed-width primitive).")      \
    X(ARROW_BUFFERS, "arrow.buffers", P, HARMFUL,                                                  \
      "The buffers are readable for offset + length elements; the validity bitmap is absent only " \
      "when there are no nulls, and it agrees with null_count and with the array.")                \
    X(ARROW_RELEASE, "arrow.release", E, HARMFUL,                                                  \
      "Each struct is released exactly once: a consumer moves it out of its capsule and calls "    \
      "release when done, the capsule releases only what nobody moved, and the producer's "        \
      "release marks the struct released.")                                                        \
    X(ARROW_STREAM, "arrow.stream", P, HARMFUL,                                                    \
      "__arrow_c_stream__ returns a capsule named arrow_array_stream holding a live "              \
      "ArrowArrayStream: get_schema and get_next succeed, get_next ends the stream with a "        \
      "released array, and the stream's release marks it released.")                              \
    X(ARROW_REQUESTED_SCHEMA, "arrow.requested_schema", P, NONCONFORMANT,                          \
      "A producer asked for its own type as requested_schema answers with an export (in that "     \
      "type, or in its default one); the spec has it raise only for a schema incompatible with "   \
      "its data.")                                                                                 \
    X(ARROW_DEVICE, "arrow.device", P, NONCONFORMANT,                                              \
      "An ArrowDeviceArray names a known device type and a device id >= 0 off the CPU; its "       \
      "reserved bytes are zero (non-zero ones are a warning).")                                    \
    X(ARROW_DEVICE_KEYWORDS, "arrow.device_keywords", P, NONCONFORMANT,                            \
      "__arrow_c_device_array__ raises NotImplementedError for a keyword it does not know, "       \
      "passed with a value other than None.")                                                      \
    X(ARROW_NULLS, "arrow.nulls", E, HARMFUL,                                                      \
      "Nulls survive the exchange: the export's validity bitmap marks exactly the array's null "   \
      "elements, and so does the import; a null read as a value is a wrong value.")

/* The refusal policy, one row per protocol (by its id), applied to both sides alike: a side
 * that refuses with the exception its column names gets `unsupported` with its reason; a
 * refusal with any other exception breaks exchange.refusal (nonconformant). NULL: the protocol
 * has no refusal convention for that side, so any exception is a refusal. Rules that demand a
 * refusal (a CPU stream, copy=False that needs a copy) are judged by those rules, and a library
 * that refuses its own export breaks exchange.round_trip whatever it raised. Where a spec only
 * advises an exception (DLPack's consumers), any exception is a refusal and another one than
 * advised is a note (dlpack.consumer_refusal): a wrong verdict costs more than a missed hint.
 * X(protocol id, producer's refusal, consumer's refusal, consumer's advised refusal, why) */
#define IC_REFUSAL_LIST(X)                                                                         \
    X("dlpack", "BufferError", NULL, "BufferError",                                                \
      "the Array API and the DLPack Python spec require BufferError of a producer that cannot "    \
      "export; a consumer is only advised to raise it")                                            \
    X("dlpack_capsule", "BufferError", NULL, "BufferError",                                        \
      "a to_dlpack function and a capsule importer follow the DLPack Python spec")                 \
    X("buffer", "BufferError", NULL, NULL,                                                         \
      "PEP 3118 asks an exporter that cannot meet a request to raise BufferError; it says "        \
      "nothing of consumers")                                                                      \
    X("array_interface", NULL, NULL, NULL,                                                         \
      "the array interface defines no refusal; AttributeError is how an object says it has none")  \
    X("array_struct", NULL, NULL, NULL, "as for the array interface")                              \
    X("array", NULL, NULL, NULL,                                                                   \
      "__array__ defines no refusal exception, except ValueError for copy=False "                  \
      "(array.no_copy_error)")                                                                     \
    X("cuda_array_interface", NULL, NULL, NULL, "the CUDA Array Interface defines no refusal")     \
    X("arrow", NULL, NULL, NULL,                                                                   \
      "the Arrow PyCapsule interface names no refusal exception: a producer that cannot honour "   \
      "requested_schema raises, of any type")                                                      \
    X("arrow_device", NULL, NULL, NULL,                                                            \
      "as for arrow; an unknown keyword is refused with NotImplementedError "                      \
      "(arrow.device_keywords)")                                                                   \
    X("arrow_stream", NULL, NULL, NULL, "as for arrow")

struct ic_refusal_policy {
    const char *protocol;
    const char *producer;         /* NULL: any exception */
    const char *consumer;         /* NULL: any exception */
    const char *consumer_advised; /* NULL: no advice; else another exception is a note */
    const char *why;
};

/* The rule families, in the order the rules document lists them: a rule id's first part
 * ("dlpack" of "dlpack.device_tuple"), the section's title, and the specification its rules
 * come from (a URL, or words). X(prefix, title, specification) */
#define IC_RULE_SECTION_LIST(X)                                                                    \
    X("exchange", "Any protocol: what an exchange must preserve",                                  \
      "interopcheck's own requirements of every exchange, drawn from all the specifications "      \
      "below")                                                                                     \
    X("python", "The Python C API", "https://docs.python.org/3/c-api/exceptions.html")             \
    X("dlpack", "DLPack", "https://dmlc.github.io/dlpack/latest/python_spec.html")                 \
    X("buffer", "The buffer protocol (PEP 3118)", "https://docs.python.org/3/c-api/buffer.html")   \
    X("array_interface", "NumPy's __array_interface__",                                            \
      "https://numpy.org/doc/stable/reference/arrays.interface.html")                              \
    X("array_struct", "NumPy's __array_struct__",                                                  \
      "https://numpy.org/doc/stable/reference/arrays.interface.html")                              \
    X("array", "__array__ (NumPy 2)",                                                              \
      "https://numpy.org/doc/stable/reference/generated/numpy.ndarray.__array__.html")             \
    X("cai", "The CUDA Array Interface (version 3)",                                               \
      "https://nvidia.github.io/numba-cuda/user/cuda_array_interface.html")                        \
    X("arrow", "The Arrow PyCapsule interface and C data interface",                               \
      "https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html")

/* The policy of a protocol id; NULL for an id without a row. */
const struct ic_refusal_policy *ic_refusal_policy(const char *protocol);
/* All rows, for the rules document. */
const struct ic_refusal_policy *ic_refusal_policies(int *ret_count);

enum ic_rule {
    IC_RULE_NONE = 0,
#define IC_RULE_ENUM(e, id, side, class, text) IC_RULE_##e,
    IC_RULE_LIST(IC_RULE_ENUM)
#undef IC_RULE_ENUM
        IC_RULE_COUNT
};

struct ic_rule_info {
    enum ic_rule rule;
    const char *id;    /* "dlpack.device_tuple" */
    enum ic_side side; /* IC_SIDE_NONE: the finder names it */
    enum ic_severity_class severity;
    const char *text;
};

/* The rule's row; NULL for IC_RULE_NONE or a value out of range. */
const struct ic_rule_info *ic_rule_info(enum ic_rule rule);
/* The rule's id; "" for IC_RULE_NONE. */
const char *ic_rule_id(enum ic_rule rule);
/* The id's first part: "dlpack", "buffer", "exchange", ...; "" for IC_RULE_NONE. */
const char *ic_rule_protocol(enum ic_rule rule);
/* The rule of an id. IC_ENOTFOUND for an id the table does not hold. */
int ic_rule_from_id(const char *id, enum ic_rule *ret);

const char *ic_side_name(enum ic_side side);
int ic_side_from_name(const char *name, enum ic_side *ret);
const char *ic_severity_name(enum ic_severity_class severity);
const char *ic_severity_summary(enum ic_severity_class severity);
int ic_severity_from_name(const char *name, enum ic_severity_class *ret);

/* The documentation anchor of a rule in docs/rules.md: its id with '.' as '-'. */
void ic_rule_anchor(enum ic_rule rule, char *buf, int size);

#endif
