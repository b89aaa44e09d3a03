/* fuzz_typestr: the typestr grammar of the array interface and the CUDA Array Interface
 * (ic_typestr_parse, src/protocols/ic_array_interface.c), a pure function of its text. The input is
 * the typestr. Besides memory safety the harness checks what the parser promises: a parsed typestr
 * has a kind of the grammar, a byte order it recorded, a size legal for the kind, an itemsize
 * derived from it, a terminated unit, and an exchanged dtype only when its itemsize is the dtype's;
 * a rejected one has a reason. */
#include <string.h>

#include "fuzz_common.h"
#include "ic_array_interface.h"
#include "ic_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstring(data, size);
    char why[96];
    struct ic_typestr parsed;

    memset(&parsed, 0x5a, sizeof(parsed)); /* written only on success */
    why[0] = '\0';
    int rc = ic_typestr_parse(text, &parsed, why, sizeof(why));
    if (rc == 0) {
        FUZZ_CHECK(strchr("<>|=", parsed.byteorder) && parsed.byteorder != '\0');
        FUZZ_CHECK(parsed.byteorder == text[0]);
        FUZZ_CHECK(parsed.standard_order == (parsed.byteorder != '='));
        FUZZ_CHECK(parsed.kind != '\0' && strchr("tbiufcmMOSUV", parsed.kind));
        FUZZ_CHECK(parsed.count >= 0 && parsed.itemsize >= 0);
        if (parsed.kind == 'U')
            FUZZ_CHECK(parsed.itemsize == parsed.count * 4);
        else if (parsed.kind == 't')
            FUZZ_CHECK(parsed.count > 0 && parsed.itemsize == (parsed.count + 7) / 8);
        else
            FUZZ_CHECK(parsed.itemsize == parsed.count);
        FUZZ_CHECK(memchr(parsed.unit, '\0', sizeof(parsed.unit)) != NULL);
        FUZZ_CHECK(parsed.unit[0] == '\0' || parsed.kind == 'm' || parsed.kind == 'M');
        if (parsed.dtype != IC_DTYPE_INVALID) {
            const struct ic_dtype_info *info = ic_dtype_info(parsed.dtype);
            FUZZ_CHECK(info != NULL && parsed.native);
            FUZZ_CHECK(info->itemsize == parsed.itemsize && info->typestr_kind == parsed.kind);
        }
    } else {
        FUZZ_CHECK(rc == IC_EINVAL);
        FUZZ_CHECK(why[0] != '\0');
    }
    /* A reason buffer of one byte: the reason is cut to nothing, the verdict is the same. */
    struct ic_typestr again;
    char tiny[1] = {'x'};
    FUZZ_CHECK(ic_typestr_parse(text, &again, tiny, sizeof(tiny)) == rc);
    FUZZ_CHECK(rc == 0 || tiny[0] == '\0');
    free(text);
    return 0;
}
