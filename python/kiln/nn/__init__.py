"""kiln.nn: modules with torch.nn's API (Module, Parameter, layers, losses), nn.functional,
nn.init and nn.utils. See docs/python-api.md."""
from . import functional, init, utils  # noqa: F401
from .module import Module
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter

for _name, _obj in list(globals().items()):
    if isinstance(_obj, type) and _obj.__module__.startswith("kiln.nn"):
        _obj.__module__ = "kiln.nn"
del _name, _obj
