"""A probe whose library import kills the process, as a broken C extension can: interopcheck
must record the library as crashed on import and test every other library."""

import os
import signal


def load():
    os.kill(os.getpid(), signal.SIGSEGV)
