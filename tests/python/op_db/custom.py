"""ops.def's `custom`: the one op every custom op (kiln.tile.op) is a call of; it has no PyTorch
counterpart. tests/python/test_tile_ops.py and tests/unit/tile/tile_op_test.cc check custom ops."""
from . import skip

skip("custom", "the carrier of user-registered custom ops (no PyTorch oracle; see tests/python/test_tile_ops.py)")
