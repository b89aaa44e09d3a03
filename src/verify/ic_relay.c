/*
 * The relay check: a library that takes an array in over one protocol and hands it on over
 * another (pyarrow imports an Arrow array, then offers __dlpack__) must hand on what it took
 * in. The consumer's import is exported through its probe's export() over the variant's relay
 * protocol (ic_variant_relay_protocol) and read by interopcheck's own consumer of that
 * protocol, which validates the export as in any case of it; the values, dtype and shape it
 * holds are then checked against the case's pattern.
 *
 * A refusal to export is not judged here (pyarrow declines DLPack for bit-packed booleans),
 * nor is the export's validity: the cases of that protocol with this library as producer
 * judge both. The record of the relayed export is this file's own, and it is released here,
 * its lifetime calls counted by the protocol's finish op.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>

#include "ic_error.h"
#include "ic_exchange_state.h"

/* Judges the view the relayed export gave: dtype, shape, then the elements. */
static void ic_relay_judge(struct ic_case_state *st, struct ic_result *res, const char *over,
                           const struct ic_view *got)
{
    const char *who = st->consumer_name;
    char note[IC_NOTE_MAX], want[128], seen[128];
    if (got->dtype != st->c->dtype) {
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported %s elements and hands them on over %s as %s", who,
                       ic_dtype_name(st->c->dtype), over,
                       got->dtype == IC_DTYPE_INVALID ? "a dtype of no name"
                                                      : ic_dtype_name(got->dtype));
        return;
    }
    if (!ic_view_same_shape(got, &st->expected)) {
        ic_view_format_shape(&st->expected, want, sizeof(want));
        ic_view_format_shape(got, seen, sizeof(seen));
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported shape %s and hands on shape %s over %s", who, want, seen, over);
        return;
    }
    int equal = ic_pattern_compare(st, got, 0, "what it hands on", note, sizeof(note));
    if (equal > 0)
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_PASS,
                        "handed on over %s with the values it imported", over);
    else if (equal == 0 || equal == IC_EFAULT)
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported the right elements and hands on others over %s: %s", who, over,
                       note);
    else
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP, "%s", note);
}

void ic_relay_run(struct ic_case_state *st, struct ic_result *res)
{
    struct ic_export_record rec;
    struct ic_py_exc exc;
    char text[IC_DIAGNOSTIC_MAX];
    PyObject *handle = NULL;

    int relay = ic_variant_relay_protocol(st->c->variant);
    if (relay < 0)
        return;
    const struct ic_protocol_ops *ops = ic_protocol_ops((enum ic_protocol)relay);
    const char *over = ic_protocol_id((enum ic_protocol)relay);
    ic_export_record_init(&rec, (enum ic_protocol)relay, IC_VARIANT_NONE);
    PyObject *obj = ic_probe_export(st->consumer, st->imported, (enum ic_protocol)relay, &exc);
    if (!obj) {
        ic_py_exc_format(&exc, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "the %s probe could not export its import over %s: %s", st->consumer_name,
                        over, text);
        return;
    }
    if (ops->reference_consume(obj, &rec, &handle) < 0) {
        ic_py_fetch(&exc);
        ic_py_exc_format(&exc, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "interopcheck's %s consumer failed on the relay: %s", over, text);
    } else if (rec.producer_raised) {
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "%s declined to hand its import on over %s (%s: %s)", st->consumer_name,
                        over, rec.producer_exc_type, rec.producer_exc_message);
    } else if (!rec.have_view) {
        ic_diag_format(&rec.diag, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "%s's %s export of its import could not be read (%s): the %s cases "
                        "judge its exports",
                        st->consumer_name, over, text, over);
    } else {
        ic_relay_judge(st, res, over, &rec.view);
    }
    /* Done with the export: its deleter (release) runs now, counted by finish. */
    Py_CLEAR(handle);
    if (ops->finish)
        ops->finish(obj, &rec);
    Py_CLEAR(rec.owned);
    Py_DECREF(obj);
}
