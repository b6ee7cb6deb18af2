"""torch.amp.autocast on top of kiln's autocast (kiln/_grad_mode.py): device 'cpu' autocasts as
kiln.autocast does (bfloat16 by default); device 'cuda' has no device here, so, as PyTorch without
CUDA, it warns and disables itself."""
import warnings

from .._grad_mode import autocast as _cpu_autocast


def is_autocast_available(device_type):
    return device_type == "cpu"


class autocast(_cpu_autocast):
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise TypeError(f"autocast(): argument 'device_type' must be a str, not "
                            f"{type(device_type).__name__} ({device_type!r})")
        self.device = device_type
        if enabled and device_type != "cpu":
            warnings.warn(f"User provided device_type of '{device_type}', but kiln has no such device here "
                          f"(it runs on the CPU). Disabling autocast.", UserWarning, stacklevel=2)
            enabled = False
        super().__init__(device_type, dtype=dtype, enabled=enabled)
        self._args = (device_type, dtype, enabled, cache_enabled)  # what a decorator use re-creates
