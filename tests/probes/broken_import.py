"""A probe for a library that is installed but whose import raises (a missing shared library,
a broken dependency): every run that selects it exits with status 3 and says why."""


def load():
    raise ImportError("libbroken.so.1: cannot open shared object file: No such file or directory")
