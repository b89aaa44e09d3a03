/*
 * The second half of the verify stage: every check of one case and its verdict. Each check
 * says what it saw; a failed one names the rule (ic_rules.h) and the side that broke it, worked
 * out from what was observed: the export is the producer's, the import the consumer's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ic_error.h"
#include "ic_exchange_state.h"
#include "ic_export.h"
#include "ic_gpu.h"
#include "ic_text.h"

/* --- What the checks share ------------------------------------------------------------------ */

static bool ic_view_is_empty(const struct ic_view *view)
{
    int64_t numel = 0;
    return ic_view_numel(view, &numel) == 0 && numel == 0;
}

/* The consumer's view: its own description, or the export for interopcheck's consumer. */
static const struct ic_view *ic_consumer_view(const struct ic_case_state *st)
{
    if (!st->consumer)
        return st->rec.have_view ? &st->rec.view : NULL;
    return st->have_consumed ? &st->consumed.view : NULL;
}

static bool ic_consumer_pointer_known(const struct ic_case_state *st)
{
    return st->consumer ? st->consumed.pointer_known : st->rec.have_view;
}

/* What the judge needs to know of the case's protocol (ic_protocol.h). */
static const struct ic_protocol_facts *ic_facts(const struct ic_case_state *st)
{
    return &ic_protocol_ops(st->c->protocol)->facts;
}

/* True when `exc` is the refusal `name` allows (NULL: any exception). */
static bool ic_exc_is_refusal(const struct ic_py_exc *exc, const char *name)
{
    if (!name)
        return true;
    if (strcmp(name, "BufferError") == 0)
        return exc->buffer_error;
    if (strcmp(name, "ValueError") == 0)
        return exc->value_error;
    return strcmp(exc->type, name) == 0;
}

/* A C-ordered view of the expected elements at `data`, laid out as `order` is when that view
 * is contiguous (a Fortran-ordered export keeps its memory order), else in C order. */
static struct ic_view ic_flat_view(const struct ic_case_state *st, uintptr_t data,
                                   const struct ic_view *order)
{
    struct ic_view flat = st->expected;
    flat.data = data;
    flat.readonly_known = false;
    ic_view_set_c_strides(&flat);
    int64_t lo = 0, hi = 0, numel = 0;
    if (order && ic_view_same_shape(order, &st->expected) && order->itemsize == flat.itemsize &&
        ic_view_span(order, &lo, &hi) == 0 && ic_view_numel(order, &numel) == 0 &&
        hi - lo == numel * order->itemsize) {
        /* Contiguous in some order: the same strides, from the lowest addressed byte. */
        memcpy(flat.strides, order->strides, sizeof(flat.strides));
        flat.data = data - (uintptr_t)(-lo);
    }
    return flat;
}

/* --- Export and import ---------------------------------------------------------------------- */

static bool ic_on_cuda(const struct ic_view *view)
{
    return view->device_type == IC_DEVICE_CUDA || view->device_type == IC_DEVICE_CUDA_HOST ||
           view->device_type == IC_DEVICE_CUDA_MANAGED;
}

/* Every exported device pointer is checked against the driver (memory type, device ordinal,
 * the whole span inside one allocation); its entries join the export's. A protocol that does
 * not carry the device (the CUDA Array Interface) gets its ordinal from the driver here. */
static void ic_check_device_pointers(struct ic_case_state *st)
{
    struct ic_export_record *rec = &st->rec;
    struct ic_cuda *cuda = ic_gpu();
    char err[400];
    if (!rec->have_view || !ic_on_cuda(&rec->view) || !cuda || ic_cuda_state(cuda) != IC_CUDA_READY)
        return;
    enum ic_rule rule = ic_facts(st)->device_pointer_rule;
    if (ic_facts(st)->device_from_driver) {
        /* The interface promises a device-accessible pointer, which pinned host and managed
         * memory are too: the driver says which, and which device. Memory the driver does
         * not know stays "device memory", as the export implies, and fails. */
        struct ic_cuda_pointer info;
        if (ic_cuda_pointer_info(cuda, rec->view.data, &info, err, sizeof(err)) == 0) {
            if (info.memory == IC_CUDA_MEMORY_HOST)
                rec->view.device_type = IC_DEVICE_CUDA_HOST, rec->view.device_id = 0;
            else if (info.memory == IC_CUDA_MEMORY_MANAGED)
                rec->view.device_type = IC_DEVICE_CUDA_MANAGED, rec->view.device_id = 0;
            else if (info.device_ordinal >= 0)
                rec->view.device_id = info.device_ordinal;
        }
    }
    if (ic_cuda_check_view(cuda, &rec->view, rule, &rec->diag, err, sizeof(err)) < 0)
        ic_diag_warn(&rec->diag, rule, "the driver could not check the pointer: %s", err);
}

/* The first error of `side` in the record's entries, and the others as context. */
static const struct ic_diag_entry *ic_entries_of(const struct ic_diag *diag, enum ic_side side,
                                                 char *text, size_t size)
{
    /* The most severe error leads (a contiguity violation before a superfluous format). */
    const struct ic_diag_entry *error = NULL;
    for (int i = 0; i < diag->count; i++) {
        const struct ic_diag_entry *item = &diag->items[i];
        if (item->severity != IC_SEV_ERROR || item->side != side)
            continue;
        const struct ic_rule_info *info = ic_rule_info(item->rule);
        const struct ic_rule_info *best = error ? ic_rule_info(error->rule) : NULL;
        if (!error || (info && best && info->severity < best->severity))
            error = item;
    }
    text[0] = '\0';
    size_t used = 0;
    if (error)
        used = (size_t)snprintf(text, size, "[%s] %s", ic_rule_id(error->rule), error->message);
    for (int i = 0; i < diag->count && used < size; i++) {
        const struct ic_diag_entry *item = &diag->items[i];
        if (item == error || item->side != side)
            continue;
        used += (size_t)snprintf(text + used, size - used, "%s[%s%s] %s", used ? "; " : "",
                                 item->severity == IC_SEV_WARNING ? "warning: " : "",
                                 ic_rule_id(item->rule), item->message);
    }
    return error;
}

static void ic_check_export(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record *rec = &st->rec;
    char text[IC_NOTE_MAX];
    const struct ic_diag_entry *error =
        ic_entries_of(&rec->diag, IC_SIDE_PRODUCER, text, sizeof(text));

    if (error) {
        ic_result_fail(res, IC_CHECK_EXPORT, error->rule, IC_SIDE_PRODUCER, "%s", text);
    } else if (rec->refusal_required && rec->have_view) {
        ic_result_fail(res, IC_CHECK_EXPORT, rec->refusal_rule, IC_SIDE_PRODUCER,
                       "%s exported for %s, a request it must refuse", st->c->producer,
                       rec->request[0] ? rec->request : "the request");
    } else if (rec->refusal_required && rec->producer_raised) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, "%s refused %s as it must: %s: %s",
                        st->c->producer, rec->request, rec->producer_exc_type,
                        rec->producer_exc_message);
    } else if (!rec->have_view && !rec->producer_raised) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_SKIP, "%s never asked %s for the export",
                        st->consumer_name, st->c->producer);
    } else if (!rec->have_view) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_SKIP, "%s raised %s: %s", st->c->producer,
                        rec->producer_exc_type, rec->producer_exc_message);
    } else {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS, "%s", text);
    }
}

/* What the consumer raised, as context for a check decided by something else. */
static void ic_consumer_context(const struct ic_case_state *st, char *text, size_t size)
{
    text[0] = '\0';
    if (st->consumer_raised && strcmp(st->consumer_exc.type, "nothing") == 0)
        snprintf(text, size, "; %s then raised nothing: %s", st->consumer_name,
                 st->consumer_exc.message);
    /* (the message says what it returned instead) */
    else if (st->consumer_raised)
        snprintf(text, size, "; %s then raised %s: %s", st->consumer_name, st->consumer_exc.type,
                 st->consumer_exc.message);
}

/* The producer raised and no request got an export: an allowed refusal (unsupported), a
 * required one (the export check passed it), or a refusal by the wrong exception. */
static void ic_judge_producer_refusal(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_case *c = st->c;
    const struct ic_refusal_policy *policy = ic_refusal_policy(ic_protocol_id(c->protocol));
    struct ic_py_exc exc = {0};
    char context[IC_NOTE_MAX];

    snprintf(exc.type, sizeof(exc.type), "%s", rec->producer_exc_type);
    snprintf(exc.message, sizeof(exc.message), "%s", rec->producer_exc_message);
    exc.buffer_error = strcmp(rec->producer_exc_type, "BufferError") == 0;
    exc.value_error = strcmp(rec->producer_exc_type, "ValueError") == 0;
    ic_consumer_context(st, context, sizeof(context));
    const char *request = rec->request[0] ? rec->request : "the export";
    bool keyword_variant = c->variant != IC_VARIANT_NONE && c->variant != IC_VARIANT_READONLY;

    if (rec->refusal_required)
        return; /* the export check passed it; nothing else is to be judged */
    if (rec->refusal_expected) {
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_PASS,
                        "%s refused %s, a request the spec says to refuse without naming the "
                        "exception: %s: %s",
                        c->producer, request, exc.type, exc.message);
        return;
    }
    if (rec->consumer_misuse) {
        /* The consumer called in with an exception set: what the producer did in that broken
         * state is the consumer's doing (the import check says so). */
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_SKIP,
                        "%s raised %s: %s while %s had an exception set", c->producer, exc.type,
                        exc.message, st->consumer_name);
        return;
    }
    /* A TypeError for a keyword the case's variant passes (our consumer's, or the user's copy
     * or device a library consumer passed on) says the producer predates it: no refusal. A
     * library consumer that could have asked again without max_version alone is charged. */
    bool consumer_could_retry = st->consumer && rec->dl_max_version_refused && !rec->dl_retried &&
                                !rec->dl_refused_with_user_keywords;
    if (strcmp(rec->producer_exc_type, "TypeError") == 0 && keyword_variant &&
        !consumer_could_retry) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED,
                      "%s does not accept %s (%s: %s): it predates "
                      "these keywords",
                      c->producer, request, exc.type, exc.message);
        st->refused = true;
    } else if (rec->dl_max_version_refused && !rec->dl_retried && st->consumer) {
        /* A producer that predates max_version answers it with TypeError: the spec's signal
         * for the consumer to ask again without it, not a refusal. The consumer that did not
         * is charged (dlpack.consumer_retry, on the import check). */
        ic_result_check(res, IC_CHECK_EXPORT, IC_CHECK_SKIP,
                        "%s does not accept max_version (%s: %s), the signal to ask again "
                        "without it%s",
                        c->producer, exc.type, exc.message, context);
    } else if (!policy || ic_exc_is_refusal(&exc, policy->producer)) {
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s refused %s: %s: %s%s", c->producer, request,
                      exc.type, exc.message, context);
        st->refused = true;
    } else {
        /* The library's text goes after our rule, so a long one is what gets cut; the
         * request is the case's own field. */
        ic_result_fail(res, IC_CHECK_EXPORT, IC_RULE_EXCHANGE_REFUSAL, IC_SIDE_PRODUCER,
                       "%s refused with %s, not %s: %s%s", c->producer, exc.type, policy->producer,
                       exc.message, context);
    }
}

/* The consumer refused as its protocol allows: unsupported, with its reason, and a note where
 * the spec advises another exception than the one it raised. */
static void ic_judge_allowed_consumer_refusal(struct ic_case_state *st, struct ic_result *res,
                                              const struct ic_refusal_policy *policy)
{
    const struct ic_py_exc *exc = &st->consumer_exc;
    const char *advised = policy ? policy->consumer_advised : NULL;
    char advice[160] = "";

    /* from_dlpack(x, copy=False) may refuse with ValueError too (the Array API names both). */
    bool no_copy_value_error =
        st->c->variant == IC_VARIANT_FROM_NO_COPY && ic_exc_is_refusal(exc, "ValueError");
    if (advised && !ic_exc_is_refusal(exc, advised) && !no_copy_value_error)
        snprintf(advice, sizeof(advice), " [note: %s] %s is the advised refusal",
                 ic_rule_id(ic_facts(st)->advised_refusal_rule), advised);
    ic_result_check(res, IC_CHECK_IMPORT, IC_CHECK_SKIP, "%s refused the import: %s: %s%s",
                    st->consumer_name, exc->type, exc->message, advice);
    if (advice[0]) {
        res->checks[IC_CHECK_IMPORT].rule = ic_facts(st)->advised_refusal_rule;
        res->checks[IC_CHECK_IMPORT].severity = IC_CLASS_NOTE;
    }
    ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s refused the import: %s: %s%s", st->consumer_name,
                  exc->type, exc->message, advice);
    st->refused = true;
}

/* The consumer raised although an export was there (or before it asked for one). */
static void ic_judge_consumer_refusal(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_case *c = st->c;
    const struct ic_refusal_policy *policy = ic_refusal_policy(ic_protocol_id(c->protocol));
    const struct ic_py_exc *exc = &st->consumer_exc;

    if (res->checks[IC_CHECK_EXPORT].status == IC_CHECK_FAIL) {
        /* A broken export explains the consumer's failure: the producer is at fault. */
        ic_result_check(res, IC_CHECK_IMPORT, IC_CHECK_SKIP,
                        "%s raised %s: %s (after the export failed its check)", st->consumer_name,
                        exc->type, exc->message);
        return;
    }
    /* An import the library does not claim (TensorFlow's capsule-only from_dlpack fed arrays)
     * owes nothing to its own export: its refusal is a refusal like any other. */
    if (st->consumer && st->traits.claimed && strcmp(c->producer, c->consumer) == 0) {
        ic_result_fail(res, IC_CHECK_IMPORT, IC_RULE_EXCHANGE_ROUND_TRIP, IC_SIDE_CONSUMER,
                       "%s cannot import its own %s export: it raised %s: %s", c->consumer,
                       ic_protocol_id(c->protocol), exc->type, exc->message);
        return;
    }
    const struct ic_protocol_ops *ops = ic_protocol_ops(c->protocol);
    char why[IC_DIAGNOSTIC_MAX];
    enum ic_rule cause =
        ops->consumer_error_cause
            ? ops->consumer_error_cause(&st->rec, exc->type, exc->message, why, sizeof(why))
            : IC_RULE_NONE;
    if (cause != IC_RULE_NONE) {
        ic_result_fail(res, IC_CHECK_IMPORT, cause, IC_SIDE_CONSUMER, "%s %s", st->consumer_name,
                       why);
        return;
    }
    if (!policy || ic_exc_is_refusal(exc, policy->consumer)) {
        ic_judge_allowed_consumer_refusal(st, res, policy);
        return;
    }
    const struct ic_export_record *rec = &st->rec;
    bool legacy_answer = ic_export_legacy_answer(rec);
    ic_result_fail(res, IC_CHECK_IMPORT, IC_RULE_EXCHANGE_REFUSAL, IC_SIDE_CONSUMER,
                   "%s refused the import%s%s with %s, not %s: %s", st->consumer_name,
                   legacy_answer ? " of a legacy capsule " : "", legacy_answer ? rec->detail : "",
                   exc->type, policy->consumer, exc->message);
}

static void ic_check_import(struct ic_case_state *st, struct ic_result *res, bool imported)
{
    const struct ic_export_record *rec = &st->rec;
    char text[IC_NOTE_MAX];
    const struct ic_diag_entry *error =
        ic_entries_of(&rec->diag, IC_SIDE_CONSUMER, text, sizeof(text));

    if (rec->consumer_misuse) {
        ic_result_fail(res, IC_CHECK_IMPORT, IC_RULE_PYTHON_CAPI_EXCEPTION, IC_SIDE_CONSUMER,
                       "%s called into the C API with an exception set; it %s, and the producer "
                       "then failed in that state",
                       st->consumer_name, rec->consumer_misuse_text);
    } else if (error) {
        ic_result_fail(res, IC_CHECK_IMPORT, error->rule, IC_SIDE_CONSUMER, "%s", text);
    }
    if (imported) {
        if (res->checks[IC_CHECK_IMPORT].status != IC_CHECK_FAIL)
            ic_result_check(res, IC_CHECK_IMPORT, IC_CHECK_PASS, "%s", text);
        return;
    }
    /* Nothing was imported: who refused, and was that allowed? */
    if (rec->producer_raised && !rec->have_view) {
        if (res->checks[IC_CHECK_IMPORT].status != IC_CHECK_FAIL) {
            char context[IC_NOTE_MAX];
            ic_consumer_context(st, context, sizeof(context));
            ic_result_check(res, IC_CHECK_IMPORT, IC_CHECK_SKIP, "%s refused the export%s",
                            st->c->producer, context);
        }
        ic_judge_producer_refusal(st, res);
        return;
    }
    if (!st->consumer) {
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "interopcheck's %s consumer imported nothing and recorded no refusal",
                      ic_protocol_id(st->ops->protocol));
        st->refused = true;
        return;
    }
    if (res->checks[IC_CHECK_IMPORT].status != IC_CHECK_FAIL)
        ic_judge_consumer_refusal(st, res);
}

/* --- Memory sharing ------------------------------------------------------------------------- */

/* Whether the consumer's import must share the export's memory: where the protocol has a copy
 * keyword the consumer's own request decides (copy=False), elsewhere the import call's
 * documented promise (the probe's zero_copy). */
static bool ic_import_must_share(const struct ic_case_state *st)
{
    if (ic_facts(st)->consumer_asks_copy)
        return st->rec.no_copy_required;
    return st->traits.zero_copy;
}

/* The export side of sharing: what the request and the protocol demand of the producer. */
static bool ic_check_export_sharing(struct ic_case_state *st, struct ic_result *res, char *note,
                                    size_t size)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    const struct ic_view *e = &rec->view;
    bool export_shares = e->data == p->data;

    if (rec->copy_expected) {
        if (export_shares) {
            ic_result_fail(res, IC_CHECK_ZERO_COPY, ic_facts(st)->copy_rule, IC_SIDE_PRODUCER,
                           "%s asked for a copy but the export points at the producer's data "
                           "(0x%llx): writes to it change the original",
                           rec->request, (unsigned long long)p->data);
            return false;
        }
        snprintf(note, size, "copied as asked");
    } else if (export_shares && rec->copy_flagged && ic_facts(st)->silent_copy_rule) {
        ic_result_fail(res, IC_CHECK_ZERO_COPY, ic_facts(st)->silent_copy_rule,
                       IC_SIDE_PRODUCER,
                       "the export says it is a copy (IS_COPIED) but points at the producer's "
                       "data (0x%llx): a consumer that takes it for memory of its own writes "
                       "into the producer's array",
                       (unsigned long long)p->data);
        return false;
    } else if (rec->no_copy_required && !export_shares) {
        ic_result_fail(res, IC_CHECK_ZERO_COPY, ic_facts(st)->no_copy_rule, IC_SIDE_PRODUCER,
                       "%s forbade a copy but the export is at 0x%llx, the producer's data at "
                       "0x%llx: writes to it are lost",
                       rec->request, (unsigned long long)e->data, (unsigned long long)p->data);
        return false;
    } else if (!export_shares) {
        if (rec->copy_flagged) {
            snprintf(note, size, "%s exported a copy and said so", st->c->producer);
        } else if (rec->zero_copy_known) {
            enum ic_rule rule = ic_facts(st)->silent_copy_rule;
            ic_result_fail(res, IC_CHECK_ZERO_COPY, rule ? rule : IC_RULE_EXCHANGE_SHARED,
                           IC_SIDE_PRODUCER,
                           "the export's first element is at 0x%llx, the producer's at 0x%llx, "
                           "and the export does not say it copied",
                           (unsigned long long)e->data, (unsigned long long)p->data);
            return false;
        } else {
            snprintf(note, size, "%s exported a copy (its choice on this path)", st->c->producer);
        }
    }
    return true;
}

/* Adds a sentence to a note, after "; " when the note has one already. */
static void ic_note_append(char *note, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ic_note_append(char *note, size_t size, const char *fmt, ...)
{
    size_t used = strlen(note);
    if (used && used + 2 < size) {
        memcpy(note + used, "; ", 3);
        used += 2;
    }
    if (used >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + used, size - used, fmt, ap);
    va_end(ap);
}

/* from_dlpack(x, copy=True) or copy=False: the user's request of the consumer, whatever the
 * consumer then asked of the producer (the request says what). The producer's memory is the
 * measure: a consumer told to copy that hands back the producer's memory, or told not to that
 * hands back other memory, is at fault even where the producer did what it was asked. True
 * when it decided the check. */
static bool ic_check_consumer_copy_keyword(struct ic_case_state *st, struct ic_result *res,
                                           const struct ic_view *c)
{
    const struct ic_view *p = &st->produced.view;
    const char *who = st->consumer_name, *asked = st->rec.request[0] ? st->rec.request : "nothing";
    if (st->c->variant == IC_VARIANT_FROM_COPY) {
        if (c->data == p->data)
            ic_result_fail(res, IC_CHECK_ZERO_COPY, IC_RULE_EXCHANGE_CONSUMER_COPY,
                           IC_SIDE_CONSUMER,
                           "from_dlpack(x, copy=True) gave %s's array at 0x%llx, the producer's "
                           "own memory (it asked the producer for %s): writes through either "
                           "change the other",
                           who, (unsigned long long)c->data, asked);
        else
            ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_PASS,
                            "from_dlpack(x, copy=True) gave memory of its own (it asked the "
                            "producer for %s)",
                            asked);
        return true;
    }
    if (st->c->variant == IC_VARIANT_FROM_NO_COPY && c->data != p->data) {
        ic_result_fail(res, IC_CHECK_ZERO_COPY, IC_RULE_EXCHANGE_CONSUMER_NO_COPY, IC_SIDE_CONSUMER,
                       "from_dlpack(x, copy=False) gave %s's array at 0x%llx, the producer's "
                       "memory is at 0x%llx (it asked the producer for %s): it copied where it "
                       "was told not to, and writes to either are lost to the other",
                       who, (unsigned long long)c->data, (unsigned long long)p->data, asked);
        return true;
    }
    return false;
}

static void ic_check_zero_copy(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *e = rec->have_view ? &rec->view : NULL;
    const struct ic_view *c = ic_consumer_view(st);
    char note[IC_NOTE_MAX] = "";

    if (ic_view_is_empty(&st->expected)) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP,
                        "an empty array has no element to locate");
        return;
    }
    if (!st->produced.pointer_known || !e) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP, "%s",
                        e ? "the producer has no pointer API" : "no export to locate");
        return;
    }
    if (e->host_copy) {
        ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_SKIP,
                        "the export is a copy the tester made of it (Arrow booleans unpacked, "
                        "or several arrays joined): where its elements lie is not known");
        return;
    }
    if (!ic_check_export_sharing(st, res, note, sizeof(note)))
        return;
    if (st->consumer && c && ic_consumer_pointer_known(st)) {
        if (ic_check_consumer_copy_keyword(st, res, c))
            return;
        bool import_shares = c->data == e->data;
        if (!import_shares && ic_import_must_share(st)) {
            ic_result_fail(res, IC_CHECK_ZERO_COPY, IC_RULE_EXCHANGE_SHARED, IC_SIDE_CONSUMER,
                           "%s must share memory here (%s), but its array starts at 0x%llx and "
                           "the export at 0x%llx: writes through either are lost to the other",
                           st->consumer_name,
                           ic_facts(st)->consumer_asks_copy ? "it asked for copy=False"
                                                            : "its import call promises it",
                           (unsigned long long)c->data, (unsigned long long)e->data);
            return;
        }
        if (!import_shares) {
            /* Consumers that copy for alignment's sake copy some runs and not others: the
             * export's alignment makes the note reproducible to a reader. */
            uintptr_t align = e->data ? (e->data & (~e->data + 1)) : 0;
            char aligned[48];
            snprintf(aligned, sizeof(aligned), "%llu",
                     (unsigned long long)(align > 4096 ? 4096 : align));
            ic_note_append(note, sizeof(note),
                           "%s copied on import, as it may here (the export is aligned to %s "
                           "bytes)",
                           st->consumer_name, aligned);
            ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_PASS, "%s", note);
            res->checks[IC_CHECK_ZERO_COPY].rule = IC_RULE_EXCHANGE_COPY_ALLOWED;
            res->checks[IC_CHECK_ZERO_COPY].severity = IC_CLASS_NOTE;
            return;
        }
    } else if (st->consumer && c) {
        ic_note_append(note, sizeof(note), "%s has no pointer API: only the export was located",
                       st->consumer_name);
    }
    ic_result_check(res, IC_CHECK_ZERO_COPY, IC_CHECK_PASS, "%s", note);
}

/* --- Contents ------------------------------------------------------------------------------- */

/* The nulls variants: the export marks exactly the elements the case made null. */
static bool ic_check_export_nulls(struct ic_case_state *st, struct ic_result *res,
                                  const struct ic_view *got)
{
    char note[IC_NOTE_MAX];
    if (!ic_variant_has_nulls(st->c->variant))
        return true;
    int rc = ic_nulls_compare(st, got, "the export", note, sizeof(note));
    if (rc > 0 || rc == IC_ENOTFOUND) /* unknown: the import's nulls are still judged */
        return true;
    if (rc == IC_ENOMEM)
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, "%s", note);
    else
        ic_result_fail(res, IC_CHECK_CONTENTS,
                       rc == IC_EFAULT ? ic_facts(st)->memory_rule : ic_facts(st)->nulls_rule,
                       IC_SIDE_PRODUCER, "%s", note);
    return false;
}

/* The nulls variants: the import keeps the nulls the export marked (checked already). A
 * consumer whose probe cannot say which elements are null is judged on its valid ones only,
 * and st->nulls_note says so for the contents check's pass. False after a failure. */
static bool ic_check_import_nulls(struct ic_case_state *st, struct ic_result *res,
                                  const struct ic_view *c)
{
    char note[IC_NOTE_MAX];
    if (!ic_variant_has_nulls(st->c->variant))
        return true;
    int rc = ic_nulls_compare(st, c, "the import", note, sizeof(note));
    if (rc > 0) {
        snprintf(st->nulls_note, sizeof(st->nulls_note),
                 "the nulls are where they were, and the valid elements compare");
        return true;
    }
    if (rc == IC_ENOTFOUND || rc == IC_ENOMEM) {
        snprintf(st->nulls_note, sizeof(st->nulls_note),
                 "the valid elements compare; %s's probe cannot say which elements of its "
                 "import are null, so the nulls were not checked",
                 st->consumer_name);
        return true;
    }
    ic_result_fail(res, IC_CHECK_CONTENTS, ic_facts(st)->nulls_rule, IC_SIDE_CONSUMER, "%s%s", note,
                   st->rec.have_view ? ", though the export marked them right" : "");
    return false;
}

/* The export's own contents. An export without dtype or shape (a buffer got without a format
 * or a shape) promises C-ordered bytes, read as such. Returns false when it failed. */
static bool ic_check_export_contents(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *e = &rec->view;
    char note[IC_NOTE_MAX];
    int64_t numel = 0, bytes = 0, expected_bytes = 0;

    if (!rec->have_view || st->queued)
        return true;
    const struct ic_view *got = e;
    struct ic_view flat;
    if (e->dtype != st->c->dtype || !ic_view_same_shape(e, &st->expected)) {
        /* Only raw, C-ordered bytes of the right size can be read as the elements. */
        ic_view_numel(&st->expected, &numel);
        expected_bytes = numel * st->expected.itemsize;
        if (e->dtype != IC_DTYPE_INVALID || ic_view_numel(e, &bytes) < 0 ||
            bytes * e->itemsize != expected_bytes || !ic_view_is_c_contiguous(e))
            return true;
        flat = ic_flat_view(st, e->data, NULL);
        flat.device_type = e->device_type;
        flat.device_id = e->device_id;
        flat.host_copy = e->host_copy;
        got = &flat;
    }
    /* Nulls first: where they are wrong, so are the values read at them. */
    if (!ic_check_export_nulls(st, res, got))
        return false;
    int equal = ic_pattern_compare(st, got, 0, "the export", note, sizeof(note));
    if (equal > 0)
        return true;
    if (equal == IC_EFAULT) {
        /* Memory that was readable when the export was validated and is gone now: the
         * producer freed or unmapped what it still exports. */
        ic_result_fail(res, IC_CHECK_CONTENTS, ic_facts(st)->memory_rule, IC_SIDE_PRODUCER,
                       "%s; it was readable when exported, so the producer took it away while "
                       "the export was in use",
                       note);
        return false;
    }
    if (equal < 0) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, "%s", note);
        return false;
    }
    if (got == &flat && ic_facts(st)->contiguity_rule != IC_RULE_NONE)
        ic_result_fail(res, IC_CHECK_CONTENTS, ic_facts(st)->contiguity_rule, IC_SIDE_PRODUCER,
                       "the exporter ignored the contiguity the request asks for; %s returned "
                       "bytes that are not the array in C order, though it has no strides (%s)",
                       rec->request, note);
    else if (ic_layout_is_value_view(ic_layout_info(st->c->layout)))
        /* The array's memory holds the negated (conjugated) elements under a flag: an export
         * of that memory without resolving the flag hands out other values. */
        ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_PRODUCER,
                       "%s: the array is a lazy %s view, whose memory holds the %s elements "
                       "under a flag, and the export carries that memory without resolving it",
                       note, st->c->layout == IC_LAYOUT_NEG_VIEW ? "negation" : "conjugation",
                       st->c->layout == IC_LAYOUT_NEG_VIEW ? "negated" : "conjugated");
    else
        ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_PRODUCER, "%s",
                       note);
    return false;
}

/* Works out what a consumer whose elements differ did wrong, from where its elements are. */
static void ic_diagnose_contents(struct ic_case_state *st, const struct ic_view *c, char *note,
                                 size_t size)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *e = &rec->view;
    struct ic_compare_result cmp;

    if (!rec->have_view || c->host_copy || !(e->device_type == IC_DEVICE_CPU))
        return;
    if (rec->byte_offset > 0) {
        /* Did it read from data instead of data + byte_offset? */
        struct ic_view shifted = *e;
        shifted.data = e->data - rec->byte_offset;
        bool at_data = st->consumed.pointer_known && c->data == shifted.data;
        if (at_data || (ic_view_same_shape(c, e) && ic_view_compare(c, &shifted, &cmp) == 0 &&
                        cmp.mismatches == 0)) {
            snprintf(note, size,
                     "%s ignored byte_offset: it read from data (0x%llx), not from data + "
                     "byte_offset (0x%llx + %llu = 0x%llx)",
                     st->consumer_name, (unsigned long long)shifted.data,
                     (unsigned long long)shifted.data, (unsigned long long)rec->byte_offset,
                     (unsigned long long)e->data);
            return;
        }
    }
    int64_t lo = 0, hi = 0, numel = 0;
    if (!ic_view_is_c_contiguous(e) && ic_view_span(e, &lo, &hi) == 0 &&
        ic_view_numel(e, &numel) == 0 && lo >= 0 && numel * e->itemsize <= hi) {
        /* Did it read the elements as if they were contiguous? */
        struct ic_view dense = *e;
        ic_view_set_c_strides(&dense);
        if (ic_view_same_shape(c, e) && ic_view_compare(c, &dense, &cmp) == 0 &&
            cmp.mismatches == 0)
            snprintf(note, size,
                     "%s ignored the export's strides: it read the elements as if they were "
                     "C-contiguous from the first one",
                     st->consumer_name);
    }
}

/* The import points at memory that cannot be read. Where it shares the export's memory, that
 * memory went away under the consumer: the producer's fault (it freed what it exported);
 * elsewhere the consumer built its array on nothing. */
static void ic_fail_unreadable_import(struct ic_case_state *st, struct ic_result *res,
                                      const struct ic_view *c, const char *note)
{
    const struct ic_view *e = st->rec.have_view ? &st->rec.view : NULL;
    int64_t lo = 0, hi = 0;
    bool in_export = e && st->consumed.pointer_known && !c->host_copy &&
                     ic_view_span(e, &lo, &hi) == 0 && c->data >= e->data - (uintptr_t)(-lo) &&
                     c->data < e->data + (uintptr_t)hi;
    if (in_export)
        ic_result_fail(res, IC_CHECK_CONTENTS, ic_facts(st)->memory_rule, IC_SIDE_PRODUCER,
                       "the memory %s exported is gone: %s", st->c->producer, note);
    else
        ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_CONSUMER,
                       "%s's import points outside the export: %s", st->consumer_name, note);
}

/* The memory order of an untyped import's elements: a raw import that is the export's memory
 * holds them in the export's memory order (a Fortran-ordered array stays so), returned here;
 * one that copied serialised them in C order, as CPython's own copies (bytes(), tobytes())
 * do: NULL. */
static const struct ic_view *ic_untyped_order(const struct ic_case_state *st,
                                              const struct ic_view *c)
{
    const struct ic_view *e = st->rec.have_view ? &st->rec.view : NULL;
    int64_t lo = 0, hi = 0;
    bool same_memory = e && st->consumed.pointer_known && ic_view_span(e, &lo, &hi) == 0 &&
                       c->data == e->data - (uintptr_t)(-lo);
    return same_memory ? e : NULL;
}

/* The flat elements at `c` (an untyped import, or a result computed from one element by
 * element) as a view shaped like the expected one, in the memory order `order`. */
static struct ic_view ic_untyped_elements(const struct ic_case_state *st, const struct ic_view *c,
                                          const struct ic_view *order)
{
    struct ic_view flat = ic_flat_view(st, c->data, order);
    flat.device_type = c->device_type;
    flat.device_id = c->device_id;
    flat.host_copy = c->host_copy;
    return flat;
}

/* An untyped import holds the bytes: compare them in the export's memory order, as flat
 * elements of the expected size. */
static void ic_check_untyped_import(struct ic_case_state *st, struct ic_result *res,
                                    const struct ic_view *c)
{
    char note[IC_NOTE_MAX];
    int64_t numel_expected = 0, bytes_got = 0;
    ic_view_numel(&st->expected, &numel_expected);
    if (ic_view_numel(c, &bytes_got) == 0)
        bytes_got *= c->itemsize;
    if (bytes_got != numel_expected * st->expected.itemsize) {
        ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_CONSUMER,
                       "the import holds %lld bytes, the array %lld", (long long)bytes_got,
                       (long long)(numel_expected * st->expected.itemsize));
        return;
    }
    if (!ic_view_is_c_contiguous(c)) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP,
                        "an untyped import that is not contiguous");
        return;
    }
    const struct ic_view *order = ic_untyped_order(st, c);
    struct ic_view flat = ic_untyped_elements(st, c, order);
    bool same_memory = order != NULL;
    int equal = ic_pattern_compare(st, &flat, 0, "the import", note, sizeof(note));
    if (equal == IC_EFAULT)
        ic_fail_unreadable_import(st, res, c, note);
    else if (equal < 0)
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, "%s", note);
    else if (equal == 0)
        ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS, IC_SIDE_CONSUMER, "%s",
                       note);
    else
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_PASS,
                        same_memory ? "compared as raw bytes in the export's memory order"
                                    : "compared as raw bytes in C order");
}

static void ic_check_contents(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *c = ic_consumer_view(st);
    char note[IC_NOTE_MAX];

    if (!ic_check_export_contents(st, res))
        return;
    if (!c) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, "nothing was imported");
        return;
    }
    if (st->consumer && !st->traits.typed) {
        ic_check_untyped_import(st, res, c);
        return;
    }
    if (c->dtype != st->c->dtype || c->itemsize != st->expected.itemsize) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP,
                        "the import's dtype differs (see dtype)");
        return;
    }
    if (!ic_view_same_shape(c, &st->expected)) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP,
                        "the import's shape differs (see shape)");
        return;
    }
    if (!ic_check_import_nulls(st, res, c))
        return;
    int equal = ic_pattern_compare(st, c, st->read_stream, "the import", note, sizeof(note));
    if (equal > 0) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_PASS,
                        ic_variant_has_nulls(st->c->variant) ? st->nulls_note : NULL);
    } else if (equal == IC_EFAULT) {
        ic_fail_unreadable_import(st, res, c, note);
    } else if (equal < 0) {
        ic_result_check(res, IC_CHECK_CONTENTS, IC_CHECK_SKIP, "%s", note);
    } else if (st->queued) {
        /* Who broke the ordering: a DLPack producer must make the consumer's stream wait; a
         * CAI producer with queued work must export its stream, and a consumer then waits. */
        bool handed_over = ic_facts(st)->export_names_stream;
        bool consumer_late = handed_over && rec->has_stream;
        const char *why =
            !handed_over      ? "did not make the consumer's stream wait for its queued writes"
            : rec->has_stream ? "did not wait for the stream the export names"
                              : "exported no stream while its writes were still queued";
        ic_result_fail(res, IC_CHECK_CONTENTS, ic_facts(st)->stream_order_rule,
                       consumer_late ? IC_SIDE_CONSUMER : IC_SIDE_PRODUCER,
                       "the import read the array before the producer's queued writes finished: "
                       "%s %s (%s)",
                       consumer_late ? st->consumer_name : st->c->producer, why, note);
    } else {
        /* The export held the right elements (checked above), so the consumer misread them. */
        char cause[IC_NOTE_MAX] = "";
        if (st->consumer)
            ic_diagnose_contents(st, c, cause, sizeof(cause));
        if (cause[0])
            ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS,
                           st->consumer ? IC_SIDE_CONSUMER : IC_SIDE_PRODUCER, "%s (%s)", cause,
                           note);
        else
            ic_result_fail(res, IC_CHECK_CONTENTS, IC_RULE_EXCHANGE_CONTENTS,
                           st->consumer ? IC_SIDE_CONSUMER : IC_SIDE_PRODUCER, "%s", note);
    }
}

/* --- Dtype, shape, addresses, device -------------------------------------------------------- */

/* Whether the consumer's import is there to judge for `check`. When it is not, records why:
 * interopcheck's own consumer has only the export (judged already: a pass when there was
 * one), nothing was imported, or the import is untyped (`untyped`: what it holds instead). */
static bool ic_import_to_judge(struct ic_case_state *st, struct ic_result *res, enum ic_check check,
                               const char *untyped)
{
    if (!st->consumer)
        ic_result_check(res, check, st->rec.have_view ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL);
    else if (!st->have_consumed)
        ic_result_check(res, check, IC_CHECK_SKIP, "nothing was imported");
    else if (!st->traits.typed)
        ic_result_check(res, check, IC_CHECK_SKIP, "%s's import is untyped: %s", st->consumer_name,
                        untyped);
    else
        return true;
    return false;
}

static void ic_check_dtype(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const char *want = ic_dtype_name(st->c->dtype);
    bool raw_buffer = rec->view.dtype == IC_DTYPE_INVALID && ic_facts(st)->raw_bytes &&
                      rec->view.itemsize == st->expected.itemsize && st->consumer &&
                      !st->traits.typed;

    if (rec->have_view && rec->view.dtype != st->c->dtype && !raw_buffer) {
        if (rec->view.dtype == IC_DTYPE_INVALID)
            ic_result_fail(res, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE, IC_SIDE_PRODUCER,
                           "the export does not spell a dtype the protocol defines for %s %s "
                           "array (%s)",
                           ic_text_article(want), want, rec->detail[0] ? rec->detail : "no detail");
        else
            ic_result_fail(res, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE, IC_SIDE_PRODUCER,
                           "the export says %s for %s %s array", ic_dtype_name(rec->view.dtype),
                           ic_text_article(want), want);
        return;
    }
    if (!ic_import_to_judge(st, res, IC_CHECK_DTYPE, "the dtype came from the caller"))
        return;
    if (!st->consumed.dtype_name[0]) {
        ic_result_fail(res, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE_NAMED, IC_SIDE_CONSUMER,
                       "%s imported %s %s array whose dtype it cannot name: its own dtype API "
                       "raises for the import",
                       st->consumer_name, ic_text_article(want), want);
    } else if (st->consumed.view.dtype != st->c->dtype) {
        ic_result_fail(res, IC_CHECK_DTYPE, IC_RULE_EXCHANGE_DTYPE, IC_SIDE_CONSUMER,
                       "%s imported %s %s array as %s", st->consumer_name, ic_text_article(want),
                       want, st->consumed.dtype_name);
    } else {
        ic_result_check(res, IC_CHECK_DTYPE, IC_CHECK_PASS, NULL);
    }
}

static void ic_check_shape(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    char want[128], got[128];

    ic_view_format_shape(&st->expected, want, sizeof(want));
    bool raw = st->consumer && !st->traits.typed;
    if (rec->have_view && !ic_view_same_shape(&rec->view, &st->expected) && !raw &&
        rec->view.dtype != IC_DTYPE_INVALID) {
        ic_view_format_shape(&rec->view, got, sizeof(got));
        ic_result_fail(res, IC_CHECK_SHAPE, IC_RULE_EXCHANGE_SHAPE, IC_SIDE_PRODUCER,
                       "the export says shape %s for a %s array", got, want);
        return;
    }
    if (!ic_import_to_judge(st, res, IC_CHECK_SHAPE, "it holds flat bytes"))
        return;
    if (!ic_view_same_shape(&st->consumed.view, &st->expected)) {
        ic_view_format_shape(&st->consumed.view, got, sizeof(got));
        ic_result_fail(res, IC_CHECK_SHAPE, IC_RULE_EXCHANGE_SHAPE, IC_SIDE_CONSUMER,
                       "%s imported a %s array as shape %s", st->consumer_name, want, got);
    } else {
        ic_result_check(res, IC_CHECK_SHAPE, IC_CHECK_PASS, NULL);
    }
}

/* Element addresses: strides "as addressed bytes", so size-1 dimensions and equivalent
 * spellings of the same layout compare equal. */
static void ic_check_strides(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    struct ic_compare_result cmp;
    char index[96], a[128], b[128];

    if (ic_view_is_empty(&st->expected)) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, "no elements");
        return;
    }
    if (rec->have_view && st->produced.pointer_known && rec->view.data == p->data &&
        ic_view_same_shape(&rec->view, p) && ic_view_compare_addresses(p, &rec->view, &cmp) == 0 &&
        cmp.mismatches > 0) {
        ic_view_format_index(p, cmp.first_mismatch, index, sizeof(index));
        ic_view_format_strides(p, a, sizeof(a));
        ic_view_format_strides(&rec->view, b, sizeof(b));
        ic_result_fail(res, IC_CHECK_STRIDES, IC_RULE_EXCHANGE_ADDRESSES, IC_SIDE_PRODUCER,
                       "the export puts element %s elsewhere: producer strides %s, export "
                       "strides %s (bytes)",
                       index, a, b);
        return;
    }
    if (!st->consumer) {
        ic_result_check(res, IC_CHECK_STRIDES, rec->have_view ? IC_CHECK_PASS : IC_CHECK_SKIP,
                        NULL);
        return;
    }
    const struct ic_view *c = ic_consumer_view(st);
    if (!c || !rec->have_view || !st->consumed.pointer_known || !st->traits.typed) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, "%s",
                        !c                  ? "nothing was imported"
                        : !st->traits.typed ? "an untyped import has no strides of its own"
                                            : "the import cannot be located");
        return;
    }
    if (c->itemsize != rec->view.itemsize) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP,
                        "the import's elements have another size (see dtype)");
        return;
    }
    if (c->data != rec->view.data) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP,
                        "the import is a copy: its layout is the consumer's own");
        return;
    }
    if (!ic_view_same_shape(c, &rec->view)) {
        ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_SKIP, "shapes differ (see shape)");
        return;
    }
    if (ic_view_compare_addresses(&rec->view, c, &cmp) == 0 && cmp.mismatches > 0) {
        ic_view_format_index(c, cmp.first_mismatch, index, sizeof(index));
        ic_view_format_strides(&rec->view, a, sizeof(a));
        ic_view_format_strides(c, b, sizeof(b));
        ic_result_fail(res, IC_CHECK_STRIDES, IC_RULE_EXCHANGE_ADDRESSES, IC_SIDE_CONSUMER,
                       "%s reads element %s from another address: export strides %s, import "
                       "strides %s (bytes)",
                       st->consumer_name, index, a, b);
        return;
    }
    ic_result_check(res, IC_CHECK_STRIDES, IC_CHECK_PASS, NULL);
}

static void ic_check_device(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_view *p = &st->produced.view;
    const struct ic_export_record *rec = &st->rec;

    /* A protocol that does not carry the device id (the CUDA Array Interface) leaves it -1
     * unless the driver could tell it from the pointer; an empty one has pointer 0 and says
     * nothing about its memory at all. */
    if (rec->have_view && ic_facts(st)->device_from_driver && rec->view.data == 0) {
        ic_result_check(res, IC_CHECK_DEVICE, IC_CHECK_SKIP,
                        "an empty CUDA array interface has pointer 0: its device is unknown");
        return;
    }
    /* Another id of host memory is the same memory: the protocol's own rules judge the id
     * (dlpack.device), not this check, which is about where the elements are. */
    bool id_known = rec->view.device_id >= 0;
    if (rec->have_view &&
        !ic_device_same_memory(rec->view.device_type, id_known ? rec->view.device_id : p->device_id,
                               p->device_type, p->device_id)) {
        ic_result_fail(res, IC_CHECK_DEVICE, IC_RULE_EXCHANGE_DEVICE, IC_SIDE_PRODUCER,
                       "the export says device (%d, %lld) for an array on (%d, %lld)",
                       rec->view.device_type, (long long)rec->view.device_id, p->device_type,
                       (long long)p->device_id);
        return;
    }
    if (st->consumer && st->have_consumed &&
        !ic_device_same_memory(st->consumed.view.device_type, st->consumed.view.device_id,
                               p->device_type, p->device_id)) {
        ic_result_fail(res, IC_CHECK_DEVICE, IC_RULE_EXCHANGE_DEVICE, IC_SIDE_CONSUMER,
                       "%s's import is on device (%d, %lld), the array on (%d, %lld)",
                       st->consumer_name, st->consumed.view.device_type,
                       (long long)st->consumed.view.device_id, p->device_type,
                       (long long)p->device_id);
        return;
    }
    ic_result_check(res, IC_CHECK_DEVICE,
                    rec->have_view || st->have_consumed ? IC_CHECK_PASS : IC_CHECK_SKIP, NULL);
}

/* --- Read-only ------------------------------------------------------------------------------ */

/* The import side of read-only, where the import shares the export's memory. */
static void ic_check_import_readonly(struct ic_case_state *st, struct ic_result *res,
                                     bool export_ro, char *note, size_t size)
{
    const struct ic_described *c = &st->consumed;
    if (!c->readonly_known) {
        ic_note_append(note, size, "%s cannot say whether its array is read-only",
                       st->consumer_name);
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, "%s", note);
        return;
    }
    if (export_ro && !c->view.readonly) {
        if (st->traits.readonly == IC_READONLY_NEVER) {
            ic_note_append(note, size, "%s cannot mark arrays read-only: the import is writable",
                           st->consumer_name);
            ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, "%s", note);
        } else {
            ic_result_fail(res, IC_CHECK_READONLY, IC_RULE_EXCHANGE_READONLY, IC_SIDE_CONSUMER,
                           "the export is read-only but %s's import, which shares its memory, "
                           "is writable",
                           st->consumer_name);
        }
        return;
    }
    if (!export_ro && c->view.readonly && st->rec.view.readonly_known &&
        st->traits.readonly == IC_READONLY_BOTH) {
        ic_result_fail(res, IC_CHECK_READONLY, IC_RULE_EXCHANGE_WRITABLE, IC_SIDE_CONSUMER,
                       "the export is writable but %s's import is read-only", st->consumer_name);
        return;
    }
    ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, "%s", note);
}

/* Read-only matters where memory is shared: a copy's writability is its owner's business,
 * so each hop is judged only when its two sides are the same memory, and an empty array has
 * no memory to protect. */
static void ic_check_readonly(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    const struct ic_view *p = &st->produced.view;
    bool producer_ro = st->produced.readonly_known && p->readonly;
    char note[IC_NOTE_MAX] = "";

    if (!rec->have_view) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP, "no export");
        return;
    }
    if (ic_view_is_empty(&st->expected)) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_SKIP,
                        "an empty array has no memory to protect");
        return;
    }
    bool export_shares = st->produced.pointer_known && rec->view.data == p->data;
    if (producer_ro && rec->view.readonly_known && !rec->view.readonly) {
        if (export_shares) {
            ic_result_fail(res, IC_CHECK_READONLY, ic_facts(st)->readonly_rule, IC_SIDE_PRODUCER,
                           "the array is read-only but the export, which shares its memory, "
                           "says writable: a consumer may write into it");
            return;
        }
        snprintf(note, sizeof(note), "the export is a writable copy of a read-only array");
    }
    if (producer_ro && !rec->view.readonly_known)
        snprintf(note, sizeof(note),
                 "the array is read-only and its export cannot say so (a legacy DLPack "
                 "capsule, an Arrow array; see %s): the import is judged by the producer's flag",
                 ic_rule_id(ic_facts(st)->readonly_rule));
    if (!st->consumer || !st->have_consumed) {
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, "%s", note);
        return;
    }
    if (st->consumed.pointer_known && st->consumed.view.data != rec->view.data) {
        ic_note_append(note, sizeof(note), "the import is a copy: its writability is %s's own",
                       st->consumer_name);
        ic_result_check(res, IC_CHECK_READONLY, IC_CHECK_PASS, "%s", note);
        return;
    }
    bool export_ro = rec->view.readonly_known ? rec->view.readonly : producer_ro;
    ic_check_import_readonly(st, res, export_ro, note, sizeof(note));
}

/* --- The verdict ---------------------------------------------------------------------------- */

/* The checks of a case whose export is broken: the export's own contents and properties,
 * and the consumer's side marked as not judged. */
static void ic_judge_export_only(struct ic_case_state *st, struct ic_result *res)
{
    static const enum ic_check import_side[] = {
        IC_CHECK_ZERO_COPY, IC_CHECK_CONTENTS, IC_CHECK_DTYPE,    IC_CHECK_SHAPE,
        IC_CHECK_STRIDES,   IC_CHECK_DEVICE,   IC_CHECK_READONLY, IC_CHECK_COMPUTE};
    for (size_t i = 0; i < sizeof(import_side) / sizeof(import_side[0]); i++)
        ic_result_check(res, import_side[i], IC_CHECK_SKIP,
                        "not judged: %s's import of a broken export", st->consumer_name);
    ic_check_export_contents(st, res);
}

/* Whether the protocol has a name for the dtype: typestr and PEP 3118 have none for
 * bfloat16, for example. */
static bool ic_protocol_spells(enum ic_protocol protocol, enum ic_dtype dtype)
{
    const struct ic_dtype_info *info = ic_dtype_info(dtype);
    switch (ic_protocol_ops(protocol)->facts.dtype_names) {
    case IC_NAMES_TYPESTR:
        return info && info->typestr_kind != 0;
    case IC_NAMES_PEP3118:
        return info && info->pep3118 != NULL;
    default:
        return true;
    }
}

/* An array whose dtype the protocol cannot name, exported as raw elements of the right size:
 * nothing is wrong, but the exchange cannot carry the dtype, so it is not tested further. */
static bool ic_unspellable(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    if (ic_protocol_spells(st->c->protocol, st->c->dtype) || !rec->have_view ||
        rec->view.dtype != IC_DTYPE_INVALID || rec->view.itemsize != st->expected.itemsize ||
        res->checks[IC_CHECK_EXPORT].status == IC_CHECK_FAIL)
        return false;
    ic_result_set(res, IC_OUTCOME_UNSUPPORTED,
                  "%s has no name for %s: %s exported raw %d-byte elements (%s), so the dtype "
                  "cannot survive the exchange",
                  ic_protocol_id(st->c->protocol), ic_dtype_name(st->c->dtype), st->c->producer,
                  st->expected.itemsize, rec->detail);
    st->refused = true;
    return true;
}

/* The proxy handed the consumer an export it must refuse (ic_protocol.h): a refusal, of any
 * exception, passes; an import breaks the record's rule. */
static void ic_judge_required_consumer_refusal(struct ic_case_state *st, struct ic_result *res,
                                               bool imported)
{
    const struct ic_export_record *rec = &st->rec;
    if (imported)
        ic_result_fail(res, IC_CHECK_IMPORT, rec->consumer_refusal_rule, IC_SIDE_CONSUMER,
                       "%s imported %s, which it must refuse", st->consumer_name,
                       rec->consumer_refusal_why);
    else if (st->consumer_raised)
        ic_result_check(res, IC_CHECK_IMPORT, IC_CHECK_PASS, "%s refused %s: %s: %s",
                        st->consumer_name, rec->consumer_refusal_why, st->consumer_exc.type,
                        st->consumer_exc.message);
    st->refused = true;
}

void ic_judge_exchange(struct ic_case_state *st, struct ic_result *res)
{
    bool imported = st->imported != NULL;
    if (st->rec.unplayable[0]) {
        /* The variant's producer could not be played: nothing of this exchange is anyone's. */
        ic_result_set(res, IC_OUTCOME_UNSUPPORTED, "%s", st->rec.unplayable);
        st->refused = true;
        return;
    }
    if (imported && st->consumer && st->rec.producer_raised && !st->rec.have_view) {
        /* The producer refused every request, so whatever the consumer returned did not come
         * through the protocol (NumPy wraps such an object in a 0-d object array): the case
         * is the producer's refusal. */
        st->consumer_raised = true;
        snprintf(st->consumer_exc.type, sizeof(st->consumer_exc.type), "nothing");
        snprintf(st->consumer_exc.message, sizeof(st->consumer_exc.message),
                 "it returned an array of dtype %s that did not come through the protocol",
                 st->consumed.dtype_name[0] ? st->consumed.dtype_name : "unknown");
        imported = false;
    }
    ic_check_device_pointers(st);
    ic_check_export(st, res);
    if (ic_unspellable(st, res))
        return;
    if (st->rec.consumer_refusal_required && st->consumer) {
        ic_judge_required_consumer_refusal(st, res, imported);
        return;
    }
    ic_check_import(st, res, imported);
    if (!imported)
        return;
    if (res->checks[IC_CHECK_EXPORT].status == IC_CHECK_FAIL && st->consumer) {
        /* A consumer cannot be expected to read a broken export right: what it made of it
         * is not judged, so the failure stays the producer's. */
        ic_judge_export_only(st, res);
        return;
    }
    ic_check_zero_copy(st, res);
    ic_check_contents(st, res);
    ic_check_dtype(st, res);
    ic_check_shape(st, res);
    ic_check_strides(st, res);
    ic_check_device(st, res);
    ic_check_readonly(st, res);
}

/* --- Computing with the import ------------------------------------------------------------- */

bool ic_judge_compute_wanted(struct ic_case_state *st, struct ic_result *res)
{
    /* Nothing imported to judge (a refusal, interopcheck's own consumer, an unspellable
     * dtype), or a broken export whose import is not judged (its compute check says so). */
    if (!st->consumer || !st->imported || !st->have_consumed || st->consumer_raised ||
        st->refused || res->checks[IC_CHECK_EXPORT].status == IC_CHECK_FAIL)
        return false;
    /* An import already found harmful (wrong values, dtype, shape, addresses, memory) is not
     * computed with: what its library makes of it tells nothing new, and a crash there would
     * hide the finding made. A nonconformant one (a request spelled wrong) holds the right
     * elements, and its library may well be unable to use it. */
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        const struct ic_check_result *check = &res->checks[i];
        if (check->status == IC_CHECK_FAIL && check->severity == IC_CLASS_HARMFUL) {
            ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                            "not computed with: the import failed its %s check (%s)",
                            ic_check_name((enum ic_check)i), ic_rule_id(check->rule));
            return false;
        }
    }
    return true;
}

/* The result of the consumer's operation as the elements to compare with the pattern: itself
 * for a typed import; for an untyped one (flat raw elements), its flat elements in the
 * import's memory order. False (with the check skipped) when it cannot be read so. */
static bool ic_compute_elements(struct ic_case_state *st, struct ic_result *res,
                                struct ic_view *ret)
{
    const struct ic_view *r = &st->computed_desc.view;
    const struct ic_view *y = &st->consumed.view;
    if (st->traits.typed) {
        *ret = *r;
        return true;
    }
    if (!ic_view_is_c_contiguous(r)) {
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                        "the result of an untyped import is not contiguous: its raw elements "
                        "have no order to compare in");
        return false;
    }
    *ret = ic_untyped_elements(st, r, ic_untyped_order(st, y));
    return true;
}

void ic_judge_compute(struct ic_case_state *st, struct ic_result *res)
{
    const char *who = st->consumer_name;
    char call[160], note[IC_NOTE_MAX], text[IC_NOTE_MAX];
    ic_probe_compute_call(st->consumer, call, sizeof(call));
    const char *op = call[0] ? call : "compute()";

    if (st->compute_rc == IC_ENOTFOUND) {
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                        "the %s probe offers no compute(): the import was not computed with", who);
        return;
    }
    if (st->compute_rc == IC_EUNSUPPORTED) {
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP, "%s cannot compute with %s: %s", who,
                        ic_dtype_name(st->c->dtype), st->compute_why);
        return;
    }
    if (st->compute_rc < 0 && st->compute_fails_natively) {
        ic_py_exc_format(&st->native_compute_exc, text, sizeof(text));
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                        "%s's %s raised on the import, and on an array of its own of that dtype "
                        "and device too (%s): what the library lacks there, not what the "
                        "exchange did",
                        who, op, text);
        return;
    }
    if (st->compute_rc < 0) {
        ic_py_exc_format(&st->compute_exc, text, sizeof(text));
        ic_result_fail(res, IC_CHECK_COMPUTE, IC_RULE_EXCHANGE_COMPUTE_ERROR, IC_SIDE_CONSUMER,
                       "%s accepted the import, then its %s on it raised %s", who, op, text);
        return;
    }
    if (!st->have_computed) {
        /* The probe's describe() is the tool's side: an error, never the library's. */
        ic_py_exc_format(&st->compute_exc, text, sizeof(text));
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe could not describe the result of its compute(): %s", who, text);
        st->refused = true;
        return;
    }
    const struct ic_view *r = &st->computed_desc.view;
    const struct ic_view *y = &st->consumed.view;
    char want[128], got[128];
    if (y->dtype != st->c->dtype) {
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                        "the import holds raw %s elements, not %s: its result cannot be compared "
                        "with the pattern",
                        st->consumed.dtype_name, ic_dtype_name(st->c->dtype));
        return;
    }
    if (r->dtype != y->dtype) {
        /* The operation is the probe's choice, and it must keep the dtype. */
        const char *made =
            st->computed_desc.dtype_name[0] ? st->computed_desc.dtype_name : "unnamed";
        ic_result_set(res, IC_OUTCOME_ERROR,
                      "the %s probe's compute() (%s) made %s %s array from its %s import: its "
                      "operation must keep the dtype",
                      who, op, ic_text_article(made), made, ic_dtype_name(y->dtype));
        st->refused = true;
        return;
    }
    if (!ic_view_same_shape(r, y)) {
        ic_view_format_shape(y, want, sizeof(want));
        ic_view_format_shape(r, got, sizeof(got));
        ic_result_fail(res, IC_CHECK_COMPUTE, IC_RULE_EXCHANGE_COMPUTE, IC_SIDE_CONSUMER,
                       "%s's %s on its import of shape %s made shape %s", who, op, want, got);
        return;
    }
    if (!ic_view_is_empty(r) && st->consumed.pointer_known && st->computed_desc.pointer_known &&
        r->data == y->data) {
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP,
                        "%s's %s returned the import's own memory: nothing was computed", who, op);
        return;
    }
    struct ic_view elements;
    if (!ic_compute_elements(st, res, &elements))
        return;
    snprintf(text, sizeof(text), "the result of %s's %s", who, op);
    int equal = ic_pattern_compare(st, &elements, st->read_stream, text, note, sizeof(note));
    if (equal > 0)
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_PASS, "%s on the import", op);
    else if (equal == 0 || equal == IC_EFAULT)
        ic_result_fail(res, IC_CHECK_COMPUTE, IC_RULE_EXCHANGE_COMPUTE, IC_SIDE_CONSUMER,
                       "%s computed with an import that holds the right elements, and got other "
                       "values: %s",
                       who, note);
    else
        ic_result_check(res, IC_CHECK_COMPUTE, IC_CHECK_SKIP, "%s", note);
}

static void ic_check_lifetime(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_export_record *rec = &st->rec;
    char text[IC_NOTE_MAX];

    if (!rec->lifetime_checked) {
        ic_result_check(res, IC_CHECK_LIFETIME, IC_CHECK_SKIP,
                        "the %s protocol has no lifetime rules to check",
                        ic_protocol_id(st->ops->protocol));
        return;
    }
    const struct ic_diag_entry *error = ic_diag_first_error(&rec->lifetime);
    ic_diag_format(&rec->lifetime, text, sizeof(text));
    if (error)
        ic_result_fail(res, IC_CHECK_LIFETIME, error->rule, error->side, "%s", text);
    else
        ic_result_check(res, IC_CHECK_LIFETIME, IC_CHECK_PASS, "%s", text);
}

/* A failure the culprit's probe documents as a known deviation of its library keeps its
 * place, in the documented class, with the library's link. */
static void ic_apply_deviations(struct ic_case_state *st, struct ic_result *res)
{
    for (int i = 0; i < IC_CHECK_COUNT; i++) {
        struct ic_check_result *check = &res->checks[i];
        if (check->status != IC_CHECK_FAIL)
            continue;
        struct ic_probe *culprit = check->side == IC_SIDE_PRODUCER   ? st->producer
                                   : check->side == IC_SIDE_CONSUMER ? st->consumer
                                                                     : NULL;
        char link[IC_DOCUMENTED_MAX];
        if (culprit &&
            ic_probe_deviation(culprit, check->rule, check->side, st->c, link, sizeof(link))) {
            check->severity = IC_CLASS_DOCUMENTED;
            if (!res->documented[0])
                snprintf(res->documented, sizeof(res->documented), "%s", link);
        }
    }
}

void ic_judge_conclude(struct ic_case_state *st, struct ic_result *res)
{
    ic_check_lifetime(st, res);
    ic_apply_deviations(st, res);
    char documented[IC_DOCUMENTED_MAX];
    snprintf(documented, sizeof(documented), "%s", res->documented);
    if (ic_result_primary_check(res) >= 0) {
        ic_result_conclude(res);
        /* The link is the case's only where its failure is the documented one: a deviation
         * documented by one side beside a worse failure of the other (mlx's float64 import
         * beside torch's negation view export) must not lend the other's finding its link. */
        int primary = ic_result_primary_check(res);
        if (res->checks[primary].severity == IC_CLASS_DOCUMENTED)
            snprintf(res->documented, sizeof(res->documented), "%s", documented);
        else
            res->documented[0] = '\0';
        return;
    }
    if (st->refused)
        return;
    bool verified = false;
    for (int i = 0; i < IC_CHECK_COUNT; i++)
        verified = verified || res->checks[i].status == IC_CHECK_PASS;
    if (!verified) {
        char why[IC_NOTE_MAX] = "";
        for (int i = 0; i < IC_CHECK_COUNT && !why[0]; i++) {
            if (res->checks[i].status == IC_CHECK_SKIP && res->checks[i].note[0])
                snprintf(why, sizeof(why), "%s: %s", ic_check_name(i), res->checks[i].note);
        }
        ic_result_set(res, IC_OUTCOME_ERROR, "no check could be made, so nothing was verified (%s)",
                      why[0] ? why : "every check was skipped");
        return;
    }
    ic_result_conclude(res);
}
