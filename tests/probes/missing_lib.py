"""A probe for a library that is not installed: its import raises ModuleNotFoundError for the
library's own module (MODULE), so the library is recorded as not installed, with the message,
and the run goes on. Only when a run names it is that an error (exit status 3)."""

MODULE = "interopcheck_no_such_library"


def load():
    import interopcheck_no_such_library  # noqa: F401

    return {}
