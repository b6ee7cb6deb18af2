"""kiln.accelerator: torch.accelerator as PyTorch's CPU build answers it: no accelerator.
is_available() is False, device_count() 0, current_accelerator() None; calls that need one raise a
kiln.Error."""
from ._unavailable import unavailable


def is_available():
    return False


def device_count():
    return 0


def current_accelerator(check_available=False):
    return None


def _needs_accelerator(name):
    def call(*args, **kwargs):
        raise unavailable(f"kiln.accelerator.{name}()", "kiln has no accelerator here (it runs on the CPU)",
                          "guard the call with kiln.accelerator.is_available()")
    call.__name__ = call.__qualname__ = name
    return call


for _name in ("current_device_index", "set_device_index", "current_device_idx", "set_device_idx",
              "current_stream", "set_stream", "synchronize", "device_index"):
    globals()[_name] = _needs_accelerator(_name)
del _name
