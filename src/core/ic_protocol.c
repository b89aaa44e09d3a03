#include "ic_protocol.h"

#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

static const struct ic_protocol_ops *const ic_protocol_table[IC_PROTOCOL_COUNT] = {
#define IC_PROTOCOL_OPS(e, id, section, summary, ops) [IC_PROTOCOL_##e] = &(ops),
    IC_PROTOCOL_LIST(IC_PROTOCOL_OPS)
#undef IC_PROTOCOL_OPS
};

static const char *const ic_protocol_ids[IC_PROTOCOL_COUNT] = {
#define IC_PROTOCOL_ID(e, id, section, summary, ops) [IC_PROTOCOL_##e] = (id),
    IC_PROTOCOL_LIST(IC_PROTOCOL_ID)
#undef IC_PROTOCOL_ID
};

static const struct ic_variant_info ic_variant_table[IC_VARIANT_COUNT] = {
#define IC_VARIANT_ROW(e, id, proto, applies, devices, layouts, dtypes, summary)                   \
    [IC_VARIANT_##e] = {IC_VARIANT_##e, (id),      (proto),  (applies),                            \
                        (devices),      (layouts), (dtypes), (summary)},
    IC_VARIANT_LIST(IC_VARIANT_ROW)
#undef IC_VARIANT_ROW
};

const struct ic_protocol_ops *ic_protocol_ops(enum ic_protocol protocol)
{
    if ((int)protocol < 0 || protocol >= IC_PROTOCOL_COUNT)
        return NULL;
    return ic_protocol_table[protocol];
}

bool ic_protocol_on_devices(enum ic_protocol protocol)
{
    const struct ic_protocol_ops *ops = ic_protocol_ops(protocol);
    return ops && ops->facts.device_only;
}

const char *ic_protocol_id(enum ic_protocol protocol)
{
    if ((int)protocol < 0 || protocol >= IC_PROTOCOL_COUNT)
        return "invalid";
    return ic_protocol_ids[protocol];
}

IC_DEFINE_NAMES_LOOKUP(ic_protocol_from_id, enum ic_protocol, ic_protocol_ids)

const struct ic_variant_info *ic_variant_info(enum ic_variant variant)
{
    return IC_TABLE_ROW(ic_variant_table, variant, IC_VARIANT_COUNT);
}

int ic_variant_from_id(enum ic_protocol protocol, const char *id, enum ic_variant *ret)
{
    for (int i = 0; i < IC_VARIANT_COUNT; i++) {
        const struct ic_variant_info *info = &ic_variant_table[i];
        if ((info->protocol == -1 || info->protocol == (int)protocol) &&
            strcmp(info->id, id) == 0) {
            *ret = info->variant;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}

int ic_variant_relay_protocol(enum ic_variant variant)
{
    return variant == IC_VARIANT_ARROW_RELAY_DLPACK ? IC_PROTOCOL_DLPACK : -1;
}

void ic_export_record_init(struct ic_export_record *rec, enum ic_protocol protocol,
                           enum ic_variant variant)
{
    memset(rec, 0, sizeof(*rec));
    rec->protocol = protocol;
    rec->variant = variant;
    for (int i = 0; i < (int)(sizeof(rec->watch) / sizeof(rec->watch[0])); i++)
        rec->watch[i] = -1;
    ic_diag_init(&rec->diag);
    ic_diag_init(&rec->lifetime);
}
