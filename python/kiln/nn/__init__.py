"""kiln.nn: modules with torch.nn's API (Module, Parameter, layers, losses), nn.functional,
nn.init and nn.utils. See docs/python-api.md and docs/nn.md."""
from . import functional, init, utils  # noqa: F401
from .module import Module
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter
from .modules.lazy import UninitializedBuffer, UninitializedParameter  # noqa: F401  (torch.nn has both)


def factory_kwargs(kwargs):
    """The factory keywords (device, dtype, memory_format) of `kwargs`, as a dict (torch.nn.factory_kwargs)."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    extra = set(kwargs) - simple - {"factory_kwargs"}
    if extra:
        raise TypeError(f"unexpected kwargs {extra}")
    out = {k: kwargs[k] for k in simple if k in kwargs}
    for k, v in (kwargs.get("factory_kwargs") or {}).items():
        if k in out:
            raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
        out[k] = v
    return out


for _name, _obj in list(globals().items()):
    if isinstance(_obj, type) and _obj.__module__.startswith("kiln.nn"):
        _obj.__module__ = "kiln.nn"
del _name, _obj
