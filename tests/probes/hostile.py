"""A library whose messages are hostile text, for the HTML dashboard's test (test_html.py).

Its arrays wrap NumPy arrays and exchange over DLPack only. Every message it produces (its
refusals, its notes on missing dtypes) carries markup, script, quotes, CDATA ends, backticks,
Markdown table pipes, control characters, a lone surrogate and, for one dtype, megabytes of
text: a report must carry all of it as text, and every view of the report must show it as text.

  float32   exports and imports correctly                          -> pass
  int8      __dlpack__ refuses with BufferError(HOSTILE)            -> unsupported
  int16     __dlpack__ refuses with ValueError(REFUSAL)             -> fail (dlpack 2.3 errors)
  uint8     __dlpack__ refuses with BufferError(megabytes of text)  -> unsupported
  int32     consume() refuses with BufferError(REFUSAL)             -> unsupported (as a consumer)
  bool, float16  not built; the note on why is HOSTILE              -> unsupported

It is loaded only with --probe-dir tests/probes; the built-in probe set never sees it.
"""

import _probekit

np = None

# Everything a renderer must not interpret: markup that would run script if parsed, a script
# element end inside what may be an inline script, a CDATA end, quotes of both kinds, a template
# literal, Markdown and table syntax, C0 controls, DEL, a lone surrogate, and the line and
# paragraph separators that end a JavaScript string literal in older engines.
HOSTILE = (
    "hostile<script>alert(1)</script><img src=x onerror=\"window.__pwned=1\">"
    "</script><!-- ]]> --> 'single' \"double\" `${window.__pwned=2}` | a | b |"
    " **bold** [link](javascript:alert(1)) &amp; &lt;"
    " ctl:\x01\x02\x07\x1b[31m\x7f seps:\u2028\u2029 end"
)

# The refusals also carry a lone surrogate, which no UTF-8 text can hold: the driver must turn
# it into something printable. (hostile_text.py sends one through load()'s notes too.)
REFUSAL = HOSTILE + " surrogate:\ud800 after"

# A few megabytes: long enough to find any renderer that copies, scans or lays out a message
# without a bound.
HUGE = "<b>huge</b> " + "x" * (3 * 1024 * 1024) + " <script>window.__pwned=3</script>"


class HostileArray:
    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kind = self.array.dtype.name
        if kind == "int8":
            raise BufferError(HOSTILE)
        if kind == "int16":
            raise ValueError(REFUSAL)
        if kind == "uint8":
            raise BufferError(HUGE)
        return self.array.__dlpack__(stream=stream, max_version=max_version)


def load():
    global np
    import numpy as _np

    np = _np
    return {
        "version": "6.6.6<b>-hostile</b>",
        "devices": ["cpu"],
        "dtypes": ["float32", "int8", "int16", "uint8", "int32"],
        "layouts": ["contiguous", "flat"],
        "notes": {"float16": HOSTILE, "bool": HOSTILE},
        "readonly": False,
        "exports": {"dlpack": {"call": "HostileArray.__dlpack__ <i>" + HOSTILE + "</i>"}},
        "imports": {
            "dlpack": {"call": "numpy.from_dlpack(obj)", "zero_copy": True, "typed": True,
                       "readonly": True},
        },
    }


def build(data, dtype, ops, readonly=False):
    return HostileArray(_probekit.apply_ops(_probekit.numpy_from_bytes(data, dtype), ops))


def describe(x):
    return _probekit.numpy_like_description(x.array if isinstance(x, HostileArray) else x)


def consume(obj, protocol, dtype):
    if dtype == "int32":
        raise BufferError(REFUSAL)
    return np.from_dlpack(obj)
