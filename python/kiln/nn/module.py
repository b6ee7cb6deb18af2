"""nn.Module with torch.nn.Module's semantics: attribute assignment registers parameters,
submodules and buffers; state_dict keys are dotted paths."""
import weakref
from collections import OrderedDict, namedtuple

from .. import _C
from .._grad_mode import no_grad
from .parameter import Buffer, Parameter


class _HookHandle:
    _next_id = 0

    def __init__(self, hooks, hook):
        self._hooks, self.id = hooks, _HookHandle._next_id
        _HookHandle._next_id += 1
        hooks[self.id] = hook

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


_MISSING = object()
_config = [0]  # bumped by every attribute assignment on any Module


def config_version():
    """A number that changes whenever an attribute of any Module is assigned."""
    return _config[0]


class _Same:
    """An attribute value a fingerprint compares by identity (tensors, submodules, objects),
    held weakly where it can be: a remembered state must not keep a model or a tensor alive."""
    __slots__ = ("ref", "oid")

    def __init__(self, obj):
        self.oid = id(obj)
        try:
            self.ref = weakref.ref(obj)
        except TypeError:  # lists, dicts, ...: held (they rarely refer back to the module)
            self.ref = lambda: obj

    def __eq__(self, other):
        if not isinstance(other, _Same) or other.oid != self.oid:
            return False
        obj = self.ref()
        return obj is not None and other.ref() is obj

    def __hash__(self):
        return self.oid


_VALUE_TYPES = (bool, int, float, complex, str, type(None))
_STATE_KEYS = ("_parameters", "_buffers", "_modules", "_forward_pre_hooks", "_forward_hooks",
               "_non_persistent_buffers")
_next_state_id = [0]
# root module -> (the counter when last computed, its state's number, state key -> number); kept
# outside the module so pickling and deepcopy never see it, and weak so it never keeps one alive.
_states = weakref.WeakKeyDictionary()


def _value_key(v):
    t = type(v)
    if t in _VALUE_TYPES:
        return (t, v)  # by type too: True, 1 and 1.0 are equal but trace differently
    if t is tuple:
        return (tuple, tuple(_value_key(x) for x in v))
    return _Same(v)


# module -> names of the attributes a compiled forward assigns tensors to: graph outputs, stored
# back after each call (kiln.compile's side-effect replay), so no part of the state it guards.
_replayed = weakref.WeakKeyDictionary()


def _state_key(root):
    key = []
    for name, m in root.named_modules():
        d = m.__dict__
        skip = _replayed.get(m, ())
        attrs = tuple((k, _value_key(v)) for k, v in d.items() if k not in _STATE_KEYS and k not in skip)
        hooks = tuple(_Same(h) for h in (*d["_forward_pre_hooks"].values(), *d["_forward_hooks"].values()))
        key.append((name, _Same(m), attrs, hooks, frozenset(d["_non_persistent_buffers"])))
    return tuple(key)


def state_fingerprint(root):
    """kiln.compile's guard on a module's attributes (training, eps, flags, submodules): a
    number equal for two calls exactly when every module under `root` had the same attributes,
    values compared by value and everything else (tensors, objects) by identity. A state seen
    before gets its number again, so graphs traced in train() and in eval() stay cached side by
    side. Recomputed only after some Module attribute was assigned (the global counter moved)."""
    state = _states.get(root)
    if state is not None and state[0] == _config[0]:
        return state[1]
    table = state[2] if state is not None else {}
    key = _state_key(root)
    number = table.get(key)
    if number is None:
        if len(table) >= 16:  # (twice the recompile limit) e.g. a tensor assigned every call
            table.clear()
        _next_state_id[0] += 1  # numbers are never reused, by any module: a guard cannot alias
        number = table[key] = _next_state_id[0]
    _states[root] = (_config[0], number, table)
    return number


def replay_attribute(m, name):
    """Takes m.name out of the state fingerprints (the compiled forward assigning it traced with
    the state before the assignment: the states remembered are rewritten without it, so that
    state keeps its number)."""
    names = _replayed.setdefault(m, set())
    if name in names:
        return
    names.add(name)
    for root, (version, number, table) in list(_states.items()):
        rewritten = {}
        for key, n in table.items():
            rewritten.setdefault(tuple(_drop_attr(entry, m, name) for entry in key), n)
        _states[root] = (version, number, rewritten)


def _drop_attr(entry, m, name):
    path, same, attrs, hooks, non_persistent = entry
    if same.ref() is not m:
        return entry
    return (path, same, tuple(a for a in attrs if a[0] != name), hooks, non_persistent)


class Module:
    """Base class of every layer and model (as torch.nn.Module). Subclasses call
    super().__init__() first, then assign Parameters, Modules and tensors as attributes."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not d["_forward_pre_hooks"] and not d["_forward_hooks"]:
            return self.forward(*args, **kwargs)
        for hook in list(d["_forward_pre_hooks"].values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        out = self.forward(*args, **kwargs)
        for hook in list(d["_forward_hooks"].values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        return out

    def register_forward_pre_hook(self, hook):
        """hook(module, args) -> None or new args, called before forward; returns a handle with remove()."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """hook(module, args, output) -> None or a new output, called after forward."""
        return _HookHandle(self._forward_hooks, hook)

    # --- registration -------------------------------------------------------------------------
    def _check_init(self):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign to {type(self).__name__} before Module.__init__() call")

    def register_parameter(self, name, param):
        self._check_init()
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"parameter name must be a non-empty string without '.', got {name!r}")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(kiln.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        self._check_init()
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"buffer name must be a non-empty string without '.', got {name!r}")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (kiln.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def register_module(self, name, module):
        self.add_module(name, module)

    def add_module(self, name, module):
        self._check_init()
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str) or "." in name or name == "":
            raise KeyError(f"module name must be a non-empty string without '.', got {name!r}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    def __setattr__(self, name, value):
        d = self.__dict__
        if d.get(name, _MISSING) is not value:
            # kiln.compile guards on this counter: a compiled call traced before any module's
            # attribute (training, eps, a flag, a submodule) changed is not reused after.
            _config[0] += 1
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(kiln.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, params, self._buffers)
            self._modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)")
            d["_modules"][name] = None
        elif isinstance(value, Buffer):
            self._remove_from(name, d, params, self._modules)
            self.register_buffer(name, value.data, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (kiln.Tensor or None expected)")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *dicts):
        for dd in dicts:
            if dd is not None and name in dd:
                del dd[name]

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(key, {}):
                del self.__dict__[key][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # --- traversal ----------------------------------------------------------------------------
    def _named_members(self, get, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for k, v in get(m):
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (mprefix + "." if mprefix else "") + k, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def get_submodule(self, target):
        mod = self
        for part in target.split(".") if target else []:
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule '{part}' (looking up '{target}')")
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter '{name}'")
        return mod._parameters[name]

    # --- state ----------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Parameters and persistent buffers by dotted name (detached unless keep_vars)."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=out, prefix=prefix + name + ".", keep_vars=keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies tensors into the parameters and buffers of the same names. With strict, missing
        or unexpected keys are an error; a shape mismatch is always one. Returns
        (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"load_state_dict(): expected a dict of name -> Tensor, got {type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            src = state_dict[k]
            if not isinstance(src, _C.Tensor):
                errors.append(f'While copying the parameter named "{k}", expected a kiln.Tensor, got {type(src).__name__}.')
                continue
            if tuple(src.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape {tuple(src.shape)} from checkpoint, "
                              f"the shape in current model is {tuple(target.shape)}.")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for k, target in own.items():
                if k in state_dict:
                    src = state_dict[k]
                    if assign:
                        target.data = src
                    else:
                        target.copy_(src)
        return _IncompatibleKeys(missing, unexpected)

    # --- modes and conversions --------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError("train(): mode must be a bool")
        for m in self.modules():
            if m.__dict__.get("training") is not mode:
                m.__dict__["training"] = mode
                _config[0] += 1
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g.zero_()

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply(self, fn):
        """Converts every parameter in place (p.data = fn(p)) and replaces buffers with fn(b)."""
        with no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is None:
                        continue
                    g = p.grad
                    p.data = fn(p)
                    if g is not None:
                        p.grad = fn(g)
                for k, b in m._buffers.items():
                    if b is not None:
                        m._buffers[k] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype) or to(tensor): floating-point parameters and
        buffers take a floating dtype; a device kiln's build lacks raises kiln.Error."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, _C.Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, _C.device)):
                device = a
            else:
                raise TypeError(f"to() expected a dtype, a device or a Tensor, got {type(a).__name__}")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        if device is not None and str(device) != "cpu":
            self._apply(lambda t: t.to(device))
        if dtype is not None:
            self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)
        return self

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def half(self):
        return self.to(_C.float16)

    def cpu(self):
        return self.to("cpu")

    # --- printing -----------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
