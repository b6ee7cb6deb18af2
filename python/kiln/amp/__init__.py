"""kiln.amp: torch.amp's autocast(device_type=...) and GradScaler. See docs/python-api.md."""
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
