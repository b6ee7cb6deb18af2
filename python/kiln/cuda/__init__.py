"""kiln.cuda: answers as PyTorch's CPU build does, because kiln runs on the CPU. is_available() is
False and device_count() 0; seeding and memory statistics are harmless no-ops (as in torch, where
they wait for a CUDA device that never comes); calls that need a device (synchronize,
get_device_name, current_device, ...) raise a kiln.Error that is also an AssertionError."""
from .._unavailable import no_cuda
from . import amp  # noqa: F401  kiln.cuda.amp.GradScaler / autocast


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """No-op without CUDA (torch queues the seed for a device that never initialises)."""


def manual_seed_all(seed):
    """No-op without CUDA."""


def seed():
    """No-op without CUDA."""


def seed_all():
    """No-op without CUDA."""


def empty_cache():
    """No-op: there is no CUDA caching allocator."""


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def reset_peak_memory_stats(device=None):
    """No-op without CUDA."""


def _needs_device(name):
    def call(*args, **kwargs):
        raise no_cuda(name)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = "Needs a CUDA device: raises a kiln.Error (kiln has none here)."
    return call


for _name in ("synchronize", "current_device", "set_device", "get_device_name", "get_device_properties",
              "get_device_capability", "get_rng_state", "set_rng_state", "initial_seed", "current_stream",
              "default_stream", "Stream", "Event", "init", "device"):
    globals()[_name] = _needs_device(_name)
del _name
