#include "ic_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

void ic_filter_release(struct ic_filter *filter)
{
    ic_libset_release(&filter->producers);
    ic_libset_release(&filter->consumers);
}

void ic_filter_all(struct ic_filter *filter)
{
    memset(filter, 0, sizeof(*filter));
    ic_libset_fill(&filter->producers);
    ic_libset_fill(&filter->consumers);
    filter->reference_consumer = true;
    filter->protocols = UINT32_MAX;
    filter->dtypes = UINT32_MAX;
    filter->layouts = UINT32_MAX;
    filter->devices = UINT32_MAX;
}

static int ic_plan_push(struct ic_plan *plan, const struct ic_planned *item)
{
    struct ic_planned *items =
        ic_grow(plan->items, &plan->capacity, plan->count, sizeof(*items), 1024);
    if (!items)
        return IC_ENOMEM;
    plan->items = items;
    plan->items[plan->count++] = *item;
    return 0;
}

/* `consumer` is NULL for interopcheck's own consumer. */
static bool ic_variant_applies(const struct ic_variant_info *variant, enum ic_protocol protocol,
                               const struct ic_library *producer,
                               const struct ic_library *consumer, enum ic_device_kind device)
{
    if (variant->protocol != -1 && variant->protocol != (int)protocol)
        return false;
    if ((variant->devices == IC_ON_CPU && device != IC_KIND_CPU) ||
        (variant->devices == IC_ON_CUDA && device != IC_KIND_CUDA))
        return false;
    switch (variant->applies) {
    case IC_APPLIES_ANY:
        return true;
    case IC_APPLIES_REFERENCE:
        return consumer == NULL;
    case IC_APPLIES_COPY_KEYWORD:
        return consumer && ic_library_import_takes(consumer, protocol, "copy");
    case IC_APPLIES_DEVICE_KEYWORD:
        return consumer && ic_library_import_takes(consumer, protocol, "device");
    case IC_APPLIES_C_API:
        return !consumer && ic_library_export_flag(producer, protocol, "c_api");
    case IC_APPLIES_C_API_KEYWORD:
        return consumer && ic_library_import_takes(consumer, protocol, "c_api");
    case IC_APPLIES_LIBRARY:
        return consumer != NULL;
    case IC_APPLIES_RELAY:
        return consumer && (consumer->exports_on[device] &
                            (1u << ic_variant_relay_protocol(variant->variant)));
    }
    return false;
}

/* Why the producer cannot express a case, if it cannot: what the plan decides alone. */
enum ic_refusal {
    IC_REFUSAL_NONE,
    IC_REFUSAL_DTYPE,    /* it has no arrays of the dtype */
    IC_REFUSAL_LAYOUT,   /* it has no view of the layout */
    IC_REFUSAL_READONLY, /* it cannot make read-only arrays */
    IC_REFUSAL_NULLS,    /* it cannot make arrays with nulls */
};

static enum ic_refusal ic_plan_refusal(const struct ic_library *producer, const struct ic_case *c)
{
    if (!(producer->dtypes & (1u << c->dtype)))
        return IC_REFUSAL_DTYPE;
    if (!(producer->layouts & (1u << c->layout)))
        return IC_REFUSAL_LAYOUT;
    if (c->variant == IC_VARIANT_READONLY && !producer->readonly)
        return IC_REFUSAL_READONLY;
    if (ic_variant_has_nulls(c->variant) && !producer->nulls)
        return IC_REFUSAL_NULLS;
    return IC_REFUSAL_NONE;
}

/* The result of a case refused for `why`: unsupported, with the reason. */
static void ic_plan_refusal_result(const struct ic_library *producer, const struct ic_case *c,
                                   enum ic_refusal why, struct ic_result *res)
{
    const char *dtype = ic_dtype_name(c->dtype);
    const char *layout = ic_layout_name(c->layout);
    const char *note;

    memset(res, 0, sizeof(*res));
    switch (why) {
    case IC_REFUSAL_DTYPE:
        note = ic_library_note(producer, dtype);
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s has no %s arrays%s%s", producer->name, dtype,
                      note ? ": " : "", note ? note : "");
        break;
    case IC_REFUSAL_LAYOUT:
        note = ic_library_note(producer, layout);
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s cannot make %s %s view%s%s", producer->name,
                      ic_text_article(layout), layout, note ? ": " : "", note ? note : "");
        break;
    case IC_REFUSAL_READONLY:
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s cannot make read-only arrays",
                      producer->name);
        break;
    case IC_REFUSAL_NULLS:
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s cannot make arrays with nulls",
                      producer->name);
        break;
    case IC_REFUSAL_NONE:
        break;
    }
}

/* Decides at plan time what the producer cannot express. The item keeps only the outcome
 * (what ic_plan_refusal_result makes of every refusal, without its text); the texts are made
 * again when the result is asked for (ic_plan_result), so that the plan of --all, which decides
 * 128 000 cases this way, neither holds nor formats text for them. */
static void ic_plan_decide(const struct ic_library *producer, struct ic_planned *item)
{
    item->decided = ic_plan_refusal(producer, &item->c) != IC_REFUSAL_NONE;
    item->run = !item->decided;
    item->done = item->decided;
    if (item->decided)
        item->result = (struct ic_result_packed){IC_OUTCOME_UNSUPPORTED, IC_RULE_NONE, IC_SIDE_NONE,
                                                 IC_CLASS_NOTE, NULL};
}

/* Every case of one pair; `consumer` NULL for interopcheck's own consumer. */
static int ic_plan_pair(const struct ic_library *producer, const struct ic_library *consumer,
                        enum ic_protocol protocol, enum ic_device_kind device,
                        const struct ic_filter *filter, struct ic_plan *plan)
{
    const char *consumer_name = consumer ? consumer->name : IC_REFERENCE_CONSUMER;
    for (int v = 0; v < IC_VARIANT_COUNT; v++) {
        const struct ic_variant_info *variant = ic_variant_info((enum ic_variant)v);
        if (!ic_variant_applies(variant, protocol, producer, consumer, device))
            continue;
        for (int d = IC_DTYPE_FIRST; d < IC_DTYPE_END; d++) {
            if (!(filter->dtypes & (1u << d)) || (!variant->all_dtypes && d != IC_DTYPE_FLOAT32))
                continue;
            for (int l = 0; l < IC_LAYOUT_COUNT; l++) {
                if (!(filter->layouts & (1u << l)) ||
                    (!variant->all_layouts && l != IC_LAYOUT_FLAT))
                    continue;
                if (!plan->items) { /* the counting pass (ic_plan_build) */
                    plan->count++;
                    continue;
                }
                struct ic_planned item;
                memset(&item, 0, sizeof(item));
                item.c.protocol = protocol;
                snprintf(item.c.producer, sizeof(item.c.producer), "%s", producer->name);
                snprintf(item.c.consumer, sizeof(item.c.consumer), "%s", consumer_name);
                item.c.device = (struct ic_device){.kind = device, .id = 0};
                item.c.dtype = (enum ic_dtype)d;
                item.c.layout = (enum ic_layout)l;
                item.c.variant = (enum ic_variant)v;
                ic_plan_decide(producer, &item);
                int rc = ic_plan_push(plan, &item);
                if (rc < 0)
                    return rc;
            }
        }
    }
    return 0;
}

/* interopcheck's own consumer: every protocol on the CPU; on a GPU, the protocols whose
 * exports can describe device memory. */
static bool ic_reference_imports(enum ic_protocol protocol, enum ic_device_kind device)
{
    if (device == IC_KIND_CPU)
        return true;
    return ic_protocol_ops(protocol)->facts.device_pointer_rule != IC_RULE_NONE;
}

/* Every case of the selection: counted while plan->items is NULL, else added. */
static int ic_plan_fill(const struct ic_catalog *catalog, const struct ic_filter *filter,
                        uint32_t available, struct ic_plan *plan)
{
    for (int p = 0; p < IC_PROTOCOL_COUNT; p++) {
        if (!(filter->protocols & (1u << p)))
            continue;
        for (int k = 0; k < IC_KIND_COUNT; k++) {
            enum ic_device_kind device = (enum ic_device_kind)k;
            if (!(filter->devices & available & (1u << k)))
                continue;
            for (int i = 0; i < catalog->count; i++) {
                const struct ic_library *producer = &catalog->libs[i];
                if (!ic_libset_has(&filter->producers, i) || producer->state != IC_LIBRARY_LOADED ||
                    !(producer->devices & (1u << k)) || !(producer->exports_on[k] & (1u << p)))
                    continue;
                for (int j = 0; j < catalog->count; j++) {
                    const struct ic_library *consumer = &catalog->libs[j];
                    if (!ic_libset_has(&filter->consumers, j) ||
                        consumer->state != IC_LIBRARY_LOADED ||
                        !(consumer->imports_on[k] & (1u << p)))
                        continue;
                    int rc =
                        ic_plan_pair(producer, consumer, (enum ic_protocol)p, device, filter, plan);
                    if (rc < 0)
                        return rc;
                }
                if (filter->reference_consumer &&
                    ic_reference_imports((enum ic_protocol)p, device)) {
                    int rc =
                        ic_plan_pair(producer, NULL, (enum ic_protocol)p, device, filter, plan);
                    if (rc < 0)
                        return rc;
                }
            }
        }
    }
    return 0;
}

/* Two passes: the first counts the cases, so that the array is allocated once at its size.
 * Grown by doubling instead, --all's 196 000 items (31 MB) left the copies of their earlier
 * sizes behind in the heap and cost the supervisor 20 MB more at its peak. */
int ic_plan_build(const struct ic_catalog *catalog, const struct ic_filter *filter,
                  uint32_t available, struct ic_plan *plan)
{
    memset(plan, 0, sizeof(*plan));
    int rc = ic_plan_fill(catalog, filter, available, plan);
    size_t count = plan->count;
    plan->count = 0;
    if (rc < 0 || count == 0)
        return rc;
    plan->items = malloc(count * sizeof(*plan->items));
    if (!plan->items)
        return IC_ENOMEM;
    plan->capacity = count;
    return ic_plan_fill(catalog, filter, available, plan);
}

int ic_plan_result_again(const struct ic_catalog *catalog, const struct ic_planned *item,
                         struct ic_result *ret, struct ic_plan_made *made)
{
    if (!item->decided) {
        made->held = false;
        ic_result_unpack(&item->result, ret);
        return 0;
    }
    /* Cases come in plan order, a producer's together: its catalog entry is looked up again
     * only when the producer changes. */
    if (made->producer < 0 || strcmp(catalog->libs[made->producer].name, item->c.producer) != 0) {
        made->held = false;
        made->producer = ic_catalog_find(catalog, item->c.producer);
    }
    if (made->producer < 0)
        return IC_EINVAL;
    const struct ic_library *producer = &catalog->libs[made->producer];
    enum ic_refusal why = ic_plan_refusal(producer, &item->c);
    if (why == IC_REFUSAL_NONE) {
        made->held = false;
        return IC_EINVAL;
    }
    /* The reason names the dtype or the layout refused, nothing else of the case. */
    int dtype = why == IC_REFUSAL_DTYPE ? (int)item->c.dtype : -1;
    int layout = why == IC_REFUSAL_LAYOUT ? (int)item->c.layout : -1;
    if (made->held && made->why == (int)why && made->dtype == dtype && made->layout == layout)
        return 0;
    ic_plan_refusal_result(producer, &item->c, why, ret);
    *made = (struct ic_plan_made){.held = true,
                                  .producer = made->producer,
                                  .why = (int)why,
                                  .dtype = dtype,
                                  .layout = layout};
    return 0;
}

int ic_plan_result(const struct ic_catalog *catalog, const struct ic_planned *item,
                   struct ic_result *ret)
{
    struct ic_plan_made made = IC_PLAN_MADE_NONE;
    return ic_plan_result_again(catalog, item, ret, &made);
}

void ic_plan_release(struct ic_plan *plan)
{
    for (size_t i = 0; i < plan->count; i++)
        ic_result_packed_release(&plan->items[i].result);
    free(plan->items);
    memset(plan, 0, sizeof(*plan));
}

size_t ic_plan_retain(struct ic_plan *plan, bool (*keep)(const char *id, const void *context),
                      const void *context)
{
    size_t kept = 0;
    char id[IC_CASE_ID_MAX];
    for (size_t i = 0; i < plan->count; i++) {
        struct ic_planned *item = &plan->items[i];
        if (ic_case_format_id(&item->c, id, sizeof(id)) < 0 || !keep(id, context)) {
            ic_result_packed_release(&item->result);
            continue;
        }
        plan->items[kept++] = *item;
    }
    plan->count = kept;
    return kept;
}

const char *ic_plan_pair_gap(const struct ic_catalog *catalog, enum ic_protocol protocol,
                             enum ic_device_kind device, const char *producer, const char *consumer,
                             char *buf, size_t size)
{
    int p = ic_catalog_find(catalog, producer);
    int c = ic_catalog_find(catalog, consumer);
    const char *proto = ic_protocol_id(protocol);
    const char *where = ic_device_kind_name(device);
    if (p < 0)
        return NULL;
    const struct ic_library *lib = &catalog->libs[p];
    int n;
    if (lib->state != IC_LIBRARY_LOADED) {
        n = snprintf(buf, size, "%s is not available: %s", producer, lib->error);
    } else if (!(lib->devices & (1u << device))) {
        const char *note = ic_library_note(lib, where);
        n = snprintf(buf, size, "%s makes no arrays on %s%s%s", producer, where, note ? ": " : "",
                     note ? note : "");
    } else if (!(lib->exports_on[device] & (1u << protocol))) {
        n = snprintf(buf, size, "%s does not export %s on %s", producer, proto, where);
    } else if (c >= 0 && catalog->libs[c].state != IC_LIBRARY_LOADED) {
        n = snprintf(buf, size, "%s is not available: %s", consumer, catalog->libs[c].error);
    } else if (c >= 0 && !(catalog->libs[c].imports_on[device] & (1u << protocol))) {
        n = snprintf(buf, size, "%s does not import %s on %s", consumer, proto, where);
    } else if (c < 0 && !ic_reference_imports(protocol, device)) {
        n = snprintf(buf, size, "%s is a host protocol: no export of it describes %s memory", proto,
                     where);
    } else {
        return NULL;
    }
    /* A library's error or note can be long: cut it on a character boundary, with a marker. */
    ic_text_fix_formatted(buf, size, n);
    return buf;
}
