#include "ic_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ic_diag_init(struct ic_diag *diag)
{
    memset(diag, 0, sizeof(*diag));
}

void ic_diag_add(struct ic_diag *diag, enum ic_severity severity, const char *rule,
                 const char *fmt, ...)
{
    if (severity == IC_SEV_ERROR)
        diag->errors++;
    if (diag->count >= IC_DIAG_MAX) {
        diag->dropped++;
        return;
    }
    struct ic_finding *item = &diag->items[diag->count++];
    item->severity = severity;
    snprintf(item->rule, sizeof(item->rule), "%s", rule ? rule : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item->message, sizeof(item->message), fmt, ap);
    va_end(ap);
}

const struct ic_finding *ic_diag_first_error(const struct ic_diag *diag)
{
    for (int i = 0; i < diag->count; i++) {
        if (diag->items[i].severity == IC_SEV_ERROR)
            return &diag->items[i];
    }
    return NULL;
}

bool ic_diag_has_rule(const struct ic_diag *diag, const char *rule)
{
    for (int i = 0; i < diag->count; i++) {
        if (strcmp(diag->items[i].rule, rule) == 0)
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
        const struct ic_finding *item = &diag->items[i];
        int n = snprintf(buf + used, (size_t)(size - used), "%s[%s%s] %s", i ? "; " : "",
                         item->severity == IC_SEV_WARNING ? "warning: " : "", item->rule,
                         item->message);
        if (n < 0)
            break;
        used += n;
    }
    if (diag->dropped > 0 && used < size - 1)
        snprintf(buf + used, (size_t)(size - used), "; (%d more findings)", diag->dropped);
}
