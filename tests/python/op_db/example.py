"""A few entries showing the form (the family modules hold the rest)."""
from op_db import OpInfo, Sample, T, register


def _binary(dtype):
    yield Sample((T((3, 4)), T((3, 4))), name="same shape")
    yield Sample((T((2, 3, 4), layout="transposed"), T((4,))), name="broadcast, transposed")
    yield Sample((T((5,), layout="strided"), 2.5), name="python scalar")
    yield Sample((T(()), T((0, 3))), name="0-d and zero-size")


register(OpInfo("add", _binary, bf16=True))
register(OpInfo("mul", _binary, bf16=True))
