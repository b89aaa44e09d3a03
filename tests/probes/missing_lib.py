"""A probe for a library that is not installed: its import error is recorded, with the
message, and the run goes on."""


def load():
    import interopcheck_no_such_library  # noqa: F401

    return {}
