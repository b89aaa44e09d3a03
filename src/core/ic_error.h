/*
 * ic_error: the status codes interopcheck's own functions return.
 *
 * Contract
 * - Every function that can fail returns int: 0 on success, a negative IC_E* code on failure.
 *   Output parameters are written only on success unless the function's comment says otherwise.
 * - These codes describe failures of the tool itself or of its environment (no memory, a
 *   pipe closed, a probe file that cannot be read). A library that breaks a protocol rule is
 *   not an error of the tool: that is a conformance outcome (ic_outcome.h), carried as data.
 * - The table below is the single source of codes, names and messages. Numbers are never
 *   reused; a retired code stays in the table with an _OBSOLETE suffix.
 */
#ifndef IC_ERROR_H
#define IC_ERROR_H

#define IC_ERROR_LIST(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(ENOMEM, -1, "out of memory")                                                                 \
    X(EINVAL, -2, "invalid argument")                                                              \
    X(EIO, -3, "input/output error")                                                               \
    X(EPYTHON, -4, "the embedded Python interpreter failed")                                       \
    X(EPROBE, -5, "a probe failed")                                                                \
    X(EPROTO, -6, "worker protocol violation")                                                     \
    X(ENOTFOUND, -7, "not found")                                                                  \
    X(ERANGE, -8, "value out of range")                                                            \
    X(EUSAGE, -9, "invalid command-line usage")                                                    \
    X(EENV, -10, "the environment cannot run interopcheck")                                        \
    X(ECHILD, -11, "a worker process failed")                                                      \
    X(EUNSUPPORTED, -12, "not supported")                                                          \
    X(EINTR, -13, "interrupted")                                                                   \
    X(EAGAIN, -14, "nothing to read yet")                                                          \
    X(EFAULT, -15, "memory that cannot be read")

enum ic_status {
#define IC_ERROR_ENUM(name, value, message) IC_##name = (value),
    IC_ERROR_LIST(IC_ERROR_ENUM)
#undef IC_ERROR_ENUM
};

/* "ENOMEM" style name of a code; "E?" for a code not in the table. Never NULL. */
const char *ic_strerror_name(int code);

/* Human-readable message of a code. Never NULL. */
const char *ic_strerror(int code);

#endif
