#include "ic_case.h"

#include <stdio.h>
#include <string.h>

#include "ic_error.h"

bool ic_name_is_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= IC_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return false;
    }
    return true;
}

int ic_case_format_id(const struct ic_case *c, char *buf, size_t size)
{
    const struct ic_variant_info *variant = ic_variant_info(c->variant);
    if (!ic_name_is_valid(c->producer) || !ic_name_is_valid(c->consumer) ||
        (int)c->device.kind < 0 || c->device.kind >= IC_KIND_COUNT || !ic_dtype_info(c->dtype) ||
        !ic_layout_info(c->layout) || !variant || !ic_protocol_ops(c->protocol))
        return IC_EINVAL;
    /* Joined by hand, not by snprintf: the supervisor formats an id for each line it writes
     * and each case it reads back, hundreds of thousands a run. */
    const char *parts[] = {ic_protocol_id(c->protocol),
                           c->producer,
                           c->consumer,
                           ic_device_kind_name(c->device.kind),
                           ic_dtype_name(c->dtype),
                           ic_layout_name(c->layout),
                           variant->id};
    size_t used = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        size_t len = strlen(parts[i]);
        if (i == 6 && len == 0)
            break; /* no variant */
        if (used + (i > 0) + len >= size)
            return IC_ERANGE;
        if (i > 0)
            buf[used++] = '.';
        memcpy(buf + used, parts[i], len);
        used += len;
    }
    buf[used] = '\0';
    return 0;
}

static int ic_copy_part(char *dst, size_t size, const char *src, size_t len)
{
    if (len == 0 || len >= size)
        return IC_EINVAL;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return 0;
}

int ic_case_parse_id(const char *id, struct ic_case *ret)
{
    const char *parts[8];
    size_t lens[8];
    int count = 0;
    const char *start = id;
    for (const char *p = id;; p++) {
        if (*p == '.' || *p == '\0') {
            if (count == 8)
                return IC_EINVAL;
            parts[count] = start;
            lens[count] = (size_t)(p - start);
            count++;
            if (*p == '\0')
                break;
            start = p + 1;
        }
    }
    if (count != 6 && count != 7)
        return IC_EINVAL;

    struct ic_case c = {0};
    char text[IC_NAME_MAX];
    if (ic_copy_part(text, sizeof(text), parts[0], lens[0]) < 0 ||
        ic_protocol_from_id(text, &c.protocol) < 0)
        return IC_EINVAL;
    if (ic_copy_part(c.producer, sizeof(c.producer), parts[1], lens[1]) < 0 ||
        ic_copy_part(c.consumer, sizeof(c.consumer), parts[2], lens[2]) < 0)
        return IC_EINVAL;
    if (ic_copy_part(text, sizeof(text), parts[3], lens[3]) < 0 ||
        ic_device_kind_from_name(text, &c.device.kind) < 0)
        return IC_EINVAL;
    if (ic_copy_part(text, sizeof(text), parts[4], lens[4]) < 0 ||
        ic_dtype_from_name(text, &c.dtype) < 0)
        return IC_EINVAL;
    if (ic_copy_part(text, sizeof(text), parts[5], lens[5]) < 0 ||
        ic_layout_from_name(text, &c.layout) < 0)
        return IC_EINVAL;
    c.variant = IC_VARIANT_NONE;
    if (count == 7) {
        if (ic_copy_part(text, sizeof(text), parts[6], lens[6]) < 0 ||
            ic_variant_from_id(c.protocol, text, &c.variant) < 0 || c.variant == IC_VARIANT_NONE)
            return IC_EINVAL;
    }
    if (!ic_name_is_valid(c.producer) || !ic_name_is_valid(c.consumer))
        return IC_EINVAL;
    *ret = c;
    return 0;
}
