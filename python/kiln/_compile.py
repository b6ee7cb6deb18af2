"""kiln.compile for Python functions and modules (the engine is C++: src/capture).

The call's arguments are flattened (tuples, lists, dicts) into leaves: tensors become graph
inputs, numbers are guarded by value, modules by identity, by their parameters' and buffers'
identities and by a fingerprint of their attributes (self.training, eps, flags...:
nn.module.state_fingerprint), so train() and eval() graphs stay cached side by side. Other
leaves (strings, None, ...) and the structure select a separate cache. What the function reads
beyond its arguments (globals, closures, attributes and items of objects) is guarded too, and
writes outside it break the graph (_guards.py).
"""
import contextlib
import functools
import weakref

from . import _C
from . import _guards
from .nn import module as _module

_LEAF_TYPES = (bool, int, float)


def _flatten(obj, leaves, static):
    """Appends obj's tensors, numbers and modules to leaves; returns a structure spec."""
    if isinstance(obj, _C.Tensor) or isinstance(obj, _LEAF_TYPES):
        leaves.append(obj)
        return "*"
    if isinstance(obj, _module.Module):
        leaves.append(_module_leaf(obj))
        return "m"
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_flatten(o, leaves, static) for o in obj))
    if isinstance(obj, dict):
        keys = tuple(obj.keys())
        return (dict, keys, tuple(_flatten(obj[k], leaves, static) for k in keys))
    static.append(obj)
    return ("static", len(static) - 1)


def _module_leaf(m):
    tensors = [t for _, t in m.named_parameters()] + [t for _, t in m.named_buffers()]
    return (m, tensors, _module.state_fingerprint(m))


def _unflatten(spec, it, static):
    if spec == "*" or spec == "m":
        return next(it)
    if spec[0] == "static":
        return static[spec[1]]
    if spec[0] is dict:
        return {k: _unflatten(s, it, static) for k, s in zip(spec[1], spec[2])}
    items = [_unflatten(s, it, static) for s in spec[1]]
    return items if spec[0] is list else tuple(items) if spec[0] is tuple else spec[0](*items)


def _flatten_output(out):
    """(the output's structure spec, its tensors in order)."""
    tensors = []
    return _walk_output(out, tensors), tensors


# (A function of its own, not a closure: a recursive closure is a reference cycle holding the
# tensors list, so every call's outputs would live until the garbage collector ran.)
def _walk_output(o, tensors):
    if isinstance(o, _C.Tensor):
        tensors.append(o)
        return "*"
    if isinstance(o, (list, tuple)):
        return (type(o), tuple(_walk_output(x, tensors) for x in o))
    if isinstance(o, dict):
        return (dict, tuple(o.keys()), tuple(_walk_output(v, tensors) for v in o.values()))
    if o is None:
        return ("static", None)
    raise TypeError(f"kiln.compile: a compiled function must return tensors (or lists/tuples/dicts of them), "
                    f"not {type(o).__name__}")


@functools.lru_cache(maxsize=None)
def _all_leaves(n):
    """The structure _flatten gives (args, kwargs) of n tensors or numbers and no keywords."""
    return (tuple, ((tuple, ("*",) * n), (dict, (), ())))


class CompiledFunction(_C._CompiledCall):
    """A function (or module) compiled by kiln.compile; call it like the original.

    A call goes first to the C++ base (_C._CompiledCall): where every argument is a tensor or a
    number given positionally and a cached graph's guards hold, it runs that graph from C++.
    Everything else comes to _slow_call, which registers the engine of such calls in _fast."""

    def __init__(self, fn, options):
        self._fn = fn
        self._options = options
        self._engines = {}  # (argument structure, static leaves) -> engine
        self._out_specs = {}
        self._fast = []  # number of arguments -> (engine, output structure) of all-leaf positional calls
        functools.update_wrapper(self, fn if not isinstance(fn, _module.Module) else fn.forward, updated=())

    def _engine(self, key):
        e = self._engines.get(key)
        if e is None:
            o = self._options
            name = getattr(self._fn, "__qualname__", type(self._fn).__name__)
            e = _C._CompileEngine(o["backend"], o["dynamic"], o["recompile_limit"], o["error_on_recompile_limit"],
                                  o["fullgraph"], name, o.get("mode") or "default")
            self._engines[key] = e
        return e

    def _slow_call(self, *args, **kwargs):
        leaves, static = [], []
        fn = self._fn
        if isinstance(fn, _module.Module):
            spec = _flatten(((fn,) + args, kwargs), leaves, static)
        else:
            spec = _flatten((args, kwargs), leaves, static)
        try:
            key = (spec, tuple(static))
            hash(key)
        except TypeError:
            key = (spec, tuple(id(s) for s in static))
        engine = self._engine(key)
        out_spec = []  # (number of outputs, (output structure, replayed attributes)) of each body run
        traced = []    # the recorder of a trace that replays attribute stores
        nested = _C._tracing()

        def body(values):
            a, k = _unflatten(spec, iter(values), static)
            a = a[1:] if isinstance(fn, _module.Module) else a
            # While tracing: record the Python values the function reads (guards) and stop it
            # before a write outside it (a graph break); in segments and eagerly it just runs.
            # (Not when this call is inside another compiled function's trace: the body runs
            # inline there, and the outer recorder follows its frames.)
            recorder = _guards.Recorder(fn, args, kwargs) if _guards.Recorder.supported and _C._tracing() and not nested else None
            with recorder or contextlib.nullcontext():
                out = fn(*a, **k)
            s, tensors = _flatten_output(out)
            replayed = ()
            if recorder is not None:
                recorder.attach()
                if recorder.stores:  # module attributes assigned tensors: extra graph outputs
                    traced.append(recorder)
                    replayed = tuple((weakref.ref(o), name) for o, name, _ in recorder.stores)
                    tensors = tensors + [o.__dict__[name] for o, name, _ in recorder.stores]
            out_spec.append((len(tensors), (s, replayed)))
            return tensors

        try:
            outs = engine.call(leaves, body, (args, kwargs))
        except BaseException:
            for recorder in traced:  # no real values for the fake tensors the trace stored
                recorder.restore_stores()
            raise
        # The output structure of each graph of this argument structure, by its number of
        # outputs (a graph replaying attribute stores has more than one that does not).
        specs = self._out_specs.setdefault(key, {})
        if out_spec:
            specs[out_spec[-1][0]] = out_spec[-1][1]
        s, replayed = specs[len(outs)] if len(outs) in specs else next(iter(specs.values()))
        if replayed:
            n = len(outs) - len(replayed)
            for (ref, name), value in zip(replayed, outs[n:]):
                obj = ref()
                if obj is not None:
                    obj.__dict__[name] = value  # (not a state change: replay_attribute took it out)
            outs = outs[:n]
        if not isinstance(fn, _module.Module) and spec == _all_leaves(len(args)):
            self._fast.extend([None] * (len(args) + 1 - len(self._fast)))
            # (the C++ path rebuilds outputs and replays nothing: only where no graph replays)
            single = len(specs) == 1 and not replayed
            self._fast[len(args)] = (engine, s) if single else None
        return _C._rebuild_output(s, outs)

    def explain(self):
        """What capture did (merged over argument structures): see kiln.explain."""
        return Explanation([e.report() for e in self._engines.values()])

    def __get__(self, obj, objtype=None):  # decorating a method
        return self if obj is None else functools.partial(self, obj)


class Explanation:
    """kiln.explain's result: graph_count, ops_per_graph, breaks [(reason, file, line)], guards,
    recompile_reasons, compile_ms, graphs (IR text), specializations, constants (every value baked
    into a graph: its name if known, its value, where it came from); str() prints it readably."""

    def __init__(self, reports):
        self.graph_count = sum(r["graph_count"] for r in reports)
        self.break_count = sum(len(r["breaks"]) for r in reports)
        for field in ("ops_per_graph", "breaks", "guards", "recompile_reasons", "compile_ms", "graphs",
                      "specializations", "constants"):
            setattr(self, field, [x for r in reports for x in r[field]])
        self.eager_fallback = any(r["eager_fallback"] for r in reports)
        self._text = "\n".join(r["text"] for r in reports)

    def __str__(self):
        return self._text

    __repr__ = __str__


def compile(fn=None, *, backend="inductor", dynamic=None, fullgraph=False, recompile_limit=8,
            error_on_recompile_limit=False, mode=None):
    """Captures fn (a function or a kiln.nn.Module) as graphs guarded by what they assumed; usable as
    a decorator (@kiln.compile or @kiln.compile(backend=...)). See docs/compile.md."""
    if mode is not None and mode != "default":  # (an unknown backend alone still fails at the first call)
        _C._check_backend(backend, mode)
    options = dict(backend=backend, dynamic=dynamic, fullgraph=fullgraph, recompile_limit=recompile_limit,
                   error_on_recompile_limit=error_on_recompile_limit, mode=mode)
    if fn is None:
        return lambda f: _compiled(f, options)
    return _compiled(fn, options)


def _compiled(fn, options):
    """A Module becomes an OptimizedModule (a Module forwarding to it), anything else a
    CompiledFunction."""
    from ._optimized_module import OptimizedModule
    if isinstance(fn, OptimizedModule):
        fn = fn._orig_mod
    if isinstance(fn, _module.Module):
        return OptimizedModule(fn, CompiledFunction(fn, options))
    return CompiledFunction(fn, options)


def explain(fn, *args, **kwargs):
    """Compiles fn afresh, calls it once with the arguments, and returns what capture did."""
    from ._optimized_module import OptimizedModule
    if isinstance(fn, OptimizedModule):
        fn = fn._orig_mod
    c = CompiledFunction(fn, dict(backend="inductor", dynamic=None, fullgraph=False, recompile_limit=8,
                                  error_on_recompile_limit=False))
    c(*args, **kwargs)
    return c.explain()


def mark_dynamic(t, dim, min=None, max=None):
    """Makes dim `dim` of t symbolic whenever t is passed to a compiled function."""
    _C.mark_dynamic(t, dim, min, max)


def cond(pred, true_fn, false_fn, operands=()):
    return _C.cond(pred, true_fn, false_fn, tuple(operands))


@contextlib.contextmanager
def lazy(backend="inductor"):
    """Lazy mode: ops inside are recorded, not run; data is computed when read or at the end."""
    scope = _C._LazyScope(backend)
    try:
        yield scope
    finally:
        del scope


def opaque(fn):
    """Marks fn as opaque to kiln.compile: calling it is a graph break, and it runs eagerly on real
    tensors (for code capture can't or shouldn't look into: logging, I/O, other libraries)."""
    name = getattr(fn, "__qualname__", "a function marked opaque")

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        scope = _C._OpaqueScope(name)
        try:
            return fn(*args, **kwargs)
        finally:
            del scope
    return wrapped


set_logs = _C.set_logs
list_backends = _C.list_backends
