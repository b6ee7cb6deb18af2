"""kiln.backends.mps: no Apple GPU backend."""


def is_available():
    return False


def is_built():
    return False
