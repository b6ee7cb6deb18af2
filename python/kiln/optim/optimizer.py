"""optim.Optimizer: torch's param_groups (a list of dicts whose options may be changed between
steps) over kiln's C++ optimizers (kiln._C._Optimizer), which do the updates."""
from collections import defaultdict

from .. import _C
from .._argerrors import _given
from .._grad_mode import enable_grad


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base of kiln's optimizers. Subclasses either name a C++ optimizer in _kind, or (a custom
    optimizer, as in torch) leave _kind None and implement step() over self.param_groups,
    keeping per-parameter state in self.state[p]."""

    _kind = None  # "sgd", "adam", "adamw", "adagrad", ...: the C++ optimizer behind it (python/csrc/optim.cc)

    def __init__(self, params, defaults):
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got kiln.Tensor")
        self.defaults = dict(defaults)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups = []
        for g in groups:
            self.param_groups.append(self._filled(g))
        self._check_disjoint()
        self._impl = _C._Optimizer(self._kind, self.param_groups) if self._kind else None
        self._built = self._param_lists()  # what _impl optimizes (see _sync_params)
        self._py_state = defaultdict(dict)  # custom (Python) optimizers only

    def _filled(self, group):
        if not isinstance(group, dict):
            raise TypeError(f"param groups must be dicts, got {type(group).__name__}")
        g = dict(group)
        params = g["params"]
        g["params"] = [params] if isinstance(params, _C.Tensor) else list(params)
        self._check_params(g["params"])
        for k, v in self.defaults.items():
            if v is required and k not in g:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {k}")
            g.setdefault(k, v)
        self._validate(g)
        return g

    @staticmethod
    def _check_params(params):
        for p in params:
            if not isinstance(p, _C.Tensor):
                raise TypeError(f"optimizer can only optimize kiln.Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")

    def _validate(self, group):
        lr = group["lr"]
        if isinstance(lr, bool) or not isinstance(lr, (int, float, _C.Tensor)):
            raise TypeError(f"{type(self).__name__}: option 'lr' must be a number, not {_given(lr)}")
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {group['lr']}")

    def _check_disjoint(self):
        seen = set()
        for g in self.param_groups:
            for p in g["params"]:
                if id(p) in seen:
                    raise ValueError("some parameters appear in more than one parameter group")
                seen.add(id(p))

    def add_param_group(self, param_group):
        g = self._filled(param_group)
        if self._impl is not None:
            self._sync_params()  # earlier edits first: _built then matches the groups before g
        self.param_groups.append(g)
        try:
            self._check_disjoint()
            if self._impl is not None:
                self._impl.add_param_group(g)
                self._built.append(list(g["params"]))
        except Exception:
            self.param_groups.pop()
            raise

    def _param_lists(self):
        return [list(g["params"]) for g in self.param_groups]

    def _sync_params(self):
        """Edits of the groups' params (removing, adding or swapping parameters, as torch allows
        between steps) take effect: the C++ optimizer is rebuilt over the current parameters,
        keeping the state (step, moments, momentum) of those that stay."""
        now = self._param_lists()
        if len(now) == len(self._built) and all(len(a) == len(b) and all(x is y for x, y in zip(a, b))
                                                for a, b in zip(now, self._built)):
            return
        for params in now:
            self._check_params(params)
        self._check_disjoint()
        old = [p for ps in self._built for p in ps]
        kept = {id(p): self._impl.state(i) for i, p in enumerate(old)}
        impl = _C._Optimizer(self._kind, self.param_groups)
        flat = {k: v for k, v in impl.state_dict().items() if not k.startswith("state.")}
        for j, p in enumerate(q for ps in now for q in ps):
            for name, t in kept.get(id(p), {}).items():
                flat[f"state.{j}.{name}"] = t
        impl.load_state_dict(flat)
        self._impl, self._built = impl, now

    def _push_options(self):
        if self._impl is None:
            return
        self._sync_params()
        for i, g in enumerate(self.param_groups):
            self._validate(g)
            self._impl.configure(i, g)

    def step(self, closure=None):
        """One update of every parameter that has a grad, with the groups' current options.
        With a closure, re-evaluates the loss first (grad enabled) and returns it."""
        if self._impl is None:
            raise NotImplementedError(f"{type(self).__name__} must implement step()")
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._push_options()
        self._impl.step()
        return loss

    def zero_grad(self, set_to_none=True):
        if self._impl is not None:
            self._sync_params()
            self._impl.zero_grad(set_to_none)
            return
        for p in self._all_params():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def _all_params(self):
        return [p for g in self.param_groups for p in g["params"]]

    @property
    def state(self):
        """Per-parameter state (step, exp_avg, momentum_buffer, ...), keyed by the parameter."""
        if self._impl is None:
            return self._py_state
        self._sync_params()
        out = {}
        for i, p in enumerate(self._all_params()):
            s = self._impl.state(i)
            if s:
                out[p] = s
        return out

    def state_dict(self):
        """torch's layout: {'state': {index: {name: Tensor}}, 'param_groups': [options + 'params'
        as indices]}."""
        if self._impl is not None:
            self._sync_params()
        state = {}
        for i, p in enumerate(self._all_params()):
            s = self._impl.state(i) if self._impl is not None else self._py_state.get(p, {})
            if s:
                state[i] = {k: v.clone() if isinstance(v, _C.Tensor) else v for k, v in s.items()}
        groups, start = [], 0
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(d)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise ValueError("load_state_dict(): expected a dict with 'state' and 'param_groups'")
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        if self._impl is not None:
            self._sync_params()
        params = self._all_params()
        if self._impl is None:
            self._py_state = defaultdict(dict)
            for key, st in state_dict["state"].items():
                self._py_state[params[int(key)]] = {k: v.clone() if isinstance(v, _C.Tensor) else v
                                                    for k, v in st.items()}
            for mine, theirs in zip(self.param_groups, groups):
                mine.update({k: v for k, v in theirs.items() if k != "params"})
            return
        # The C++ optimizer validates and loads its flat map; options then come from the groups.
        flat = {k: v for k, v in self._impl.state_dict().items() if not k.startswith("state.")}
        for key, s in state_dict["state"].items():
            i = int(key)
            if not 0 <= i < len(params):
                raise ValueError(f"load_state_dict(): state for parameter index {i}, but there are {len(params)}")
            for name, t in s.items():
                flat[f"state.{i}.{name}"] = t if isinstance(t, _C.Tensor) else _C.tensor(t, dtype=_C.float32)
        self._impl.load_state_dict(flat)
        for mine, theirs in zip(self.param_groups, groups):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v
        self._push_options()

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


class SGD(Optimizer):
    _kind = "sgd"

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if momentum < 0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))


class Adam(Optimizer):
    _kind = "adam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, capturable=capturable))

    def _validate(self, group):
        super()._validate(group)
        b1, b2 = group["betas"]
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"Invalid beta parameters: {group['betas']}")
        if group["eps"] < 0:
            raise ValueError(f"Invalid epsilon value: {group['eps']}")
        if group["weight_decay"] < 0:
            raise ValueError(f"Invalid weight_decay value: {group['weight_decay']}")


class AdamW(Adam):
    _kind = "adamw"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, capturable=capturable)
