"""kiln: a deep-learning framework and compiler with a PyTorch-like API.

    import kiln
    x = kiln.randn(4, 8, requires_grad=True)
    loss = (x.relu() ** 2).sum()
    loss.backward()

Every op of kiln's registry is a function here (kiln.add, kiln.softmax, ...) and, where PyTorch
has one, a Tensor method. See docs/python-api.md.
"""
import os as _os

# libgomp's default (active) wait policy makes idle OpenMP workers spin, and on a busy machine a
# parallel region then waits for a descheduled spinner (a 128x32x128 matmul: 11 ms instead of
# 0.01 ms). libgomp reads this once, when kiln's extension loads it just below; a value the user
# set wins. See docs/performance.md.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")
from . import _C  # noqa: E402
from . import _argerrors  # noqa: E402
_argerrors.install()  # before the names below are taken from _C: argument errors that say what is wrong
from ._C import (Tensor, Error, dtype, device, tensor, from_dlpack, from_numpy, manual_seed,
                 get_rng_state, set_rng_state, is_grad_enabled, set_grad_enabled, result_type,
                 promote_types, can_cast, get_autocast_dtype)
from ._C import (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
                 float, double, half, long, int, short)
from ._C._ops import *  # noqa: F401,F403  every op: kiln.add, kiln.matmul, ...
from ._creation import (zeros, ones, empty, full, rand, randn, randint, randperm, arange, linspace,
                        eye, zeros_like, ones_like, empty_like, full_like, rand_like, randn_like)
from ._grad_mode import no_grad, enable_grad, inference_mode, autocast
from ._ops_extra import unique, split, chunk, where, clamp, sort, is_tensor, numel, isclose, allclose, equal
from ._tensor_extras import add, sub, subtract, einsum, install as _install_tensor_extras  # noqa: E402
_install_tensor_extras()
from . import autograd, nn, optim, tile  # noqa: E402
from .serialization import save, load  # noqa: E402  PyTorch's zip checkpoints and safetensors; tensors pickle
from ._generator import Generator  # noqa: E402
from . import utils  # noqa: E402  kiln.utils.data
# The namespaces scripts touch first, answering as PyTorch's CPU build does (docs/python-api.md).
from . import amp, backends, cuda, accelerator, distributed  # noqa: E402
from .backends.cuda import set_float32_matmul_precision, get_float32_matmul_precision  # noqa: E402
from .nn import parallel as _nn_parallel  # noqa: E402,F401  makes kiln.nn.parallel an attribute of kiln.nn
from ._compile import compile, explain, mark_dynamic, cond, lazy, opaque, set_logs, list_backends  # noqa: E402
from . import onnx  # noqa: E402  kiln.onnx.export (needs the onnx package only when called)

# Public types report themselves as kiln.X (reprs, help(), pickling names), not kiln._C.X.
for _t in (Tensor, dtype, device):
    _t.__module__ = "kiln"
del _t

__version__ = "0.1.0"
