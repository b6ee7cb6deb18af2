"""kiln.onnx: export a model to ONNX, as torch.onnx.export does (docs/onnx.md).

kiln captures the model as kiln.compile does (one whole graph, fullgraph), decomposes it to
prims (keeping whole the composites ONNX has as single ops: Gemm, LayerNormalization, Conv,
pooling, Softmax...) and writes that graph as an ONNX model with the `onnx` package:

    kiln.onnx.export(model, (x,), "model.onnx", input_names=["x"], output_names=["y"],
                     dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
"""
import enum

from .. import _C
from .._grad_mode import no_grad
from ..nn import module as _module
from ._capture import GraphView, OnnxExporterError, capture, tensor_leaves, unwrap

__all__ = ["export", "TrainingMode", "OnnxExporterError", "is_in_onnx_export", "capture_graph", "GraphView"]

_exporting = False


class TrainingMode(enum.IntEnum):
    """The mode a module is exported in (torch.onnx.TrainingMode): EVAL (the default) switches it
    to eval() for the export, PRESERVE keeps its mode; TRAINING exports in train mode."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def _converter():
    """kiln.onnx._convert, imported when an export needs it: it imports NumPy, which `import kiln`
    does not (NumPy's import is a third of kiln's, and its BLAS threads spin ~0.1 s of CPU at
    start, on a 2-core machine half of the other core)."""
    from . import _convert
    return _convert


def is_in_onnx_export():
    """True while kiln.onnx.export traces a model."""
    return _exporting


def _require_onnx():
    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise ImportError("kiln.onnx.export needs the onnx package: pip install onnx "
                          "(and onnxruntime to run the exported model)") from e
    return onnx


def _split_args(args, kwargs):
    """torch.onnx.export's args: a tensor, or a tuple whose last item may be a dict of keywords."""
    if isinstance(args, _C.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    kw = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kw.update(args[-1])
        args = args[:-1]
    return args, kw


def _dynamic_axes(dynamic_axes):
    """{name: {dim: axis name}} from dynamic_axes' dict or list forms."""
    out = {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(d): str(a) for d, a in axes.items()}
        elif isinstance(axes, (list, tuple)):
            out[name] = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(axes)}  # PyTorch's names
        else:
            raise TypeError(f"kiln.onnx.export: dynamic_axes['{name}'] must be a dict {{dim: name}} or a list of dims, "
                            f"not {type(axes).__name__}")
    return out


def _check_unsupported(**given):
    """Arguments of torch.onnx.export kiln accepts only at their harmless values."""
    allowed = {"operator_export_type": (None,), "custom_opsets": (None, {}), "export_modules_as_functions": (False,),
               "fallback": (False,)}
    for k, v in given.items():
        if v not in allowed[k] and not (k == "operator_export_type" and str(v).endswith("ONNX")):
            raise OnnxExporterError(f"kiln.onnx.export: {k}={v!r} is not supported (leave it at its default)")


def capture_graph(model, args=(), kwargs=None):
    """The graph kiln captures for model(*args, **kwargs), decomposed to the prims (and kept
    composites) the exporter maps: a GraphView (inputs, nodes, outputs; str() prints it)."""
    args, kwargs = _split_args(args, kwargs)
    with no_grad():
        return capture(unwrap(model), args, kwargs, _converter().KEEP, {})


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=False, training=TrainingMode.EVAL,
           input_names=None, output_names=None, operator_export_type=None, opset_version=None,
           do_constant_folding=True, dynamic_axes=None, keep_initializers_as_inputs=None, custom_opsets=None,
           export_modules_as_functions=False, dynamo=False, external_data=False, fallback=False, **ignored):
    """Exports model (a kiln.nn.Module or a function of tensors) called on the example `args` as
    an ONNX model written to f (a path or a binary file; None: only returned). Returns the
    onnx.ModelProto. See docs/onnx.md for what maps and the limits."""
    global _exporting
    onnx = _require_onnx()
    _check_unsupported(operator_export_type=operator_export_type, custom_opsets=custom_opsets,
                       export_modules_as_functions=export_modules_as_functions, fallback=fallback)
    unknown = set(ignored) - {"autograd_inlining", "report", "optimize", "verify", "profile", "dump_exported_program",
                              "artifacts_dir", "strict", "dynamic_shapes", "preserve_original_output_names"}
    if unknown:
        raise TypeError(f"kiln.onnx.export() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    if ignored.get("dynamic_shapes") is not None:
        raise OnnxExporterError("kiln.onnx.export: dynamic_shapes is not supported; use dynamic_axes "
                                "(or kiln.mark_dynamic on the example inputs)")
    opset = 17 if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not 17 <= opset <= newest:
        raise OnnxExporterError(f"kiln.onnx.export: opset_version={opset} is not supported: kiln exports opset 17 "
                                f"(LayerNormalization) up to {newest} (the installed onnx package's newest)")
    args, kwargs = _split_args(args, kwargs)
    model = unwrap(model)  # kiln.compile(model): the model itself, its state_dict names without "_orig_mod."
    leaves = tensor_leaves(model, args, kwargs)
    if len(input_names or []) > len(leaves):
        raise OnnxExporterError(f"kiln.onnx.export: {len(input_names)} input_names for {len(leaves)} tensor arguments")
    names = list(input_names or []) + [name for name, _ in leaves[len(input_names or []):]]
    axes = _dynamic_axes(dynamic_axes)
    dyn = {}  # tensor argument k -> the dims to trace symbolic
    for k, (name, (_, t)) in enumerate(zip(names, leaves)):
        for d, axis in axes.get(name, {}).items():
            if not -t.dim() <= d < t.dim():
                raise OnnxExporterError(f"kiln.onnx.export: dynamic axis {d} of input '{name}' is out of range for its "
                                        f"{t.dim()}-d example")
            if t.shape[d] < 2:
                raise OnnxExporterError(f"kiln.onnx.export: dynamic axis {d} ('{axis}') of input '{name}' has size "
                                        f"{t.shape[d]} in the example; kiln specializes sizes 0 and 1, so give an "
                                        "example of size 2 or more there")
            dyn.setdefault(k, []).append(d % t.dim())

    modes = []
    if isinstance(model, _module.Module) and training != TrainingMode.PRESERVE:
        modes = [(m, m.training) for m in model.modules()]
        model.train(training == TrainingMode.TRAINING)
    _exporting = True
    try:
        with no_grad():
            view = capture(model, args, kwargs, _converter().KEEP, dyn, lambda k, d, sym: (
                f"dynamic axis {d} ('{axes.get(names[k], {}).get(d, sym)}') of input '{names[k]}'"))
    finally:
        _exporting = False
        for m, mode in modes:
            m.training = mode
    if verbose:
        print(view.text)
    proto = _build(view, names, output_names, axes, opset, export_params, keep_initializers_as_inputs)
    onnx.checker.check_model(proto)
    if f is not None:
        onnx.save_model(proto, f)
    return proto


def _build(view, input_names, output_names, axes, opset, export_params, keep_initializers_as_inputs):
    from onnx import helper
    c = _converter().Converter(opset)
    n_out = len(view.outputs)
    out_names = list(output_names or [])
    if len(out_names) > n_out:
        raise OnnxExporterError(f"kiln.onnx.export: {len(out_names)} output_names for {n_out} outputs")
    out_names += ["output" if n_out == 1 else f"output_{i}" for i in range(len(out_names), n_out)]
    clash = set(out_names) & set(input_names)
    if clash or len(set(out_names)) < n_out:
        raise OnnxExporterError(f"kiln.onnx.export: output names must be unique and differ from the input names "
                                f"(given {out_names}, inputs {input_names})")
    stray = set(axes) - set(input_names) - set(out_names)
    if stray:
        raise OnnxExporterError(f"kiln.onnx.export: dynamic_axes names {sorted(stray)}, which are neither inputs "
                                f"{input_names} nor outputs {out_names}")
    c._used.update(out_names)
    graph_inputs = []  # (value, ONNX name, dims the caller named)
    symbol_names = {}  # size symbol -> its axis name (dynamic_axes), else its own (s0)
    for k, inp in enumerate(view.inputs[:view.num_args]):
        v, name = inp["value"], input_names[k]
        c.bind(v, name)
        for d, s in enumerate(v.shape):
            if isinstance(s, tuple) and s[0] == "sym":
                c.symbols[s[1]] = (name, d)
                symbol_names[s[1]] = axes.get(name, {}).get(d, s[1])
        graph_inputs.append((v, name, axes.get(name)))
    for k, inp in enumerate(view.inputs[view.num_args:]):  # parameters, buffers, other captured tensors
        v = inp["value"]
        name = c.fresh(inp["name"] or f"captured_{k}")
        c.bind(v, name)
        if export_params:
            c.tensor_initializer(name, inp["tensor"])
        if not export_params or keep_initializers_as_inputs:
            graph_inputs.append((v, name, None))
    for n in view.nodes:
        if n["op"] == "copy_":
            c.node = n
            c.fail("the model writes into one of its inputs or buffers (an in-place update such as a running "
                   "statistic); ONNX models have no state")
        c.convert_node(n)

    def dims(v, named):
        out = []
        for d, s in enumerate(v.shape):
            if named and d in named:
                out.append(named[d])
            elif isinstance(s, int):
                out.append(s)
            else:
                out.append(_expr_str(s, symbol_names))
        return out

    inputs = [helper.make_tensor_value_info(name, c.onnx_type(v.dtype), dims(v, named)) for v, name, named in graph_inputs]
    produced = {o for node in c.nodes for o in node.output}
    outputs, renamed = [], set()
    for v, name in zip(view.outputs, out_names):
        src = c.names[v.id]
        if src in produced and src not in renamed:  # the node's output takes the output's name
            for node in c.nodes:
                for field in (node.input, node.output):
                    for i, x in enumerate(field):
                        if x == src:
                            field[i] = name
            c.names[v.id] = name
            renamed.add(name)
        else:  # an input, a parameter, a constant, or a value returned twice
            c.nodes.append(helper.make_node("Identity", [src], [name], name=c.fresh("Identity")))
        outputs.append(helper.make_tensor_value_info(name, c.onnx_type(v.dtype), dims(v, axes.get(name))))
    # Constants that were only used converted (a wrapped number cast at its use) and parameters
    # the graph does not read are left out.
    used = {x for node in c.nodes for x in node.input} | {name for _, name, _ in graph_inputs}
    initializers = [i for i in c.initializers if i.name in used]
    g = helper.make_graph(c.nodes, "kiln", inputs, outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(g, opset_imports=opsets, producer_name="kiln")
    model.ir_version = helper.find_min_ir_version_for(opsets)
    return model


def _expr_str(e, names):
    if isinstance(e, int):
        return str(e)
    kind, args = e[0], e[1:]
    if kind == "sym":
        return names.get(args[0], args[0])
    parts = [_expr_str(a, names) for a in args]
    if kind in ("add", "mul"):
        return "(" + (" + " if kind == "add" else "*").join(parts) + ")"
    if kind == "floordiv":
        return f"({parts[0]} // {parts[1]})"
    if kind == "mod":
        return f"({parts[0]} % {parts[1]})"
    return f"{kind}({', '.join(parts)})"
