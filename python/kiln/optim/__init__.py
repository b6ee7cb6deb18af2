"""kiln.optim: SGD, Adam, AdamW with torch.optim's API (param_groups, state_dict, closures) and
lr_scheduler. The updates run in C++ (include/kiln/optim.h)."""
from . import lr_scheduler  # noqa: F401
from .optimizer import SGD, Adam, AdamW, Optimizer

for _c in (Optimizer, SGD, Adam, AdamW):
    _c.__module__ = "kiln.optim"
del _c
