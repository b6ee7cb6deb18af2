"""The captured graph of a model for given example inputs, as kiln.compile captures it.

capture() compiles the model with the backend "_graph_view" (fullgraph: one graph or an error)
and calls it once inside _C._graph_view, which hands back the traced graph; its view() is that
graph decomposed to prims (composites the exporter maps directly stay whole) and functionalized,
with each input's bound tensor and its state_dict name (python/csrc/graph_view.cc).
"""
import inspect

from .. import _C
from .. import _compile
from .._optimized_module import OptimizedModule
from ..nn import module as _module


class OnnxExporterError(RuntimeError):
    """kiln.onnx.export cannot express the model: a graph break, an op without an ONNX mapping,
    a dynamic axis the model fixed, an argument kiln does not support."""


class GraphView:
    """inputs: [{value, tensor, name}] (the model's tensor arguments first, then the tensors it
    read: parameters, buffers, other captured tensors); num_args: how many are arguments; nodes:
    [{op, args [(name, value)], outputs, literal, wrapped, origin, file, line}]; outputs: [value];
    specializations: symbolic sizes the model fixed; text: the IR with origins; result: the
    model's output on the example inputs (eager, through the graph)."""

    def __init__(self, view, num_args, specializations, result):
        self.inputs = view["inputs"]
        self.nodes = view["nodes"]
        self.outputs = view["outputs"]
        self.text = view["text"]
        self.num_args = num_args
        self.specializations = specializations
        self.result = result

    def __str__(self):
        return self.text


def unwrap(model):
    """The module or function a kiln.compile result wraps (an export captures it afresh)."""
    if isinstance(model, OptimizedModule):
        model = model._orig_mod
    while isinstance(model, _compile.CompiledFunction):
        model = model._fn
    return model


def capture(model, args, kwargs, keep, dynamic_dims, describe_axis=None):
    """The GraphView of model(*args, **kwargs). dynamic_dims: {k: [dims]} of the k-th tensor
    argument (map_tensors' order) to trace with symbolic sizes, besides those kiln.mark_dynamic
    marked; describe_axis(k, dim, symbol): how errors name dim `dim` of the k-th tensor argument."""
    def alias(k, name, t):
        if k not in dynamic_dims:
            return t
        a = _C._graph_view_alias(t)  # the caller's tensor keeps its marks as they were
        for d in dynamic_dims[k]:
            _compile.mark_dynamic(a, d)
        return a
    args, kwargs = map_tensors(model, args, kwargs, alias)
    fn = _compile.CompiledFunction(model, dict(backend="_graph_view", dynamic=False, fullgraph=True,
                                               recompile_limit=1, error_on_recompile_limit=True))
    num_args = len(tensor_leaves(model, args, kwargs))
    try:
        captured, result = _C._graph_view(lambda: fn(*args, **kwargs))
    except Exception as e:
        breaks = fn.explain().breaks
        if not breaks:
            raise
        reason, file, line = breaks[0]
        where = f" at {file}:{line}" if file else ""
        raise OnnxExporterError(f"kiln.onnx.export: the model has a graph break: {reason}{where}. ONNX needs the "
                                "whole model as one graph: remove the host sync (item(), printing, a branch on "
                                "a tensor's value, data-dependent shapes) or use kiln.where / kiln.cond") from e
    specializations = fn.explain().specializations
    describe_axis = describe_axis or (lambda k, d, sym: f"dim {d} of tensor argument {k}")
    for k, shape in enumerate(captured.input_shapes()[:num_args]):
        for d, s in enumerate(shape):
            fixed = [x for x in specializations if isinstance(s, tuple) and s[0] == "sym" and x.startswith(s[1] + " = ")]
            if fixed:
                raise OnnxExporterError(
                    f"kiln.onnx.export: {describe_axis(k, d, s[1])} was fixed by the model: {fixed[0]}. The model "
                    "reads that size as a number (x.shape, x.size(d), or an op that needs it fixed), so the graph "
                    "holds only for the example's size: export without that dynamic axis, or compute with sizes "
                    "kiln keeps symbolic (ops on tensors, reshape(-1, ...), flatten)")
    named = []
    if isinstance(model, _module.Module):
        named = [(k, t) for k, t in model.state_dict(keep_vars=True).items() if isinstance(t, _C.Tensor)]
    return GraphView(captured.view(keep, named), num_args, specializations, result)


def map_tensors(model, args, kwargs, fn):
    """(args, kwargs) with every tensor t replaced by fn(k, name, t), k counting the tensors in the
    order they become graph inputs (kiln.compile's flattening: positional arguments, then keyword
    arguments; lists, tuples and dicts item by item). name: the forward's parameter name (a list's
    items name_0, name_1, ..., a dict's name_key), input_i past the named parameters."""
    target = model.forward if isinstance(model, _module.Module) else model
    try:
        params = [p.name for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    count = [0]

    def walk(obj, name):
        if isinstance(obj, _C.Tensor):
            count[0] += 1
            return fn(count[0] - 1, name, obj)
        if isinstance(obj, dict):
            return {k: walk(v, f"{name}_{k}") for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            items = [walk(o, f"{name}_{j}") for j, o in enumerate(obj)]
            return items if isinstance(obj, list) else type(obj)._make(items) if hasattr(obj, "_make") else type(obj)(items)
        return obj
    args = tuple(walk(a, params[i] if i < len(params) else f"input_{i}") for i, a in enumerate(args))
    return args, {k: walk(v, k) for k, v in kwargs.items()}


def tensor_leaves(model, args, kwargs):
    """[(name, tensor)] of the call's tensor arguments, in graph-input order (map_tensors)."""
    out = []
    map_tensors(model, args, kwargs, lambda k, name, t: out.append((name, t)) or t)
    return out
