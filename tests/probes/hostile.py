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

_testkit = _probekit.sibling(__file__, "_testkit")

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


class HostileArray(_testkit.RefusingArray):
    REFUSALS = {"int8": (BufferError, HOSTILE), "int16": (ValueError, REFUSAL),
                "uint8": (BufferError, HUGE)}


def load():
    return _testkit.load_numpy_dlpack(
        "HostileArray.__dlpack__ <i>" + HOSTILE + "</i>",
        version="6.6.6<b>-hostile</b>",
        dtypes=["float32", "int8", "int16", "uint8", "int32"],
        layouts=["contiguous", "flat"],
        notes={"float16": HOSTILE, "bool": HOSTILE})


def build(data, dtype, ops, readonly=False):
    return HostileArray(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "int32":
        raise BufferError(REFUSAL)
    return _testkit.np.from_dlpack(obj)
