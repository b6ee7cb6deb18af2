"""The one error every missing-hardware or missing-feature namespace raises (kiln.cuda,
kiln.accelerator, kiln.distributed, kiln.nn.parallel): a kiln.Error naming what was called and why
it cannot run here. It is also an AssertionError, the type PyTorch's CPU build raises for CUDA
calls ("Torch not compiled with CUDA enabled"), so scripts that catch either keep working."""
from ._C import Error


class FeatureUnavailable(Error, AssertionError):
    pass


def unavailable(name, why, hint):
    return FeatureUnavailable(f"{name}: {why}\n  hint: {hint}")


def no_cuda(name):
    return unavailable(f"kiln.cuda.{name}()", "kiln has no CUDA device here (this build runs on the CPU)",
                       "guard the call with kiln.cuda.is_available(), or use device 'cpu'")
