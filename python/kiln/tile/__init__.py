"""kiln.tile: block-level SPMD kernels written in Python, kiln's Triton (docs/tile.md).

    import kiln

    @kiln.tile.jit
    def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
        pid = kiln.tile.program_id(0)
        offs = pid * BLOCK + kiln.tile.arange(0, BLOCK)
        mask = offs < n
        kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=mask) + kiln.tile.load(y_ptr + offs, mask=mask), mask=mask)

    vector_add[(kiln.tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

A @jit function is traced, not parsed: it runs once per specialization with proxy values (tensors
become pointers, ints and floats scalars, constexpr parameters stay Python values), and each call
of this module's functions adds an op to the kernel's tile IR. Python control flow runs at trace
time (loops unroll, ifs pick one side); for a loop or branch in the kernel use fori_loop and cond.
The traced program is compiled for the CPU and cached per (argument dtypes and int widths,
constexpr values, num_warps, num_stages).
"""
import builtins as _builtins
import inspect as _inspect
import threading as _threading

from .. import _C

_t = _C._tile
Value = _t.Value
Program = _t.Program
Kernel = _t.Kernel
_Tensor = _C.Tensor
_state = _threading.local()

__all__ = ["jit", "constexpr", "Value", "program_id", "num_programs", "arange", "zeros", "full", "load",
           "store", "atomic_add", "where", "cast", "sum", "prod", "max", "min", "argmax", "argmin", "cumsum",
           "cumprod", "cummax", "cummin", "dot", "expand_dims", "broadcast_to", "reshape", "permute", "trans",
           "cdiv", "div", "static_range", "fori_loop", "cond", "parse", "run_pipeline", "autotune", "Config", "op", "CustomOp"]


class constexpr:
    """Marks a parameter as a compile-time constant: `BLOCK: kiln.tile.constexpr`. Its value (an int,
    float or bool) specializes the kernel and is a plain Python number inside it."""

    def __init__(self, value):
        self.value = value


def _builder():
    b = getattr(_state, "builder", None)
    if b is None:
        raise _C.Error("kiln.tile: this function builds a kernel op; call it inside a @kiln.tile.jit "
                       "kernel (while it is traced)")
    return b


# --- ops

def program_id(axis):
    """This program instance's index along grid axis 0, 1 or 2 (i32)."""
    return _builder().program_id(axis)


def num_programs(axis):
    """The grid's size along an axis (i32)."""
    return _builder().num_programs(axis)


def arange(start, end):
    """The block [start, start + 1, ..., end - 1] (i32)."""
    return _builder().arange(start, end)


def full(shape, value, dtype):
    """A block of `shape` filled with `value` (a scalar for shape ())."""
    return _builder().full(tuple(shape) if not isinstance(shape, int) else (shape,), value, dtype)


def zeros(shape, dtype=_C.float32):
    return full(shape, 0, dtype)


def load(pointer, mask=None, other=None):
    """The elements at `pointer` (a pointer or a block of them); where `mask` is False, `other` (0
    if not given) and no memory is read."""
    return _builder().load(pointer, mask, other)


def store(pointer, value, mask=None):
    """Writes `value` (cast to the pointer's dtype) where `mask` holds."""
    _builder().store(pointer, value, mask)


def atomic_add(pointer, value, mask=None):
    """Adds `value` atomically where `mask` holds; returns the values before."""
    return _builder().atomic_add(pointer, value, mask)


def cast(x, dtype):
    return _builder().cast(x, dtype)


def where(condition, x, y):
    return _builder().call("where", condition, x, y)


def div(a, b, rounding_mode=None):
    """a / b; rounding_mode 'trunc' or 'floor' keeps integers integers (as kiln.div)."""
    return _builder().call("div", a, b, rounding=rounding_mode)


def _reduce(kind):
    def reduce(x, axis=None):
        return _builder().reduce(kind, x, axis)
    reduce.__name__ = kind
    reduce.__doc__ = (f"{kind} along `axis` (None: all dims, giving a scalar); the axis is removed. "
                      "NaN propagates through max/min; argmax/argmin give i32 indices (first on ties).")
    return reduce


sum = _reduce("sum")
prod = _reduce("prod")
max = _reduce("max")
min = _reduce("min")


def argmax(x, axis):
    return _builder().reduce("argmax", x, axis)


def argmin(x, axis):
    return _builder().reduce("argmin", x, axis)


def _scan(kind):
    def scan(x, axis=0):
        return _builder().scan(kind, x, axis)
    scan.__name__ = kind
    scan.__doc__ = f"The running {kind[3:]} along `axis` (same shape)."
    return scan


cumsum = _scan("cumsum")
cumprod = _scan("cumprod")
cummax = _scan("cummax")
cummin = _scan("cummin")


def dot(a, b, acc=None):
    """a[M, K] @ b[K, N] (+ acc[M, N]), accumulated in float32 (float64 for float64 inputs)."""
    return _builder().dot(a, b, acc)


def expand_dims(x, axis):
    return _builder().expand_dims(x, axis)


def broadcast_to(x, shape):
    return _builder().broadcast_to(x, tuple(shape))


def reshape(x, shape):
    return _builder().reshape(x, tuple(shape))


def permute(x, *order):
    if len(order) == 1 and not isinstance(order[0], int):
        order = tuple(order[0])
    return _builder().permute(x, order)


def trans(x):
    return permute(x, 1, 0)


def cdiv(a, b):
    """ceil(a / b): on Python ints (a grid size) or on traced integers."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return _builder().cdiv(a, b)


# Every pointwise prim of ops.def, by its name (exp, maximum, isnan, ...): the math of kiln's ops.
def _prim(name):
    def prim(*args):
        return _builder().call(name, *args)
    prim.__name__ = name
    prim.__doc__ = f"kiln.{name}, elementwise (ops.def's pointwise prim; scalars and size-1 dims broadcast)."
    return prim


for _name, _arity in _t.prims():
    if _name not in globals():
        globals()[_name] = _prim(_name)
        __all__.append(_name)
del _name, _arity


def _to(self, dtype):
    return cast(self, dtype)


Value.to = _to
Value.sum = lambda self, axis=None: sum(self, axis)
Value.max = lambda self, axis=None: max(self, axis)
Value.min = lambda self, axis=None: min(self, axis)
Value.reshape = lambda self, *shape: reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
Value.T = property(trans)


# --- control flow inside a kernel

def static_range(*args):
    """A Python range, unrolled while the kernel is traced (the bounds are Python ints)."""
    return range(*args)


def _values(r):
    if r is None:
        return []
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _unpack(rs):
    return None if not rs else rs[0] if len(rs) == 1 else tuple(rs)


def fori_loop(lower, upper, step, body, *init):
    """A loop in the kernel: for i = lower; i < upper; i += step (step > 0), with carried values.
    body(i, *carried) returns the next carried values; returns them after the loop.

        acc = kiln.tile.fori_loop(0, K, BLOCK_K, lambda k, acc: acc + kiln.tile.dot(a(k), b(k)), acc)
    """
    rs = _builder().for_loop(lower, upper, step, list(init), lambda i, carried: _values(body(i, *carried)))
    return _unpack(rs)


def cond(pred, true_fn, false_fn=None):
    """A branch in the kernel on a scalar condition; both functions return values of the same types."""
    rs = _builder().if_else(pred, lambda: _values(true_fn()), lambda: _values(false_fn() if false_fn else None))
    return _unpack(rs)


parse = _t.parse
run_pipeline = _t.run_pipeline


# --- @jit

def _is_constexpr(annotation):
    return annotation is constexpr or isinstance(annotation, constexpr) or (
        isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr")


_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


class JITFunction:
    """A kernel: launch it as kernel[grid](*args, **constexprs, num_warps=4, num_stages=3). The grid
    is a tuple of 1-3 ints, or a function of the meta-parameters (a dict of the constexprs) giving one."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        sig = _inspect.signature(fn)
        self.params = list(sig.parameters)
        self.constexprs = frozenset(n for n, p in sig.parameters.items() if _is_constexpr(p.annotation))
        self._const_flags = tuple(n in self.constexprs for n in self.params)
        self.defaults = {n: p.default for n, p in sig.parameters.items() if p.default is not _inspect.Parameter.empty}
        self.cache = {}

    def __repr__(self):
        return f"<kiln.tile kernel {self.__name__}>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kiln.tile: launch {self.__name__} on a grid: {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    def _bind(self, args, kwargs):
        num_warps = kwargs.pop("num_warps", 4) if kwargs else 4
        num_stages = kwargs.pop("num_stages", 3) if kwargs else 3
        if len(args) == len(self.params) and not kwargs:
            return args, num_warps, num_stages
        if len(args) > len(self.params):
            raise TypeError(f"{self.__name__} takes {len(self.params)} arguments, got {len(args)}")
        values = list(args)
        for name in self.params[len(args):]:
            if name in kwargs:
                values.append(kwargs.pop(name))
            elif name in self.defaults:
                values.append(self.defaults[name])
            else:
                raise TypeError(f"{self.__name__}: missing argument {name}")
        if kwargs:
            raise TypeError(f"{self.__name__}: unexpected argument(s) {', '.join(kwargs)}")
        return values, num_warps, num_stages

    def _key(self, values, num_warps, num_stages):
        key = [num_warps, num_stages]
        for const, v in zip(self._const_flags, values):
            t = type(v)
            if const:
                key.append(v)
            elif t is _Tensor:
                key.append(v.dtype)
            elif t is int:
                key.append("i32" if _I32_MIN <= v <= _I32_MAX else "i64")
            elif t is float:
                key.append("f32")
            elif isinstance(v, _Tensor):
                key.append(v.dtype)
            elif isinstance(v, (int, float)):  # bool, numpy scalars
                key.append("f32" if isinstance(v, float) else "i32" if _I32_MIN <= int(v) <= _I32_MAX else "i64")
            else:
                name = self.params[len(key) - 3]
                raise TypeError(f"kiln.tile: {self.__name__}'s argument {name} is a {t.__name__}; a kernel "
                                "takes tensors, ints, floats and constexprs")
        return tuple(key)

    def trace(self, values, num_warps=4, num_stages=3):
        """The kernel's program (tile IR) for these argument values, as traced (before any pass)."""
        b = _t.Builder(self.__name__)
        proxies = []
        for name, v in zip(self.params, values):
            if name in self.constexprs:
                if isinstance(v, (bool, int, float)):
                    b.constexpr(name, v)
                proxies.append(v)
            elif isinstance(v, _Tensor):
                proxies.append(b.arg_ptr(name, v.dtype))
            elif isinstance(v, float):
                proxies.append(b.arg_float(name, _C.float32))
            else:
                proxies.append(b.arg_int(name, _C.int32 if _I32_MIN <= int(v) <= _I32_MAX else _C.int64))
        b.set_meta(num_warps, num_stages)
        saved = getattr(_state, "builder", None)
        _state.builder = b
        try:
            self.fn(*proxies)
        finally:
            _state.builder = saved
        return b.finish()

    def compile(self, *args, **kwargs):
        """The compiled kernel for these arguments (traced and compiled on first use, then cached)."""
        values, num_warps, num_stages = self._bind(args, dict(kwargs))
        return self._kernel(values, num_warps, num_stages)

    def _kernel(self, values, num_warps, num_stages):
        key = self._key(values, num_warps, num_stages)
        k = self.cache.get(key)
        if k is None:
            k = _t.compile(self.trace(values, num_warps, num_stages))
            self.cache[key] = k
        return k

    def ir(self, *args, **kwargs):
        """The traced program's text for these arguments (kiln.tile.run_pipeline runs passes on it)."""
        values, num_warps, num_stages = self._bind(args, dict(kwargs))
        return str(self.trace(values, num_warps, num_stages))

    def _grid(self, grid, values, num_warps, num_stages):
        """The launch grid as a tuple (a function of the meta-parameters called with them)."""
        if callable(grid):
            meta = {n: v for n, v in zip(self.params, values) if n in self.constexprs}
            meta["num_warps"], meta["num_stages"] = num_warps, num_stages
            grid = grid(meta)
        return (grid,) if isinstance(grid, int) else grid

    def run(self, grid, args, kwargs):
        values, num_warps, num_stages = self._bind(args, kwargs)
        launches = getattr(_state, "launches", None)
        if launches is not None:  # a custom op's function run to see what it launches (CustomOp._launch_for)
            launches.append((self, grid, values, num_warps, num_stages))
            return
        k = self._kernel(values, num_warps, num_stages)
        k.launch(self._grid(grid, values, num_warps, num_stages), [v for c, v in zip(self._const_flags, values) if not c] if self.constexprs else values)


def jit(fn=None):
    """Makes a function a tile kernel (see the module's doc). Use as @kiln.tile.jit."""
    if fn is None:
        return jit
    return JITFunction(fn)


# --- @autotune

class Config:
    """One candidate of an autotuned kernel: constexpr values, and the GPU's num_warps / num_stages.

        kiln.tile.Config({"BLOCK": 256}, num_warps=4)
    """

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def __repr__(self):
        return ", ".join(f"{k}={v}" for k, v in self.all_kwargs().items())

    def __eq__(self, other):
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs()

    __hash__ = None


class Autotuner:
    """A @jit kernel with candidate configs: launch it as kernel[grid](*args) without the tuned
    constexprs. On the first launch per key (the values of the `key` arguments, and the tensors'
    dtypes) every config is timed and the fastest kept, in memory and in the disk cache
    (docs/cache.md); `best_config` is the last one used. The kernel runs warmup + repeats times per
    config while tuning, so it must compute its outputs from its inputs (no accumulation)."""

    def __init__(self, fn, configs, key, warmup=2, repeats=7):
        if not isinstance(fn, JITFunction):
            raise TypeError("kiln.tile.autotune decorates a @kiln.tile.jit kernel: put @kiln.tile.jit below it")
        configs = list(configs)
        if not configs:
            raise ValueError(f"kiln.tile.autotune: {fn.__name__} has no configs")
        for c in configs:
            if not isinstance(c, Config):
                raise TypeError(f"kiln.tile.autotune: configs are kiln.tile.Config objects, got {type(c).__name__}")
            unknown = [k for k in c.kwargs if k not in fn.constexprs]
            if unknown:
                raise ValueError(f"kiln.tile.autotune: {fn.__name__}'s config sets {', '.join(unknown)}, "
                                 "which is not a constexpr parameter of the kernel")
        for k in key:
            if k not in fn.params:
                raise ValueError(f"kiln.tile.autotune: {fn.__name__}'s key {k} is not a parameter of the kernel")
        self.fn = fn
        self.configs = configs
        self.key = list(key)
        self.warmup, self.repeats = warmup, repeats
        self.cache = {}  # key -> Config
        self.best_config = None
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self):
        return f"<kiln.tile autotuned kernel {self.__name__} ({len(self.configs)} configs, key {self.key})>"

    def __call__(self, *args, **kwargs):
        raise TypeError(f"kiln.tile: launch {self.__name__} on a grid: {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, args, kwargs)

    def _key(self, args, kwargs):
        named = dict(zip(self.fn.params, args))
        named.update(kwargs)
        parts = []
        for name in self.fn.params:
            v = named.get(name)
            if name in self.key:
                parts.append(f"{name}={v.dtype}{list(v.shape)}" if isinstance(v, _Tensor) else f"{name}={v!r}")
            elif isinstance(v, _Tensor):
                parts.append(f"{name}:{v.dtype}")
        return ", ".join(parts)

    def run(self, grid, args, kwargs):
        key = self._key(args, kwargs)
        config = self.cache.get(key)
        if config is None and getattr(_state, "launches", None) is not None:
            raise _C.Error("kiln.tile: an autotuned kernel is recorded only once tuned")  # (no timing on fakes)
        if config is None:
            config = self._tune(key, grid, args, kwargs)
            self.cache[key] = config
        self.best_config = config
        self.fn.run(grid, args, {**kwargs, **config.all_kwargs()})

    def _tune(self, key, grid, args, kwargs):
        # The kernel's identity on disk: its traced program for the first config.
        code = self.fn.ir(*args, **kwargs, **self.configs[0].all_kwargs())
        pairs = [(list(c.kwargs.items()), c.num_warps, c.num_stages) for c in self.configs]
        run = lambda i: self.fn.run(grid, args, {**kwargs, **self.configs[i].all_kwargs()})
        return self.configs[_t.tune(self.__name__, code, key, pairs, run, self.warmup, self.repeats)]


def autotune(configs, key, warmup=2, repeats=7):
    """Tunes a @kiln.tile.jit kernel over `configs` per value of the `key` arguments (Triton's
    @triton.autotune):

        @kiln.tile.autotune(configs=[kiln.tile.Config({"BLOCK": 256}), kiln.tile.Config({"BLOCK": 1024})], key=["n"])
        @kiln.tile.jit
        def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr): ...

        vector_add[lambda meta: (kiln.tile.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    """
    return lambda fn: Autotuner(fn, configs, key, warmup, repeats)


# --- custom ops

class _GradContext:
    """What a custom op's backward sees: its inputs, outputs, numbers, and which inputs need a gradient."""

    def __init__(self, inputs, outputs, scalars, needs_input_grad):
        self.inputs, self.outputs, self.scalars = tuple(inputs), tuple(outputs), tuple(scalars)
        self.needs_input_grad = tuple(needs_input_grad)


def _as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


class CustomOp:
    """A custom op made of tile kernels (see kiln.tile.op). Call it like a function of its
    tensors, then its numbers; register its meta with @op.register_fake and its derivative with
    @op.register_autograd."""

    def __init__(self, name, impl):
        self.name = name
        self._impl = impl
        self._meta = None
        self._backward = None
        self.__name__ = getattr(impl, "__name__", name)
        self.__doc__ = impl.__doc__
        self.__wrapped__ = impl
        _t.register_op(name, self)

    def __repr__(self):
        return f"<kiln.tile custom op {self.name}>"

    def register_fake(self, fn):
        """The meta function: fn(*tensors, *numbers) returns the outputs as tensors of the right
        shapes and dtypes (kiln.empty_like(x), kiln.empty(...)); it runs on fake tensors (no data,
        no memory) and raises for inputs the op does not take."""
        self._meta = fn
        return fn

    def register_autograd(self, backward):
        """The derivative: backward(ctx, *grads) returns one gradient per tensor input (None where
        there is none); ctx.inputs, ctx.outputs, ctx.scalars, ctx.needs_input_grad. It may call
        kiln ops and custom ops."""
        self._backward = backward
        return backward

    def __call__(self, *args):
        tensors, scalars = [], []
        for a in args:
            if isinstance(a, _Tensor):
                if scalars:
                    raise TypeError(f"{self.name}: tensor arguments come first, then numbers")
                tensors.append(a)
            elif isinstance(a, (int, float)):
                scalars.append(float(a))
            else:
                raise TypeError(f"{self.name} takes tensors and numbers, got a {type(a).__name__}")
        outs = _C._ops.custom(self.name, tensors, scalars or None)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # Called by kiln (python/csrc/tile.cc): the meta, the kernel and the derivative.
    def _meta_specs(self, inputs, scalars):
        if self._meta is None:
            raise TypeError(f"custom op {self.name} has no meta function: define one with "
                            f"@{self.__name__}.register_fake")
        return _as_list(self._meta(*inputs, *scalars))

    def _run(self, inputs, scalars):
        return _as_list(self._impl(*inputs, *scalars))

    def _launch_for(self, inputs):
        """The one kernel launch the function makes for these (fake) tensor inputs, as (program,
        grid, ints), where it makes exactly one, on its inputs, then its outputs, then ints, and
        returns those outputs; else None. The compiler reads the program (python/csrc/tile.cc):
        a pointwise-shaped one fuses with the ops around the op, as a C++ tile op does."""
        launches = []
        saved = getattr(_state, "launches", None)
        _state.launches = launches
        try:
            outs = _as_list(self._impl(*inputs))
        except Exception:  # (it needs data, or more than meta information: it stays an extern call)
            return None
        finally:
            _state.launches = saved
        if len(launches) != 1:
            return None
        kernel, grid, values, num_warps, num_stages = launches[0]
        args = [v for c, v in zip(kernel._const_flags, values) if not c]
        tensors = list(inputs) + outs
        if len(args) < len(tensors) or any(a is not t for a, t in zip(args, tensors)):
            return None
        ints = args[len(tensors):]
        if not all(type(i) is int for i in ints):
            return None
        grid = tuple(kernel._grid(grid, values, num_warps, num_stages))
        return kernel.trace(values, num_warps, num_stages), grid, ints

    def _run_backward(self, inputs, outputs, grads, scalars, needs):
        if self._backward is None:
            raise _C.Error(f"custom op {self.name} has no derivative: cannot backpropagate through it "
                           f"(define one with @{self.__name__}.register_autograd)")
        r = self._backward(_GradContext(inputs, outputs, scalars, needs), *grads)
        r = _as_list(r)
        if len(r) != len(inputs):
            raise _C.Error(f"custom op {self.name}'s backward returned {len(r)} gradient(s) for {len(inputs)} input(s)")
        return r


def op(name):
    """Registers a function that launches tile kernels as the custom op `name` ("mylib::vector_add"),
    the seed's triton_op: callable eagerly, captured by kiln.compile as one graph node (no graph
    break), differentiable with register_autograd.

        @kiln.tile.op("mylib::vector_add")
        def vector_add_op(x, y):
            out = kiln.empty_like(x)
            vector_add[(kiln.tile.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
            return out

        @vector_add_op.register_fake
        def _(x, y):
            return kiln.empty_like(x)

    Tensors come first, then numbers (numbers reach the functions as floats). Registering a name
    again replaces the op."""
    return lambda fn: CustomOp(name, fn)
