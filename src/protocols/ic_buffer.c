#include "ic_buffer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "ic_error.h"
#include "ic_export.h"
#include "ic_guard.h"
#include "ic_proxy.h"
#include "ic_python.h"

/* ---------------------------------------------------------------------------------------
 * Format strings
 */

enum ic_format_class {
    IC_FMT_OTHER,
    IC_FMT_BOOL,
    IC_FMT_SIGNED,
    IC_FMT_UNSIGNED,
    IC_FMT_FLOAT,
    IC_FMT_COMPLEX
};

struct ic_format_code {
    const char *code;
    enum ic_format_class value_class;
    int native_size;   /* with '@' / '^' / no prefix */
    int standard_size; /* with '=' '<' '>' '!'; 0: not allowed there */
};

static const struct ic_format_code ic_format_codes[] = {
    {"?", IC_FMT_BOOL, (int)sizeof(_Bool), 1},
    {"c", IC_FMT_OTHER, 1, 1},
    {"b", IC_FMT_SIGNED, 1, 1},
    {"B", IC_FMT_UNSIGNED, 1, 1},
    {"h", IC_FMT_SIGNED, (int)sizeof(short), 2},
    {"H", IC_FMT_UNSIGNED, (int)sizeof(short), 2},
    {"i", IC_FMT_SIGNED, (int)sizeof(int), 4},
    {"I", IC_FMT_UNSIGNED, (int)sizeof(int), 4},
    {"l", IC_FMT_SIGNED, (int)sizeof(long), 4},
    {"L", IC_FMT_UNSIGNED, (int)sizeof(long), 4},
    {"q", IC_FMT_SIGNED, (int)sizeof(long long), 8},
    {"Q", IC_FMT_UNSIGNED, (int)sizeof(long long), 8},
    {"n", IC_FMT_SIGNED, (int)sizeof(Py_ssize_t), 0},
    {"N", IC_FMT_UNSIGNED, (int)sizeof(size_t), 0},
    {"e", IC_FMT_FLOAT, 2, 2},
    {"f", IC_FMT_FLOAT, 4, 4},
    {"d", IC_FMT_FLOAT, 8, 8},
    {"g", IC_FMT_OTHER, (int)sizeof(long double), 0},
    {"Zf", IC_FMT_COMPLEX, 8, 8},
    {"Zd", IC_FMT_COMPLEX, 16, 16},
    {"Zg", IC_FMT_OTHER, 2 * (int)sizeof(long double), 0},
    {"P", IC_FMT_OTHER, (int)sizeof(void *), 0},
    {"O", IC_FMT_OTHER, (int)sizeof(void *), 0},
    {"u", IC_FMT_OTHER, 2, 2}, /* UCS-2 */
    {"w", IC_FMT_OTHER, 4, 4}, /* UCS-4 */
    {"x", IC_FMT_OTHER, 1, 1},
    {"s", IC_FMT_OTHER, 1, 1},
    {"p", IC_FMT_OTHER, 1, 1},
};

static enum ic_dtype ic_format_dtype(enum ic_format_class value_class, int64_t itemsize)
{
    static const enum ic_dtype signed_types[] = {IC_DTYPE_INT8, IC_DTYPE_INT16, IC_DTYPE_INT32,
                                                 IC_DTYPE_INT64};
    static const enum ic_dtype unsigned_types[] = {IC_DTYPE_UINT8, IC_DTYPE_UINT16, IC_DTYPE_UINT32,
                                                   IC_DTYPE_UINT64};
    int index = itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : itemsize == 8 ? 3 : -1;
    switch (value_class) {
    case IC_FMT_BOOL:
        return itemsize == 1 ? IC_DTYPE_BOOL : IC_DTYPE_INVALID;
    case IC_FMT_SIGNED:
        return index >= 0 ? signed_types[index] : IC_DTYPE_INVALID;
    case IC_FMT_UNSIGNED:
        return index >= 0 ? unsigned_types[index] : IC_DTYPE_INVALID;
    case IC_FMT_FLOAT:
        return itemsize == 2   ? IC_DTYPE_FLOAT16
               : itemsize == 4 ? IC_DTYPE_FLOAT32
               : itemsize == 8 ? IC_DTYPE_FLOAT64
                               : IC_DTYPE_INVALID;
    case IC_FMT_COMPLEX:
        return itemsize == 8    ? IC_DTYPE_COMPLEX64
               : itemsize == 16 ? IC_DTYPE_COMPLEX128
                                : IC_DTYPE_INVALID;
    default:
        return IC_DTYPE_INVALID;
    }
}

int ic_buffer_format_parse(const char *format, struct ic_buffer_format *ret)
{
    struct ic_buffer_format parsed;
    const char *p = format;
    bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

    if (!format || !ret)
        return IC_EINVAL;
    memset(&parsed, 0, sizeof(parsed));
    parsed.byteorder = '@';
    if (*p && strchr("@=<>!^", *p))
        parsed.byteorder = *p++;
    parsed.native_size = parsed.byteorder == '@' || parsed.byteorder == '^';
    switch (parsed.byteorder) {
    case '<':
        parsed.native_order = little;
        break;
    case '>':
    case '!':
        parsed.native_order = !little;
        break;
    default:
        parsed.native_order = true;
        break;
    }
    parsed.count = 1;
    if (isdigit((unsigned char)*p)) {
        int digits = 0;
        parsed.count = 0;
        while (isdigit((unsigned char)*p)) {
            if (++digits > 9)
                return IC_EINVAL; /* a billion repeats is no array element */
            parsed.count = parsed.count * 10 + (*p++ - '0');
        }
    }
    if (*p == '\0')
        return IC_EINVAL;
    size_t length = *p == 'Z' ? 2 : 1;
    const struct ic_format_code *code = NULL;
    for (size_t i = 0; i < sizeof(ic_format_codes) / sizeof(ic_format_codes[0]); i++) {
        if (strlen(ic_format_codes[i].code) == length &&
            strncmp(ic_format_codes[i].code, p, length) == 0)
            code = &ic_format_codes[i];
    }
    if (!code)
        return strchr("T(:&X{}t", *p) ? IC_EUNSUPPORTED : IC_EINVAL;
    p += length;
    if (*p != '\0')
        return IC_EUNSUPPORTED; /* more items follow */
    int size = parsed.native_size ? code->native_size : code->standard_size;
    if (size == 0)
        return IC_EINVAL; /* 'n', 'N', 'P', 'g' exist with native sizes only */
    memcpy(parsed.code, code->code, length);
    parsed.itemsize = parsed.count * size;
    parsed.dtype = parsed.count == 1 && (parsed.native_order || size == 1)
                       ? ic_format_dtype(code->value_class, size)
                       : IC_DTYPE_INVALID;
    *ret = parsed;
    return 0;
}

/* A PyBUF_ request constant and its name. */
struct ic_buffer_flag_name {
    int flags;
    const char *name;
};

void ic_buffer_flags_name(int flags, char *buf, size_t size)
{
    static const struct ic_buffer_flag_name whole[] = {
        {PyBUF_FULL, "PyBUF_FULL"},       {PyBUF_FULL_RO, "PyBUF_FULL_RO"},
        {PyBUF_RECORDS, "PyBUF_RECORDS"}, {PyBUF_RECORDS_RO, "PyBUF_RECORDS_RO"},
        {PyBUF_STRIDED, "PyBUF_STRIDED"}, {PyBUF_STRIDED_RO, "PyBUF_STRIDED_RO"},
        {PyBUF_CONTIG, "PyBUF_CONTIG"},   {PyBUF_CONTIG_RO, "PyBUF_CONTIG_RO"},
        {PyBUF_SIMPLE, "PyBUF_SIMPLE"},   {PyBUF_WRITABLE, "PyBUF_WRITABLE"},
        {PyBUF_FORMAT, "PyBUF_FORMAT"},
    };
    /* The shape part of a request, widest first. */
    static const struct ic_buffer_flag_name shapes[] = {
        {PyBUF_INDIRECT, "PyBUF_INDIRECT"},         {PyBUF_C_CONTIGUOUS, "PyBUF_C_CONTIGUOUS"},
        {PyBUF_F_CONTIGUOUS, "PyBUF_F_CONTIGUOUS"}, {PyBUF_ANY_CONTIGUOUS, "PyBUF_ANY_CONTIGUOUS"},
        {PyBUF_STRIDES, "PyBUF_STRIDES"},           {PyBUF_ND, "PyBUF_ND"},
    };
    for (size_t i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
        if (flags == whole[i].flags) {
            snprintf(buf, size, "%s", whole[i].name);
            return;
        }
    }
    int rest = flags;
    const char *shape = NULL;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && !shape; i++) {
        if ((flags & shapes[i].flags) == shapes[i].flags) {
            shape = shapes[i].name;
            rest &= ~shapes[i].flags;
        }
    }
    bool writable = rest & PyBUF_WRITABLE, format = rest & PyBUF_FORMAT;
    rest &= ~(PyBUF_WRITABLE | PyBUF_FORMAT);
    char other[24] = "";
    if (rest)
        snprintf(other, sizeof(other), "0x%x", (unsigned)rest);
    snprintf(buf, size, "%s%s%s%s%s%s%s", shape ? shape : "", writable ? (shape ? " | " : "") : "",
             writable ? "PyBUF_WRITABLE" : "", format ? (shape || writable ? " | " : "") : "",
             format ? "PyBUF_FORMAT" : "", rest ? (shape || writable || format ? " | " : "") : "",
             other);
}

/* ---------------------------------------------------------------------------------------
 * Validation (rules 5.1.1-7)
 */

/* The exporter's arrays and strings, copied through the guard: nothing of the exporter's is
 * read directly after this. */
struct ic_buffer_copy {
    char format[1024]; /* "" when format is NULL or cannot be read */
    bool format_read;  /* format is non-NULL and was read whole */
    Py_ssize_t shape[PyBUF_MAX_NDIM];
    Py_ssize_t strides[PyBUF_MAX_NDIM];
    Py_ssize_t suboffsets[PyBUF_MAX_NDIM];
};

/* Copies one of the exporter's arrays of ndim entries. False, with the finding, when it
 * cannot be read. */
static bool ic_buffer_copy_array(const Py_ssize_t *array, int ndim, const char *what,
                                 Py_ssize_t *out, struct ic_diag *diag, bool *ret_unreadable)
{
    return ic_export_copy_entries(out, array, ndim, sizeof(Py_ssize_t), what, IC_RULE_BUFFER_FIELDS,
                                  diag, ret_unreadable);
}

/* Reads the format, shape, strides and suboffsets the exporter filled in. False when one of
 * them cannot be read (the finding is written). */
static bool ic_buffer_copy_fields(const Py_buffer *buffer, int ndim, struct ic_buffer_copy *copy,
                                  struct ic_diag *diag, bool *ret_unreadable)
{
    copy->format[0] = '\0';
    copy->format_read = false;
    if (buffer->format) {
        int rc = ic_guard_string((uintptr_t)buffer->format, copy->format, sizeof(copy->format));
        if (rc == IC_EFAULT) {
            ic_diag_error(diag, IC_RULE_BUFFER_FIELDS,
                          "format at %p cannot be read (\"%.40s\" before the memory ends)",
                          (const void *)buffer->format, copy->format);
            *ret_unreadable = true;
            return false;
        }
        if (rc == IC_ERANGE)
            ic_diag_warn(diag, IC_RULE_BUFFER_FORMAT,
                         "format \"%.40s...\" is longer than %zu characters: read that far only",
                         copy->format, sizeof(copy->format) - 1);
        else if (rc < 0)
            ic_diag_warn(diag, IC_RULE_BUFFER_FIELDS, "format at %p could not be checked: %s",
                         (const void *)buffer->format, ic_strerror(rc));
        copy->format_read = rc == 0;
    }
    if (ndim <= 0)
        return true;
    return (!buffer->shape || ic_buffer_copy_array(buffer->shape, ndim, "shape", copy->shape, diag,
                                                   ret_unreadable)) &&
           (!buffer->strides || ic_buffer_copy_array(buffer->strides, ndim, "strides",
                                                     copy->strides, diag, ret_unreadable)) &&
           (!buffer->suboffsets || ic_buffer_copy_array(buffer->suboffsets, ndim, "suboffsets",
                                                        copy->suboffsets, diag, ret_unreadable));
}

/* What the steps of ic_buffer_check_guarded share: the exporter's buffer and the request it
 * answered, the copies read through the guard, and the view built from them step by step. */
struct ic_buffer_check {
    const Py_buffer *buffer;
    int flags;
    char request[64]; /* the flags, spelled for the findings */
    struct ic_diag *diag;
    struct ic_buffer_copy *copy;
    bool *ret_unreadable;
    struct ic_view view;
    struct ic_buffer_format format; /* read only when have_format */
    bool have_format;
    bool describable; /* false once a finding leaves no strided view to build */
};

/* 5.1.1: obj, ndim, and the exporter's arrays and format read through the guard. False when
 * the check stops here (the finding is written). */
static bool ic_buffer_check_obj_ndim(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    int ndim = buffer->ndim;

    if (!buffer->obj)
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS,
                      "obj is NULL after a successful get: the exporter must set it to a new "
                      "reference to itself");
    if (ndim < 0 || ndim > PyBUF_MAX_NDIM) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "ndim %d: it must be between 0 and %d",
                      ndim, PyBUF_MAX_NDIM);
        return false;
    }
    if (!ic_buffer_copy_fields(buffer, ndim, check->copy, check->diag, check->ret_unreadable))
        return false;
    if (ndim == 0 && (buffer->shape || buffer->strides || buffer->suboffsets)) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_SCALAR,
                      "ndim 0 with%s%s%s set: a scalar has no shape, strides or suboffsets",
                      buffer->shape ? " shape" : "", buffer->strides ? " strides" : "",
                      buffer->suboffsets ? " suboffsets" : "");
        check->describable = false;
    }
    return true;
}

/* 5.1.2, the fields that are always filled */
static void ic_buffer_check_itemsize_len(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;

    if (buffer->itemsize <= 0) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "itemsize %zd: it must be > 0",
                      buffer->itemsize);
        check->describable = false;
    } else if (buffer->itemsize > INT32_MAX) {
        /* as the array interface's typestr: no element type is 2 GiB, and a view's itemsize
         * is an int (found by fuzz_buffer_check: it wrapped negative) */
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "itemsize %zd is too large",
                      buffer->itemsize);
        check->describable = false;
    }
    if (buffer->len < 0) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "len %zd: it must be >= 0", buffer->len);
        check->describable = false;
    }
}

/* 5.1.3, format filled exactly when PyBUF_FORMAT was asked for */
static void ic_buffer_check_format_request(const struct ic_buffer_check *check)
{
    bool want_format = check->flags & PyBUF_FORMAT;

    if (want_format && !check->buffer->format)
        ic_diag_error(check->diag, IC_RULE_BUFFER_FORMAT_REQUEST,
                      "%s asked for the format, but format is NULL", check->request);
    else if (!want_format && check->buffer->format)
        ic_diag_error(check->diag, IC_RULE_BUFFER_FORMAT_REQUEST,
                      "format \"%.40s\" is set although %s does not ask for it: it must be NULL",
                      check->copy->format, check->request);
}

/* 5.1.3, the format as read: a struct-module format whose items are itemsize bytes. A format
 * this parser does not take is sized by the struct module instead. */
static void ic_buffer_check_format(struct ic_buffer_check *check)
{
    const char *text_format = check->copy->format;
    Py_ssize_t itemsize = check->buffer->itemsize;

    if (!check->copy->format_read)
        return;
    int rc = ic_buffer_format_parse(text_format, &check->format);
    if (rc == 0) {
        check->have_format = true;
        if (check->format.itemsize != itemsize)
            ic_diag_error(check->diag, IC_RULE_BUFFER_FORMAT,
                          "format \"%.40s\" has %lld-byte items but itemsize is %zd", text_format,
                          (long long)check->format.itemsize, itemsize);
    } else if (rc == IC_EUNSUPPORTED) {
        Py_ssize_t size = PyBuffer_SizeFromFormat(text_format);
        if (size < 0) {
            PyErr_Clear();
            ic_diag_warn(check->diag, IC_RULE_BUFFER_FORMAT,
                         "format \"%.40s\" cannot be sized by the struct module: its "
                         "itemsize is unchecked",
                         text_format);
        } else if (size != itemsize) {
            ic_diag_error(check->diag, IC_RULE_BUFFER_FORMAT,
                          "format \"%.40s\" has %zd-byte items but itemsize is %zd", text_format,
                          size, itemsize);
        }
    } else {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FORMAT,
                      "format \"%.40s\" is no struct / PEP 3118 format", text_format);
    }
}

/* 5.1.4, shape and strides filled exactly when the request asks for them */
static void ic_buffer_check_shape_strides_request(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    bool want_nd = (check->flags & PyBUF_ND) == PyBUF_ND;
    bool want_strides = (check->flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    int ndim = buffer->ndim;

    if (want_nd && ndim > 0 && !buffer->shape) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "%s asked for the shape, but shape is NULL", check->request);
        check->describable = false;
    } else if (!want_nd && buffer->shape) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "shape is set although %s does not ask for it: it must be NULL",
                      check->request);
    }
    if (want_strides && ndim > 0 && !buffer->strides)
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "%s asked for strides, but strides is NULL", check->request);
    else if (!want_strides && buffer->strides)
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "strides are set although %s does not ask for them: they must be NULL "
                      "(the buffer is then C-contiguous)",
                      check->request);
    if (buffer->strides && ndim > 0 && !buffer->shape) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "strides without shape cannot be read");
        check->describable = false;
    }
}

/* 5.1.4, suboffsets only for PyBUF_INDIRECT */
static void ic_buffer_check_suboffsets(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    bool want_indirect = (check->flags & PyBUF_INDIRECT) == PyBUF_INDIRECT;

    if (buffer->suboffsets && !want_indirect) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                      "suboffsets are set although %s does not ask for them: they must be NULL",
                      check->request);
        check->describable = false;
    } else if (buffer->suboffsets && buffer->ndim > 0) {
        bool any_used = false;
        for (int i = 0; i < buffer->ndim; i++)
            any_used = any_used || check->copy->suboffsets[i] >= 0;
        if (!any_used)
            ic_diag_warn(check->diag, IC_RULE_BUFFER_SHAPE_STRIDES,
                         "suboffsets are all negative: the exporter should set them to NULL");
        else
            check->describable = false; /* indirect (PIL-style) data has no strided view */
    }
}

/* 5.1.2, the exporter's shape against len. False when the check stops here. */
static bool ic_buffer_view_given_shape(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    struct ic_view *view = &check->view;
    int64_t numel = 0, nbytes = 0;
    char text[96];

    view->ndim = buffer->ndim;
    for (int i = 0; i < buffer->ndim; i++) {
        view->shape[i] = check->copy->shape[i];
        if (check->copy->shape[i] < 0) {
            ic_diag_error(check->diag, IC_RULE_BUFFER_SIZE,
                          "shape[%d] is %zd: extents must be >= 0", i, check->copy->shape[i]);
            return false;
        }
    }
    if (ic_view_numel(view, &numel) < 0 ||
        __builtin_mul_overflow(numel, (int64_t)buffer->itemsize, &nbytes)) {
        ic_view_format_shape(view, text, sizeof(text));
        ic_diag_error(check->diag, IC_RULE_BUFFER_SIZE, "the byte size of shape %s overflows int64",
                      text);
        return false;
    }
    if (nbytes != (int64_t)buffer->len) {
        ic_view_format_shape(view, text, sizeof(text));
        ic_diag_error(check->diag, IC_RULE_BUFFER_SIZE,
                      "len is %zd but product(shape %s) x itemsize %zd is %lld", buffer->len, text,
                      buffer->itemsize, (long long)nbytes);
        check->describable = false;
    }
    return true;
}

/* 5.1.2, shape against len: the view's extents, from the shape when the exporter gave one,
 * else from len. False when the check stops here. */
static bool ic_buffer_view_shape(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    struct ic_view *view = &check->view;

    view->itemsize = (int)buffer->itemsize;
    if (buffer->shape && buffer->ndim > 0)
        return ic_buffer_view_given_shape(check);
    if (buffer->ndim == 0 && buffer->len == buffer->itemsize) {
        view->ndim = 0;
        return true;
    }
    if (buffer->ndim == 0)
        ic_diag_warn(check->diag, IC_RULE_BUFFER_SCALAR,
                     "ndim 0 for %s although len %zd holds %zd-byte items: CPython's own "
                     "exporters report ndim 1 when the shape is not requested",
                     check->request, buffer->len, buffer->itemsize);
    view->ndim = 1;
    if (buffer->len % buffer->itemsize != 0)
        view->itemsize = 1; /* not whole items: plain bytes */
    view->shape[0] = buffer->len / view->itemsize;
    return true;
}

/* 5.1.5 */
static void ic_buffer_check_writable(const struct ic_buffer_check *check)
{
    if ((check->flags & PyBUF_WRITABLE) && check->buffer->readonly)
        ic_diag_error(check->diag, IC_RULE_BUFFER_WRITABLE,
                      "%s asked for a writable buffer, but readonly is %d: the exporter must "
                      "raise BufferError instead",
                      check->request, check->buffer->readonly);
}

/* Strides (5.1.7): the exporter's, else C-contiguous ones, and the span they address. False
 * when the check stops here. */
static bool ic_buffer_view_strides(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;
    struct ic_view *view = &check->view;

    if (buffer->strides && view->ndim > 0) {
        for (int i = 0; i < view->ndim; i++) {
            view->strides[i] = check->copy->strides[i];
            if (check->copy->strides[i] % buffer->itemsize != 0)
                ic_diag_warn(check->diag, IC_RULE_BUFFER_STRIDES,
                             "strides[%d] = %zd is not a multiple of itemsize %zd: many "
                             "consumers cannot address such elements",
                             i, check->copy->strides[i], buffer->itemsize);
        }
    }
    return ic_export_strides_fit(view, buffer->strides && view->ndim > 0, -1,
                                 IC_RULE_BUFFER_STRIDES, check->diag);
}

/* Contiguity (5.1.6) */
static void ic_buffer_check_contiguity(const struct ic_buffer_check *check)
{
    int flags = check->flags;
    bool want_strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    bool c_contiguous = ic_view_is_c_contiguous(&check->view);
    bool f_contiguous = ic_view_is_f_contiguous(&check->view);
    char text[96];

    ic_view_format_strides(&check->view, text, sizeof(text));
    /* The first clause names the fault, the same for every request that meets it. */
    if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c_contiguous)
        ic_diag_error(check->diag, IC_RULE_BUFFER_CONTIGUOUS,
                      "the exporter ignored the contiguity the request asks for; %s got strides "
                      "%s, which are not C-contiguous",
                      check->request, text);
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f_contiguous)
        ic_diag_error(check->diag, IC_RULE_BUFFER_CONTIGUOUS,
                      "the exporter ignored the contiguity the request asks for; %s got strides "
                      "%s, which are not Fortran-contiguous",
                      check->request, text);
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c_contiguous && !f_contiguous)
        ic_diag_error(check->diag, IC_RULE_BUFFER_CONTIGUOUS,
                      "the exporter ignored the contiguity the request asks for; %s got strides "
                      "%s, which are not contiguous",
                      check->request, text);
    /* A request without strides reads the buffer as C-contiguous bytes, whatever the
     * exporter fills in beyond what was asked. */
    if (!want_strides && check->buffer->strides && !c_contiguous)
        ic_diag_error(check->diag, IC_RULE_BUFFER_CONTIGUOUS,
                      "the exporter ignored the contiguity the request asks for; %s asks for no "
                      "strides, so the buffer must be C-contiguous, but the exporter's strides %s "
                      "are not",
                      check->request, text);
}

/* buf (IC_RULE_BUFFER_FIELDS): non-NULL for any bytes, and every byte the view addresses
 * readable. False when there is no view to hand back. */
static bool ic_buffer_check_data(struct ic_buffer_check *check)
{
    const Py_buffer *buffer = check->buffer;

    if (!buffer->buf && buffer->len > 0) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "buf is NULL for %zd bytes", buffer->len);
        return false;
    }
    if (!check->describable)
        return false;
    check->view.data = (uintptr_t)buffer->buf;
    /* len bytes at buf, as the view addresses them: all there before anyone reads one. */
    char why[200];
    int rc = ic_view_check_readable(&check->view, why, sizeof(why));
    if (rc == IC_EFAULT) {
        ic_diag_error(check->diag, IC_RULE_BUFFER_FIELDS, "buf %p: %s", buffer->buf, why);
        *check->ret_unreadable = true;
        return false;
    }
    if (rc < 0)
        ic_diag_warn(check->diag, IC_RULE_BUFFER_FIELDS, "%s", why);
    return true;
}

/* The element type the format names, when the request asked for the format and the format's
 * items are the view's (not, say, the plain bytes of a len that holds no whole items). */
static enum ic_dtype ic_buffer_view_dtype(const struct ic_buffer_check *check)
{
    bool want_format = check->flags & PyBUF_FORMAT;

    if (check->have_format && want_format && check->view.itemsize == (int)check->format.itemsize)
        return check->format.dtype;
    return IC_DTYPE_INVALID;
}

/* ic_buffer_check, also saying whether the buffer points at memory that cannot be read, and
 * handing back the format as read (for the export's description). */
static int ic_buffer_check_guarded(const Py_buffer *buffer, int flags, struct ic_diag *diag,
                                   struct ic_view *ret_view, bool *ret_have_view,
                                   bool *ret_unreadable, struct ic_buffer_copy *copy)
{
    struct ic_buffer_check check;

    *ret_have_view = false;
    memset(&check, 0, sizeof(check));
    check.buffer = buffer;
    check.flags = flags;
    ic_buffer_flags_name(flags, check.request, sizeof(check.request));
    check.diag = diag;
    check.copy = copy;
    check.ret_unreadable = ret_unreadable;
    check.view.device_type = IC_DEVICE_CPU;
    check.view.readonly_known = true;
    check.describable = true;

    if (!ic_buffer_check_obj_ndim(&check))
        return 0;
    ic_buffer_check_itemsize_len(&check);
    ic_buffer_check_format_request(&check);
    ic_buffer_check_format(&check);
    ic_buffer_check_shape_strides_request(&check);
    ic_buffer_check_suboffsets(&check);
    if (!check.describable)
        return 0;
    if (!ic_buffer_view_shape(&check))
        return 0;
    ic_buffer_check_writable(&check);
    if (!ic_buffer_view_strides(&check))
        return 0;
    ic_buffer_check_contiguity(&check);
    if (!ic_buffer_check_data(&check))
        return 0;
    check.view.dtype = ic_buffer_view_dtype(&check);
    check.view.readonly = buffer->readonly != 0;
    *ret_view = check.view;
    *ret_have_view = true;
    return 0;
}

int ic_buffer_check(const Py_buffer *buffer, int flags, struct ic_diag *diag,
                    struct ic_view *ret_view, bool *ret_have_view)
{
    struct ic_buffer_copy copy;
    bool unreadable = false;
    if (!buffer || !diag || !ret_view || !ret_have_view)
        return IC_EINVAL;
    return ic_buffer_check_guarded(buffer, flags, diag, ret_view, ret_have_view, &unreadable,
                                   &copy);
}

/* ---------------------------------------------------------------------------------------
 * Ops
 */

/* Checks what a failed get left behind (rule 5.1.8). Afterwards an exception is pending (a
 * SystemError when the exporter set none) and `exc` describes it. */
static void ic_buffer_check_failure(const Py_buffer *inner, struct ic_diag *diag,
                                    struct ic_py_exc *exc)
{
    if (!PyErr_Occurred()) {
        ic_diag_error(diag, IC_RULE_BUFFER_FAILED_GET,
                      "the exporter failed without setting an exception: it must raise "
                      "BufferError");
        PyErr_SetString(PyExc_SystemError,
                        "buffer exporter returned -1 without setting an exception");
        ic_py_peek(exc);
    } else {
        ic_py_peek(exc);
        if (!exc->buffer_error)
            ic_diag_warn(diag, IC_RULE_BUFFER_FAILED_GET,
                         "the exporter refused with %s, not BufferError (%s)", exc->type,
                         exc->message);
    }
    if (inner->obj)
        ic_diag_error(diag, IC_RULE_BUFFER_FAILED_GET,
                      "the exporter failed but left view->obj non-NULL: it must be NULL");
}

static void ic_buffer_describe(const Py_buffer *buffer, const struct ic_buffer_copy *copy,
                               char *buf, size_t size)
{
    snprintf(buf, size, "buffer format=%.16s itemsize=%zd ndim=%d readonly=%d",
             !buffer->format     ? "(none)"
             : copy->format_read ? copy->format
                                 : "(unreadable)",
             buffer->itemsize, buffer->ndim, buffer->readonly);
}

/* Validates a buffer the exporter gave into the record. True when it points at memory that
 * cannot be read. */
static bool ic_buffer_record(const Py_buffer *buffer, int flags, struct ic_export_record *rec)
{
    struct ic_export_reading r;
    struct ic_buffer_copy copy;
    bool unreadable = false;

    ic_export_reading_init(&r);
    memset(&copy, 0, sizeof(copy));
    ic_buffer_check_guarded(buffer, flags, &r.diag, &r.view, &r.have_view, &unreadable, &copy);
    ic_buffer_describe(buffer, &copy, r.detail, sizeof(r.detail));
    ic_export_keep(rec, &r);
    rec->zero_copy_known = true; /* a buffer is the exporter's memory */
    return unreadable;
}

static int ic_buffer_proxy_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    struct ic_export_record *rec = proxy->rec;
    Py_buffer *inner = PyMem_Calloc(1, sizeof(*inner));

    if (!inner) {
        PyErr_NoMemory();
        view->obj = NULL;
        return -1;
    }
    if (rec) {
        rec->export_calls++;
        ic_buffer_flags_name(flags, rec->request, sizeof(rec->request));
        if (PyErr_Occurred() && !rec->consumer_misuse) {
            struct ic_py_exc pending;
            ic_py_peek(&pending);
            rec->consumer_misuse = true;
            snprintf(rec->consumer_misuse_text, sizeof(rec->consumer_misuse_text),
                     "requested %s while a %s from its earlier request was still set", rec->request,
                     pending.type);
        }
    }
    if (PyObject_GetBuffer(proxy->target, inner, flags) < 0) {
        struct ic_diag diag;
        struct ic_py_exc exc;
        ic_diag_init(&diag);
        ic_buffer_check_failure(inner, &diag, &exc);
        if (rec) {
            ic_export_producer_raised(rec, &exc);
            ic_export_diag_merge(&rec->diag, &diag);
        }
        PyMem_Free(inner); /* a non-NULL inner->obj is the exporter's bug, not ours to drop */
        view->obj = NULL;
        return -1; /* the producer's exception goes on to the consumer */
    }
    bool unreadable = false;
    if (rec) {
        unreadable = ic_buffer_record(inner, flags, rec);
        rec->acquired++;
    }
    proxy->acquired++;
    if (unreadable) {
        /* Any consumer would read memory that is not there: the get is released at once and
         * the consumer gets the refusal the exporter should have given. */
        PyBuffer_Release(inner);
        PyMem_Free(inner);
        proxy->released++;
        rec->released++;
        PyErr_SetString(PyExc_BufferError, "interopcheck withheld this buffer from the consumer: "
                                           "it points at memory that cannot be read");
        view->obj = NULL;
        return -1;
    }
    *view = *inner;
    view->obj = Py_NewRef(self);
    view->internal = inner;
    return 0;
}

static void ic_buffer_proxy_releasebuffer(PyObject *self, Py_buffer *view)
{
    struct ic_proxy *proxy = (struct ic_proxy *)self;
    Py_buffer *inner = view->internal;

    if (!inner)
        return;
    PyBuffer_Release(inner);
    PyMem_Free(inner);
    view->internal = NULL;
    proxy->released++;
    if (proxy->rec)
        proxy->rec->released++;
}

static PyType_Slot ic_buffer_proxy_slots[] = {
    {Py_bf_getbuffer, (void *)ic_buffer_proxy_getbuffer},
    {Py_bf_releasebuffer, (void *)ic_buffer_proxy_releasebuffer},
    {0, NULL},
};

IC_PROXY_KIND(ic_buffer, "interopcheck.BufferProxy", "Offers the buffer protocol of a producer.",
              ic_buffer_proxy_slots)

static void ic_buffer_finish(PyObject *obj, struct ic_export_record *rec)
{
    if (!rec)
        return;
    if (ic_buffer_is_proxy(obj)) {
        /* The proxy's counters also saw gets and releases after the record was detached. */
        struct ic_proxy *proxy = (struct ic_proxy *)obj;
        rec->acquired = proxy->acquired;
        rec->released = proxy->released;
    }
    if (rec->acquired != rec->released)
        ic_diag_error(&rec->lifetime, IC_RULE_BUFFER_RELEASE,
                      "%d successful gets but %d releases: every get must be released exactly "
                      "once",
                      rec->acquired, rec->released);
    rec->lifetime_checked = true;
}

struct ic_buffer_import {
    Py_buffer buffer;
    struct ic_export_record *rec; /* outlives the handle (ic_protocol.h) */
};

static void ic_buffer_import_release(void *context)
{
    struct ic_buffer_import *import = context;
    PyBuffer_Release(&import->buffer);
    import->rec->released++;
    PyMem_Free(import);
}

static int ic_buffer_reference_consume(PyObject *export_obj, struct ic_export_record *rec,
                                       PyObject **ret_handle)
{
    struct ic_buffer_import *import = NULL;
    int flags = PyBUF_RECORDS_RO;

    *ret_handle = NULL;
    if (rec->variant == IC_VARIANT_BUF_CONTIG)
        flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    else if (rec->variant == IC_VARIANT_BUF_WRITABLE)
        flags = PyBUF_RECORDS;
    import = PyMem_Calloc(1, sizeof(*import));
    if (!import)
        return IC_ENOMEM;
    import->rec = rec;
    rec->export_calls++;
    ic_buffer_flags_name(flags, rec->request, sizeof(rec->request));
    if (PyObject_GetBuffer(export_obj, &import->buffer, flags) < 0) {
        struct ic_diag diag;
        struct ic_py_exc exc;
        ic_diag_init(&diag);
        ic_buffer_check_failure(&import->buffer, &diag, &exc);
        ic_py_fetch(&exc);
        ic_export_producer_raised(rec, &exc);
        ic_export_diag_merge(&rec->diag, &diag);
        PyMem_Free(import);
        return 0; /* a refusal; whether one was required is the driver's call */
    }
    ic_buffer_record(&import->buffer, flags, rec);
    rec->acquired++;
    *ret_handle = ic_handle_new(import, ic_buffer_import_release);
    return *ret_handle ? 0 : IC_ENOMEM;
}

/* The reference consumer's contiguous and writable requests must be refused by an exporter
 * whose array is not C-contiguous, or is read-only (buffer.contiguous, buffer.writable). */
static void ic_buffer_preset_refusal(struct ic_export_record *rec, const struct ic_view *produced,
                                     bool readonly_known)
{
    if (rec->variant == IC_VARIANT_BUF_CONTIG) {
        rec->refusal_required = !ic_view_is_c_contiguous(produced);
        rec->refusal_rule = IC_RULE_BUFFER_CONTIGUOUS;
    } else if (rec->variant == IC_VARIANT_BUF_WRITABLE) {
        rec->refusal_required = readonly_known && produced->readonly;
        rec->refusal_rule = IC_RULE_BUFFER_WRITABLE;
    }
}

const struct ic_protocol_ops ic_buffer_ops = {
    .protocol = IC_PROTOCOL_BUFFER,
    .facts = {.contiguity_rule = IC_RULE_BUFFER_CONTIGUOUS,
              .readonly_rule = IC_RULE_EXCHANGE_READONLY,
              .memory_rule = IC_RULE_BUFFER_FIELDS,
              .dtype_names = IC_NAMES_PEP3118,
              .raw_bytes = true},
    .proxy_new = ic_buffer_proxy_new,
    .reference_consume = ic_buffer_reference_consume,
    .preset_refusal = ic_buffer_preset_refusal,
    .finish = ic_buffer_finish,
};
