"""A library whose every word is hostile text, for interopcheck's report tests.

Its arrays wrap NumPy arrays and exchange correctly over DLPack, but its refusals, errors,
notes, version and a dying worker's last output carry what breaks naive writers: markup and
script, quotes of every kind, "]]>", backticks, pipes, emphasis, Markdown block starters,
control characters (C0 without NUL, ESC, DEL, C1), noncharacters, a lone surrogate, text that
looks like escapes or invalid UTF-8, real invalid UTF-8 on stderr, and megabytes of text. What
happens depends on the dtype:

  float32   exports and imports correctly                                  -> pass
  int8      __dlpack__ refuses with BufferError(HOSTILE)                    -> unsupported
  int16     __dlpack__ refuses with ValueError(HOSTILE)                     -> fail
  int32     __dlpack__ refuses with BufferError of about 4 MB of text       -> unsupported, capped
  int64     consume() writes raw bytes to stderr and dies with SIGSEGV      -> crash
  bool, float16, complex64: missing, with notes of HOSTILE and of megabytes -> unsupported

Its load() info carries megabytes too, where nothing else caps them: the "call" of its DLPack
export and import is HOSTILE and a megabyte (the report keeps IC_TEXT_FIELD_CAP bytes), and its
REPRO import lines make every reproducer longer than a report keeps (IC_TEXT_SCRIPT_CAP), so
each finding says why it has none.

It is loaded only with --probe-dir tests/probes. tests/integration/test_reports.py reads
HOSTILE, MEGA and CALL from this file to know what to look for.
"""

import os
import signal

import _probekit

_testkit = _probekit.sibling(__file__, "_testkit")

HOSTILE = (
    "lone:\ud800 ctl:\x01\x02\x07\x08\x0b\x0c\x0e\x1b[31m\x1f\x7f\x80\x85\x9f "
    "nonchar:\ufdd0\ufffe\uffff <script>alert(1)</script> \"dq\" 'sq' `bt` "
    "\u201cc\u201d \u2018s\u2019 \u00abg\u00bb ]]> <![CDATA[x]]> &amp; &#0; "
    "| pipe | **b** __u__ *e* _e_ ~~d~~ [l](javascript:alert(3)) <http://a.b> www.x.com "
    "$x$ :smile: @someone\n# h\n> q\n- i\r\n1. i\n    code\n---\n"
    "esc: \\xff \\xed\\xa0\\x80 \\udc80 %s %n end"
)

# About 4 MB, mostly two-byte characters, so that any cut lands inside one unless it is careful.
MEGA = "\u00e9" * 2_000_000 + HOSTILE

# The "call" of the export and the import: a library's word, shown by `list` and kept in
# reports. A megabyte each, so that the whole load() info stays well within what a worker may
# send in one message.
CALL = HOSTILE.replace("\ud800", "") + "\u00e9" * 500_000

# How a reproducer would spell the library: the import lines are a comment of megabytes.
REPRO = {
    "import": "import numpy as np\n# " + "\u00e9" * 100_000,
    "ns": "np",
    "build": "np.array(values, dtype={dtype})",
    "consume": {"dlpack": "np.from_dlpack({obj})"},
}

# What a dying worker leaves on stderr: bytes, not text.
STDERR_BYTES = (
    "\u00e9".encode() * 300
    + b"\xff\xfe<script>alert(4)</script>\xed\xa0\x80 ]]> | `x` \x01\x1b[31m\xc3 end\xe2\x82"
)


class HostileArray(_testkit.RefusingArray):
    REFUSALS = {"int8": (BufferError, HOSTILE), "int16": (ValueError, HOSTILE),
                "int32": (BufferError, MEGA)}


def load():
    return _testkit.load_numpy_dlpack(
        CALL,
        import_call=CALL,
        version="0.1+<b>|`v`|</b>",
        dtypes=["float32", "int8", "int16", "int32", "int64"],
        layouts=["contiguous", "flat"],
        # Notes travel as JSON from the worker; the lone surrogate in HOSTILE must arrive as
        # U+FFFD, not make the probe invalid.
        notes={
            "bool": HOSTILE,
            "float16": MEGA.replace("\ud800", ""),
            "complex64": "\x01\x7f|`**`|",
        })


def build(data, dtype, ops, readonly=False):
    return HostileArray(_testkit.numpy_array(data, dtype, ops))


describe = _testkit.describe


def consume(obj, protocol, dtype):
    if dtype == "int64":
        os.write(2, STDERR_BYTES)
        os.kill(os.getpid(), signal.SIGSEGV)
    return _testkit.np.from_dlpack(obj)
