"""kiln.backends.openmp: kiln's CPU kernels run their parallel loops with OpenMP."""


def is_available():
    return True
