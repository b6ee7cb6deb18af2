"""kiln.optim: torch.optim's optimizers with its API (param_groups, state_dict, closures) and
lr_scheduler. SGD, Adam and AdamW update in C++ (include/kiln/optim.h); Adadelta, Adagrad, Adamax,
ASGD, NAdam, RAdam, RMSprop and Rprop in Python over kiln ops (optim/algorithms.py)."""
from . import lr_scheduler  # noqa: F401
from .algorithms import ASGD, Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop, Rprop
from .optimizer import SGD, Adam, AdamW, Optimizer

for _c in (Optimizer, SGD, Adam, AdamW, ASGD, Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop, Rprop):
    _c.__module__ = "kiln.optim"
del _c
