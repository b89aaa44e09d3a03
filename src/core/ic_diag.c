#include "ic_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ic_diag_init(struct ic_diag *diag)
{
    memset(diag, 0, sizeof(*diag));
}

void ic_diag_add_side(struct ic_diag *diag, enum ic_severity severity, enum ic_rule rule,
                      enum ic_side side, const char *fmt, ...)
{
    if (severity == IC_SEV_ERROR)
        diag->errors++;
    if (diag->count >= IC_DIAG_MAX) {
        diag->dropped++;
        return;
    }
    struct ic_diag_entry *item = &diag->items[diag->count++];
    item->provisional = false;
    item->severity = severity;
    item->rule = rule;
    const struct ic_rule_info *info = ic_rule_info(rule);
    item->side = side != IC_SIDE_NONE ? side : info ? info->side : IC_SIDE_NONE;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item->message, sizeof(item->message), fmt, ap);
    va_end(ap);
}

const struct ic_diag_entry *ic_diag_first_error(const struct ic_diag *diag)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].severity == IC_SEV_ERROR)
            return &diag->items[i];
    }
    return NULL;
}

bool ic_diag_has_rule(const struct ic_diag *diag, enum ic_rule rule)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].rule == rule)
            return true;
    }
    return false;
}

void ic_diag_format(const struct ic_diag *diag, char *buf, int size)
{
    int used = 0;
    if (size <= 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < diag->count && used < size - 1; i++) {
        const struct ic_diag_entry *item = &diag->items[i];
        int n = snprintf(buf + used, (size_t)(size - used), "%s[%s%s] %s", i ? "; " : "",
                         item->severity == IC_SEV_WARNING ? "warning: " : "", ic_rule_id(item->rule),
                         item->message);
        if (n < 0)
            break;
        used += n;
    }
    if (diag->dropped > 0 && used < size - 1)
        snprintf(buf + used, (size_t)(size - used), "; (%d more findings)", diag->dropped);
}
