/*
 * The relay check: a library that takes an array in over one protocol and hands it on over
 * another (pyarrow imports an Arrow array, then offers __dlpack__) must hand on what it took
 * in. The consumer's import is exported through its probe's export() over DLPack and read by
 * interopcheck's own DLPack consumer, which validates the capsule as for any DLPack case; the
 * values, dtype and shape it holds are then checked against the case's pattern.
 *
 * A refusal to export is not judged here (a library may decline DLPack for bit-packed
 * booleans or arrays with nulls), nor is the export's validity: the dlpack cases with this
 * library as producer judge both. The record of the relayed export is this file's own, and
 * it is released here, its deleter calls counted by the DLPack module's finish op.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>

#include "ic_error.h"
#include "ic_exchange_state.h"

/* Judges the view the relayed export gave: dtype, shape, then the elements. */
static void ic_relay_judge(struct ic_case_state *st, struct ic_result *res,
                           const struct ic_view *got)
{
    const char *who = st->consumer_name;
    char note[IC_NOTE_MAX], want[128], seen[128];
    if (got->dtype != st->c->dtype) {
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported %s elements and hands them on over DLPack as %s", who,
                       ic_dtype_name(st->c->dtype),
                       got->dtype == IC_DTYPE_INVALID ? "a dtype of no name"
                                                      : ic_dtype_name(got->dtype));
        return;
    }
    if (!ic_view_same_shape(got, &st->expected)) {
        ic_view_format_shape(&st->expected, want, sizeof(want));
        ic_view_format_shape(got, seen, sizeof(seen));
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported shape %s and hands on shape %s over DLPack", who, want, seen);
        return;
    }
    int equal = ic_pattern_compare(st, got, 0, "its DLPack export", note, sizeof(note));
    if (equal > 0)
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_PASS,
                        "handed on over DLPack with the values it imported");
    else if (equal == 0 || equal == IC_EFAULT)
        ic_result_fail(res, IC_CHECK_RELAY, IC_RULE_EXCHANGE_RELAY, IC_SIDE_CONSUMER,
                       "%s imported the right elements and hands on others over DLPack: %s", who,
                       note);
    else
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP, "%s", note);
}

void ic_relay_run(struct ic_case_state *st, struct ic_result *res)
{
    const struct ic_protocol_ops *dlpack = ic_protocol_ops(IC_PROTOCOL_DLPACK);
    struct ic_export_record rec;
    struct ic_py_exc exc;
    char text[IC_DIAGNOSTIC_MAX];
    PyObject *handle = NULL;

    if (st->c->variant != IC_VARIANT_ARROW_RELAY_DLPACK)
        return;
    ic_export_record_init(&rec, IC_PROTOCOL_DLPACK, IC_VARIANT_NONE);
    PyObject *obj = ic_probe_export(st->consumer, st->imported, IC_PROTOCOL_DLPACK, &exc);
    if (!obj) {
        ic_py_exc_format(&exc, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "the %s probe could not export its import over DLPack: %s",
                        st->consumer_name, text);
        return;
    }
    if (dlpack->reference_consume(obj, &rec, &handle) < 0) {
        ic_py_fetch(&exc);
        ic_py_exc_format(&exc, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "interopcheck's DLPack consumer failed on the relay: %s", text);
    } else if (rec.producer_raised) {
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "%s declined to hand its import on over DLPack (%s: %s)", st->consumer_name,
                        rec.producer_exc_type, rec.producer_exc_message);
    } else if (!rec.have_view) {
        ic_diag_format(&rec.diag, text, sizeof(text));
        ic_result_check(res, IC_CHECK_RELAY, IC_CHECK_SKIP,
                        "%s's DLPack export of its import could not be read (%s): the dlpack "
                        "cases judge its exports",
                        st->consumer_name, text);
    } else {
        ic_relay_judge(st, res, &rec.view);
    }
    /* The consumer is done with the capsule: its deleter runs now, counted by finish. */
    Py_CLEAR(handle);
    if (dlpack->finish)
        dlpack->finish(obj, &rec);
    Py_CLEAR(rec.owned);
    Py_DECREF(obj);
}
