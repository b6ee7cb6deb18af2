"""Adadelta, Adagrad, Adamax, ASGD, NAdam, RAdam, RMSprop and Rprop: torch.optim's algorithms,
defaults and per-parameter state names (step, square_avg, acc_delta, sum, exp_avg, exp_avg_sq,
exp_inf, mu_product, momentum_buffer, grad_avg, prev, step_size, eta, mu, ax). Adadelta, Adagrad,
RMSprop, NAdam and RAdam are kiln's C++ optimizers (src/optim/adaptive.cc, as SGD/Adam/AdamW);
Adamax, ASGD and Rprop are written here in Python over kiln's in-place tensor ops. The update
formulas follow the pseudo-code in torch.optim's documentation."""

from .. import _C
from .._grad_mode import enable_grad, no_grad
from .optimizer import Optimizer

_ops = _C._ops


def _scalar(v):
    """A 0-d float32 tensor (torch keeps `step`, `eta`, `mu` and `mu_product` as such)."""
    return _C.tensor(float(v), dtype=_C.float32)


def _check(name, value, low=0.0, strict=False):
    if (value <= low) if strict else (value < low):
        raise ValueError(f"Invalid {name} value: {value}")


class _PythonOptimizer(Optimizer):
    """step() runs _update(p, grad, state, group) for every parameter with a gradient; state
    starts from _init_state(p, group) on a parameter's first step."""

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._validate(group)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = -p.grad if group.get("maximize") else p.grad
                    state = self._py_state[p]
                    if not state:
                        state.update(self._init_state(p, group))
                    state["step"] = _scalar(state["step"].item() + 1)
                    self._update(p, grad, state, group, int(state["step"].item()))
        return loss

    def _init_state(self, p, group):
        raise NotImplementedError

    def _update(self, p, grad, state, group, step):
        raise NotImplementedError

    @staticmethod
    def _weight_decay(p, grad, group):
        wd = group["weight_decay"]
        return grad + p * wd if wd != 0 else grad


def _zeros(p):
    return _ops.zeros_like(p)


class Adadelta(Optimizer):
    _kind = "adadelta"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check("rho", rho)
        if rho > 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check("epsilon", eps)
        _check("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable, differentiable=differentiable))


class Adagrad(Optimizer):
    _kind = "adagrad"  # (its state is made at construction, as torch's)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check("lr_decay", lr_decay)
        _check("weight_decay", weight_decay)
        _check("initial_accumulator_value", initial_accumulator_value)
        _check("epsilon", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))


class RMSprop(Optimizer):
    _kind = "rmsprop"

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check("epsilon", eps)
        _check("momentum", momentum)
        _check("weight_decay", weight_decay)
        _check("alpha", alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))


class _AdamChecks:
    """The betas, eps and weight_decay checks of Adam's relatives."""

    def _validate(self, group):
        super()._validate(group)
        b1, b2 = group["betas"]
        if not 0.0 <= b1 < 1.0 or not 0.0 <= b2 < 1.0:
            raise ValueError(f"Invalid beta parameters: {group['betas']}")
        _check("epsilon", group["eps"])
        _check("weight_decay", group["weight_decay"])


class NAdam(_AdamChecks, Optimizer):
    _kind = "nadam"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check("momentum_decay", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))


class RAdam(_AdamChecks, Optimizer):
    _kind = "radam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable, differentiable=differentiable))


class Adamax(_AdamChecks, _PythonOptimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, group):
        return {"step": _scalar(0), "exp_avg": _zeros(p), "exp_inf": _zeros(p)}

    def _update(self, p, grad, state, group, step):
        (b1, b2), eps = group["betas"], group["eps"]
        grad = self._weight_decay(p, grad, group)
        state["exp_avg"].lerp_(grad, 1 - b1)
        state["exp_inf"] = _ops.maximum(state["exp_inf"] * b2, grad.abs() + eps)
        p.sub_(state["exp_avg"] / state["exp_inf"] * (group["lr"] / (1 - b1 ** step)))


class Rprop(_PythonOptimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _init_state(self, p, group):
        return {"step": _scalar(0), "prev": _zeros(p), "step_size": _ops.full_like(p, float(group["lr"]))}

    def _update(self, p, grad, state, group, step):
        (eta_minus, eta_plus), (lo, hi) = group["etas"], group["step_sizes"]
        sign = (grad * state["prev"]).sign()
        factor = _ops.where(sign > 0, _ops.full_like(sign, eta_plus),
                            _ops.where(sign < 0, _ops.full_like(sign, eta_minus), _ops.ones_like(sign)))
        state["step_size"] = (state["step_size"] * factor).clamp(min=lo, max=hi)
        grad = _ops.where(sign < 0, _ops.zeros_like(grad), grad)  # a sign change: no step, and forget the grad
        p.sub_(grad.sign() * state["step_size"])
        state["prev"] = grad.clone()


class ASGD(_PythonOptimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, group):
        return {"step": _scalar(0), "eta": _scalar(group["lr"]), "mu": _scalar(1.0), "ax": _zeros(p)}

    def _update(self, p, grad, state, group, step):
        grad = self._weight_decay(p, grad, group)
        eta, mu = state["eta"].item(), state["mu"].item()
        p.mul_(1 - group["lambd"] * eta)
        p.sub_(grad * eta)
        if mu != 1:
            state["ax"].add_((p - state["ax"]) * mu)
        else:
            state["ax"].copy_(p)
        state["eta"] = _scalar(group["lr"] / ((1 + group["lambd"] * group["lr"] * step) ** group["alpha"]))
        state["mu"] = _scalar(1 / max(1, step - group["t0"]))
