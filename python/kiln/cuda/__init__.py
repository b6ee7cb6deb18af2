"""kiln.cuda: the GPUs kiln sees (kiln/cuda.h, docs/cuda.md). Where there is none, it answers as
PyTorch's CPU build does: is_available() is False and device_count() 0; seeding and memory
statistics are harmless no-ops (as in torch, where they wait for a CUDA device that never comes);
calls that need a device (synchronize, get_device_name, current_device, ...) raise a kiln.Error
that is also an AssertionError. Where a GPU is present the answers are the device's (the end of
this file)."""
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


# --- where a GPU is present: the device's answers (seeding stays kiln's one generator, whose
# Philox stream is the same on every device).
from .. import _C as _kiln_C  # noqa: E402


def _index(device):
    """torch accepts None, an int, 'cuda:1' or a kiln.device for a device argument."""
    if device is None:
        return -1
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is None and isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else None
    return -1 if index is None else index


if _kiln_C._cuda.is_available():
    _c = _kiln_C._cuda

    def is_available():
        return True

    def device_count():
        return _c.device_count()

    def is_initialized():
        return True

    def is_bf16_supported(including_emulation=True):
        return _c.get_device_capability(-1)[0] >= 8

    def current_device():
        return _c.current_device()

    def set_device(device):
        _c.set_device(_index(device))

    def get_device_name(device=None):
        return _c.get_device_name(_index(device))

    def get_device_capability(device=None):
        return tuple(_c.get_device_capability(_index(device)))

    def synchronize(device=None):
        _c.synchronize(_index(device))

    def empty_cache():
        _c.empty_cache(-1)

    def memory_allocated(device=None):
        return _c.memory_allocated(_index(device))

    def max_memory_allocated(device=None):
        return _c.max_memory_allocated(_index(device))

    def memory_reserved(device=None):
        return _c.memory_reserved(_index(device))

    def max_memory_reserved(device=None):
        return _c.memory_reserved(_index(device))  # (the allocator keeps no peak of what it holds)

    def reset_peak_memory_stats(device=None):
        _c.reset_peak_memory_stats(_index(device))

