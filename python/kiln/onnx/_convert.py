"""The captured prims graph (a GraphView) as an ONNX GraphProto: one handler per op (OPS).

Each handler gets the converter, the node and its arguments by schema name, and returns the ONNX
names of the node's outputs. kiln's type promotion is explicit in the graph's value types, so a
handler casts its inputs to the types ONNX wants (Converter.input). Sizes may be symbolic: an
expression over size symbols becomes int64 arithmetic on Shape() of the input it came from
(Converter.size, Converter.shape).
"""
import math

import numpy as np

from .. import _C, _creation
from ._capture import OnnxExporterError

_INT64_MAX = 2**63 - 1
_INT64_MIN = -2**63


def _dtype_table():
    import onnx
    P = onnx.TensorProto
    names = {"float64": P.DOUBLE, "float32": P.FLOAT, "float16": P.FLOAT16, "bfloat16": P.BFLOAT16,
             "int64": P.INT64, "int32": P.INT32, "int16": P.INT16, "int8": P.INT8, "uint8": P.UINT8, "bool": P.BOOL}
    return {str(getattr(_C, k)): v for k, v in names.items()}  # keyed by str(dtype): "kiln.float32"


def _dname(dtype):
    return str(dtype).replace("kiln.", "")


def _is_float(dtype):
    return dtype.is_floating_point


def to_numpy(t):
    """A tensor's data as a numpy array (bfloat16 as float32: ONNX stores it through its bits)."""
    t = t.detach().contiguous()
    if _dname(t.dtype) == "bfloat16":
        return t.float().numpy()
    return t.numpy()


class Converter:
    def __init__(self, opset):
        import onnx
        from onnx import helper
        self.onnx, self.helper, self.opset = onnx, helper, opset
        self.types = _dtype_table()
        self.nodes, self.initializers = [], []
        self.names = {}          # value id -> ONNX name
        self.constants = {}      # value id -> numpy literal (constant nodes)
        self.wrapped = set()     # ids of the constants that are wrapped numbers
        self.symbols = {}        # size symbol -> (ONNX input name, dim)
        self._sizes = {}         # symbolic expression -> ONNX name of its int64 [1] tensor
        self._casts = {}
        self._used = set()
        self.node = None         # the node being converted (for error messages)

    # ---- names
    def fresh(self, hint):
        hint = "".join(c if c.isalnum() or c in "._" else "_" for c in hint) or "t"
        name, k = hint, 1
        while name in self._used:
            name, k = f"{hint}_{k}", k + 1
        self._used.add(name)
        return name

    def bind(self, v, name):
        self.names[v.id] = name
        self._used.add(name)

    def onnx_type(self, dtype):
        t = self.types.get(str(dtype))
        if t is None:
            self.fail(f"the dtype {dtype} has no ONNX type")
        return t

    # ---- building
    def emit(self, op_type, inputs, n_out=1, name_hints=None, **attrs):
        outs = [self.fresh(h) for h in (name_hints or [f"{op_type}_out"] * n_out)]
        node = self.helper.make_node(op_type, list(inputs), outs, name=self.fresh(op_type), **attrs)
        if self.node is not None and self.node.get("file"):
            node.doc_string = f"{self.node.get('origin') or self.node['op']} @ {self.node['file']}:{self.node['line']}"
        self.nodes.append(node)
        return outs if n_out != 1 else outs[0]

    def initializer(self, name, array, onnx_type):
        """Adds an initializer of ONNX type onnx_type holding array's values; returns its name."""
        if onnx_type == self.onnx.TensorProto.BFLOAT16:  # numpy has no bfloat16: its bits, rounded to nearest even
            u = np.array(array, np.float32).view(np.uint32).astype(np.uint64)  # (np.array: a C-ordered copy, 0-d kept)
            bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            init = self.helper.make_tensor(name, onnx_type, list(np.shape(array)), bits.tobytes(), raw=True)
        else:
            np_t = self.helper.tensor_dtype_to_np_dtype(onnx_type)
            init = self.onnx.numpy_helper.from_array(np.array(array, dtype=np_t), name)
        self.initializers.append(init)
        return name

    def tensor_initializer(self, name, t):
        return self.initializer(name, to_numpy(t), self.onnx_type(t.dtype))

    def ints(self, values, hint="ints"):
        return self.initializer(self.fresh(hint), np.array(values, dtype=np.int64), self.onnx.TensorProto.INT64)

    def scalar(self, value, dtype, hint="scalar"):
        """A 0-d constant of kiln dtype `dtype`."""
        return self.initializer(self.fresh(hint), np.array(value), self.onnx_type(dtype))

    def input(self, v, dtype=None):
        """The ONNX name of value v, cast to kiln dtype `dtype` when given and different."""
        if v is None:
            return ""
        name = self.names[v.id]
        if dtype is None or str(dtype) == str(v.dtype):
            return name
        key = (v.id, str(dtype))
        if key not in self._casts:
            if v.id in self.constants:  # a literal (a wrapped number): converted here, no Cast node
                self._casts[key] = self.initializer(self.fresh(name + "_" + _dname(dtype)), self.constants[v.id],
                                                    self.onnx_type(dtype))
            else:
                self._casts[key] = self.emit("Cast", [name], to=self.onnx_type(dtype))
        return self._casts[key]

    def stand_in(self, v):
        """For kiln's type promotion: a wrapped number as the Python number it was, any other
        value as an empty tensor of its dtype and rank."""
        if v.id in self.wrapped:
            return self.constants[v.id].item()
        return _creation.empty([1] * len(v.shape), dtype=v.dtype)

    def cast(self, name, dtype):
        return self.emit("Cast", [name], to=self.onnx_type(dtype))

    # ---- sizes
    def size(self, e):
        """The ONNX name of an int64 [1] tensor holding size expression e (an int or a symbolic
        expression from the view: ("sym", name), ("add", ...), ...)."""
        if isinstance(e, int):
            return self.ints([e], "size")
        if e in self._sizes:
            return self._sizes[e]
        kind, args = e[0], e[1:]
        if kind == "sym":
            if args[0] not in self.symbols:
                self.fail(f"the size symbol {args[0]} comes from no input of the model")
            src, dim = self.symbols[args[0]]
            out = self.emit("Shape", [src], start=dim, end=dim + 1)
        elif kind in ("add", "mul", "min", "max"):
            op = {"add": "Add", "mul": "Mul", "min": "Min", "max": "Max"}[kind]
            out = self.size(args[0])
            for a in args[1:]:
                out = self.emit(op, [out, self.size(a)])
        elif kind == "floordiv":  # floor((a - a mod b) / b): exact, so Div's truncation is floor
            a, b = self.size(args[0]), self.size(args[1])
            out = self.emit("Div", [self.emit("Sub", [a, self.emit("Mod", [a, b], fmod=0)]), b])
        elif kind == "mod":
            out = self.emit("Mod", [self.size(args[0]), self.size(args[1])], fmod=0)
        else:
            self.fail(f"a size expression of kind '{kind}'")
        self._sizes[e] = out
        return out

    def shape(self, dims):
        """The ONNX name of an int64 1-D tensor holding the sizes `dims` (ints or expressions)."""
        dims = list(dims)
        if all(isinstance(d, int) for d in dims):
            return self.ints(dims, "shape")
        parts, run = [], []
        for d in dims:
            if isinstance(d, int):
                run.append(d)
                continue
            if run:
                parts.append(self.ints(run, "shape"))
                run = []
            parts.append(self.size(d))
        if run:
            parts.append(self.ints(run, "shape"))
        return parts[0] if len(parts) == 1 else self.emit("Concat", parts, axis=0)

    def static(self, value, what):
        """An int (or list of ints) that must be known at export time."""
        if isinstance(value, (list, tuple)):
            return [self.static(v, what) for v in value]
        if not isinstance(value, int):
            self.fail(f"{what} is a symbolic size here ({value}); ONNX needs it fixed")
        return value

    def fail(self, what):
        """An OnnxExporterError about the node being converted: its prim (unless `what` names
        it), the op of the user's program it came from and the user's source line."""
        n, context = self.node, []
        if n is not None:
            if f"'{n['op']}'" not in what:
                context.append(f"in {n['op']}")
            if n.get("origin") and n["origin"] != n["op"]:
                context.append(f"from {n['origin']}")
            if n.get("file"):
                context.append(f"at {n['file']}:{n['line']}")
        raise OnnxExporterError(f"kiln.onnx.export: {what}" + (f" ({', '.join(context)})" if context else ""))

    # ---- the graph
    def convert_node(self, n):
        self.node = n
        if n["op"] == "constant":
            v = n["outputs"][0]
            name = self.tensor_initializer(self.fresh(f"const_{v.id}"), n["literal"])
            self.constants[v.id] = to_numpy(n["literal"])
            if n["wrapped"]:
                self.wrapped.add(v.id)
            self.bind(v, name)
            return
        handler = OPS.get(n["op"])
        if handler is None:
            self.fail(f"no ONNX mapping for the prim '{n['op']}'")
        a = dict(n["args"])
        outs = handler(self, n, a)
        outs = [outs] if isinstance(outs, str) else list(outs)
        for v, name in zip(n["outputs"], outs):
            self.bind(v, name)
        self.node = None


# ---------------------------------------------------------------- handlers
OPS = {}


def op(*names):
    def register(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return register


def _out(n, i=0):
    return n["outputs"][i]


def _unary(onnx_op):
    def handler(c, n, a):
        out = _out(n)
        return c.emit(onnx_op, [c.input(a["self"], out.dtype)])
    return handler


for _k, _o in {"neg": "Neg", "abs": "Abs", "sign": "Sign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
               "reciprocal": "Reciprocal", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos",
               "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh",
               "atanh": "Atanh", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round",
               "sigmoid": "Sigmoid", "relu": "Relu"}.items():
    OPS[_k] = _unary(_o)


@op("logical_not")
def _logical_not(c, n, a):
    return c.emit("Not", [c.input(a["self"], _C.bool)])


@op("isnan", "isinf")
def _isnan(c, n, a):
    x = a["self"]
    if not _is_float(x.dtype):
        return c.emit("Expand", [c.scalar(False, _C.bool), c.shape(x.shape)])
    return c.emit("IsNaN" if n["op"] == "isnan" else "IsInf", [c.input(x)])


@op("isfinite")
def _isfinite(c, n, a):
    x = a["self"]
    if not _is_float(x.dtype):
        return c.emit("Expand", [c.scalar(True, _C.bool), c.shape(x.shape)])
    x = c.input(x)
    return c.emit("Not", [c.emit("Or", [c.emit("IsNaN", [x]), c.emit("IsInf", [x])])])


@op("rsqrt")
def _rsqrt(c, n, a):
    return c.emit("Reciprocal", [c.emit("Sqrt", [c.input(a["self"], _out(n).dtype)])])


@op("exp2", "expm1", "log2", "log1p", "erfc")
def _exp_family(c, n, a):
    dt = _out(n).dtype
    x = c.input(a["self"], dt)
    one = c.scalar(1, dt)
    if n["op"] == "exp2":
        return c.emit("Pow", [c.scalar(2, dt), x])
    if n["op"] == "expm1":
        return c.emit("Sub", [c.emit("Exp", [x]), one])
    if n["op"] == "log2":
        return c.emit("Div", [c.emit("Log", [x]), c.scalar(math.log(2), dt)])
    if n["op"] == "log1p":
        return c.emit("Log", [c.emit("Add", [x, one])])
    return c.emit("Sub", [one, c.emit("Erf", [x])])


@op("trunc")
def _trunc(c, n, a):
    x = c.input(a["self"])
    if not _is_float(a["self"].dtype):
        return c.emit("Identity", [x])
    return c.emit("Mul", [c.emit("Sign", [x]), c.emit("Floor", [c.emit("Abs", [x])])])


def _binary(onnx_op):
    def handler(c, n, a):
        dt = _out(n).dtype
        return c.emit(onnx_op, [c.input(a["self"], dt), c.input(a["other"], dt)])
    return handler


for _k, _o in {"add": "Add", "sub": "Sub", "mul": "Mul", "maximum": "Max", "minimum": "Min"}.items():
    OPS[_k] = _binary(_o)


@op("pow")
def _pow(c, n, a):
    dt = _out(n).dtype
    return c.emit("Pow", [c.input(a["self"], dt), c.input(a["exponent"], dt)])


def _floor_div(c, x, y, dt):
    if _is_float(dt):
        return c.emit("Floor", [c.emit("Div", [x, y])])
    return c.emit("Div", [c.emit("Sub", [x, c.emit("Mod", [x, y], fmod=0)]), y])  # exact: truncation is floor


@op("div")
def _div(c, n, a):
    dt = _out(n).dtype
    x, y = c.input(a["self"], dt), c.input(a["other"], dt)
    mode = a.get("rounding_mode")
    if mode is None or (mode == "trunc" and not _is_float(dt)):
        return c.emit("Div", [x, y])  # ONNX's integer Div truncates, as kiln's trunc mode does
    if mode == "trunc":
        q = c.emit("Div", [x, y])
        return c.emit("Mul", [c.emit("Sign", [q]), c.emit("Floor", [c.emit("Abs", [q])])])
    return _floor_div(c, x, y, dt)


@op("floor_divide")
def _floor_divide(c, n, a):
    dt = _out(n).dtype
    return _floor_div(c, c.input(a["self"], dt), c.input(a["other"], dt), dt)


@op("remainder", "fmod")
def _remainder(c, n, a):
    dt = _out(n).dtype
    x, y = c.input(a["self"], dt), c.input(a["other"], dt)
    if n["op"] == "fmod" or not _is_float(dt):
        return c.emit("Mod", [x, y], fmod=1 if n["op"] == "fmod" else 0)
    return c.emit("Sub", [x, c.emit("Mul", [c.emit("Floor", [c.emit("Div", [x, y])]), y])])  # x - floor(x/y)*y


@op("hypot")
def _hypot(c, n, a):
    dt = _out(n).dtype
    x, y = c.input(a["self"], dt), c.input(a["other"], dt)
    return c.emit("Sqrt", [c.emit("Add", [c.emit("Mul", [x, x]), c.emit("Mul", [y, y])])])


def _compare(onnx_op, negate=False):
    def handler(c, n, a):
        x, y = a["self"], a["other"]
        dt = _C.result_type(c.stand_in(x), c.stand_in(y))  # what kiln compared in
        out = c.emit(onnx_op, [c.input(x, dt), c.input(y, dt)])
        return c.emit("Not", [out]) if negate else out
    return handler


for _k, _o in {"eq": ("Equal", False), "ne": ("Equal", True), "lt": ("Less", False), "le": ("LessOrEqual", False),
               "gt": ("Greater", False), "ge": ("GreaterOrEqual", False)}.items():
    OPS[_k] = _compare(*_o)


@op("logical_and", "logical_or", "logical_xor")
def _logical(c, n, a):
    o = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}[n["op"]]
    return c.emit(o, [c.input(a["self"], _C.bool), c.input(a["other"], _C.bool)])


@op("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
def _bitwise(c, n, a):
    dt = _out(n).dtype
    if _dname(dt) == "bool":
        o = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor", "bitwise_not": "Not"}[n["op"]]
    else:
        if c.opset < 18:
            c.fail(f"{n['op']} on integers needs opset 18 or later (opset_version={c.opset})")
        o = {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor",
             "bitwise_not": "BitwiseNot"}[n["op"]]
    ins = [c.input(a["self"], dt)] + ([c.input(a["other"], dt)] if "other" in a else [])
    return c.emit(o, ins)


@op("where")
def _where(c, n, a):
    dt = _out(n).dtype
    return c.emit("Where", [c.input(a["condition"], _C.bool), c.input(a["self"], dt), c.input(a["other"], dt)])


@op("convert_element_type")
def _convert(c, n, a):
    return c.input(a["self"], a["dtype"]) if str(a["dtype"]) != str(a["self"].dtype) else c.emit("Identity", [c.input(a["self"])])


# ---- views and layout: ONNX has value semantics, so a view is the data it shows


@op("view")
def _view(c, n, a):
    shape = list(_out(n).shape)
    return c.emit("Reshape", [c.input(a["self"]), c.shape(shape)], allowzero=int(0 in shape))


@op("expand", "broadcast_in_dim")
def _expand(c, n, a):
    out, x = _out(n), a["self"]
    src = c.input(x)
    if n["op"] == "broadcast_in_dim":
        dims = list(a["broadcast_dimensions"])
        if dims != sorted(dims):
            c.fail("broadcast_in_dim with dimensions out of order")
        missing = [d for d in range(len(out.shape)) if d not in dims]
        if missing:
            src = c.emit("Unsqueeze", [src, c.ints(missing, "axes")])
    return c.emit("Expand", [src, c.shape(out.shape)])


@op("permute")
def _permute(c, n, a):
    rank = len(a["self"].shape)
    return c.emit("Transpose", [c.input(a["self"])], perm=[d % rank if rank else 0 for d in a["dims"]])


@op("slice")
def _slice(c, n, a):
    x = a["self"]
    rank = len(x.shape)
    dim = a["dim"] % rank
    start = 0 if a["start"] is None else a["start"]
    end = _INT64_MAX if a["end"] is None else a["end"]
    step = c.static(a["step"], "a slice's step")
    return c.emit("Slice", [c.input(x), c.shape([start]), c.shape([end]), c.ints([dim], "axes"), c.ints([step], "steps")])


@op("squeeze")
def _squeeze(c, n, a):
    x = a["self"]
    rank = len(x.shape)
    dims = a["dim"]
    if dims is None:
        dims = [d for d, s in enumerate(x.shape) if s == 1]
    dims = [d % rank for d in dims if x.shape[d % rank] == 1]  # squeezing a dim of size > 1 is a no-op
    if not dims:
        return c.emit("Identity", [c.input(x)])
    return c.emit("Squeeze", [c.input(x), c.ints(dims, "axes")])


@op("unsqueeze")
def _unsqueeze(c, n, a):
    return c.emit("Unsqueeze", [c.input(a["self"]), c.ints([a["dim"]], "axes")])


@op("cat")
def _cat(c, n, a):
    dt = _out(n).dtype
    rank = len(_out(n).shape)
    parts = [c.input(t, dt) for t in a["tensors"] if t is not None and not (len(t.shape) == 1 and t.shape[0] == 0 and rank != 1)]
    return c.emit("Concat", parts, axis=a["dim"] % rank)


@op("constant_pad")
def _constant_pad(c, n, a):
    x = a["self"]
    rank = len(x.shape)
    pad = list(a["pad"])
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # (last dim's begin, end), then the previous dim's ...
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return c.emit("Pad", [c.input(x), c.shape(begins + ends), c.scalar(a["value"], x.dtype)], mode="constant")


@op("flip")
def _flip(c, n, a):
    x = a["self"]
    rank = len(x.shape)
    dims = [d % rank for d in a["dims"]]
    k = len(dims)
    return c.emit("Slice", [c.input(x), c.ints([-1] * k, "starts"), c.ints([_INT64_MIN] * k, "ends"),
                            c.ints(dims, "axes"), c.ints([-1] * k, "steps")])


# ---- reductions


def _reduce_dims(x, dims):
    rank = len(x.shape)
    if dims is None or len(dims) == 0:
        return list(range(rank))
    return [d % rank for d in dims]


def _reduce(c, onnx_op, x, dims, keepdim, dtype=None):
    src = c.input(x, dtype)
    if not x.shape:  # a 0-d tensor reduces to itself
        return c.emit("Identity", [src])
    dims = _reduce_dims(x, dims)
    if onnx_op == "ReduceSum" or c.opset >= 18:  # axes became an input (ReduceSum in opset 13)
        return c.emit(onnx_op, [src, c.ints(dims, "axes")], keepdims=int(bool(keepdim)))
    return c.emit(onnx_op, [src], axes=dims, keepdims=int(bool(keepdim)))


@op("sum", "prod")
def _sum(c, n, a):
    return _reduce(c, "ReduceSum" if n["op"] == "sum" else "ReduceProd", a["self"], a["dim"], a["keepdim"], _out(n).dtype)


@op("amax", "amin")
def _amax(c, n, a):
    return _reduce(c, "ReduceMax" if n["op"] == "amax" else "ReduceMin", a["self"], a["dim"], a["keepdim"])


@op("argmax", "argmin")
def _argmax(c, n, a):
    x, dim = a["self"], a["dim"]
    o = "ArgMax" if n["op"] == "argmax" else "ArgMin"
    src = c.input(x)
    if dim is None:  # over the flattened tensor
        src = c.emit("Reshape", [src, c.ints([-1], "shape")])
        r = c.emit(o, [src], axis=0, keepdims=0)
        if a["keepdim"]:
            r = c.emit("Reshape", [r, c.ints([1] * len(x.shape), "shape")])
        return r
    if not x.shape:
        return c.emit("Expand", [c.ints(0, "zero"), c.ints([], "shape")])
    return c.emit(o, [src], axis=dim % len(x.shape), keepdims=int(bool(a["keepdim"])))


@op("cumsum")
def _cumsum(c, n, a):
    x = a["self"]
    rank = max(len(x.shape), 1)
    return c.emit("CumSum", [c.input(x, _out(n).dtype), c.ints(a["dim"] % rank, "axis")])


# ---- indexing


@op("index_select")
def _index_select(c, n, a):
    x = a["self"]
    return c.emit("Gather", [c.input(x), c.input(a["index"], _C.int64)], axis=a["dim"] % max(len(x.shape), 1))


@op("gather")
def _gather(c, n, a):
    x = a["self"]
    return c.emit("GatherElements", [c.input(x), c.input(a["index"], _C.int64)], axis=a["dim"] % max(len(x.shape), 1))


@op("scatter", "scatter_add", "scatter_reduce")
def _scatter(c, n, a):
    x = a["self"]
    reduction = {"scatter": "none", "scatter_add": "add"}.get(n["op"])
    if n["op"] == "scatter_reduce":
        if not a["include_self"]:
            c.fail("scatter_reduce with include_self=False has no ONNX form")
        reduction = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}.get(a["reduce"])
        if reduction is None:
            c.fail(f"scatter_reduce with reduce='{a['reduce']}' has no ONNX form")
        if reduction in ("max", "min") and c.opset < 18:
            c.fail(f"scatter_reduce with reduce='{a['reduce']}' needs opset 18 or later")
    return c.emit("ScatterElements", [c.input(x), c.input(a["index"], _C.int64), c.input(a["src"], x.dtype)],
                  axis=a["dim"] % max(len(x.shape), 1), reduction=reduction)


@op("index_put")
def _index_put(c, n, a):
    """self[i0, i1, ...] = values (or += with accumulate) for index tensors of the leading dims:
    ScatterND. (Functionalize writes through views this way: an index into the flattened base.)"""
    x, indices = a["self"], list(a["indices"])
    if not indices or any(i is None for i in indices):
        c.fail("index_put with None (full-slice) indices has no ONNX mapping")
    shapes = [tuple(i.shape) for i in indices]
    if len(set(shapes)) == 1:
        bshape = list(shapes[0])
    elif all(isinstance(d, int) for s in shapes for d in s):
        bshape = list(np.broadcast_shapes(*shapes))
    else:
        c.fail("index_put with index tensors of different symbolic shapes")
    cols = []
    for d, i in enumerate(indices):
        idx = c.input(i, _C.int64)
        if str(i.dtype) == str(_C.bool):
            c.fail("index_put with a boolean mask has no ONNX mapping")
        idx = c.emit("Mod", [idx, c.size(x.shape[d])], fmod=0)  # negative indices count from the end
        if list(i.shape) != bshape:
            idx = c.emit("Expand", [idx, c.shape(bshape)])
        cols.append(c.emit("Unsqueeze", [idx, c.ints([-1], "axes")]))
    where = cols[0] if len(cols) == 1 else c.emit("Concat", cols, axis=-1)
    updates = c.emit("Expand", [c.input(a["values"], x.dtype), c.shape(bshape + list(x.shape[len(indices):]))])
    return c.emit("ScatterND", [c.input(x), where, updates], reduction="add" if a["accumulate"] else "none")


# ---- creation


@op("full", "empty")
def _full(c, n, a):
    out = _out(n)
    fill = a.get("fill_value", 0)
    return c.emit("Expand", [c.scalar(fill, out.dtype), c.shape(out.shape)])


@op("iota")
def _iota(c, n, a):
    out = _out(n)
    start, step = a["start"], a["step"]
    ints = isinstance(start, int) and isinstance(step, int) and not isinstance(start, bool)
    idx = c.emit("Range", [c.ints(0, "zero"), c.emit("Squeeze", [c.size(a["length"]), c.ints([0], "axes")]),
                           c.ints(1, "one")])
    if ints and str(out.dtype) == str(_C.int64):
        if step != 1:
            idx = c.emit("Mul", [idx, c.ints(step, "step")])
        return c.emit("Add", [idx, c.ints(start, "start")]) if start else idx
    idx = c.cast(idx, out.dtype)
    if step != 1:
        idx = c.emit("Mul", [idx, c.scalar(step, out.dtype)])
    return c.emit("Add", [idx, c.scalar(start, out.dtype)]) if start else idx


# ---- linear algebra


@op("matmul")
def _matmul(c, n, a):
    dt = _out(n).dtype
    return c.emit("MatMul", [c.input(a["self"], dt), c.input(a["other"], dt)])


@op("convolution")
def _convolution(c, n, a):
    w = a["weight"]
    k = len(w.shape) - 2
    def per_dim(v, what):
        v = c.static(list(v), what)
        return v * k if len(v) == 1 else v
    pads = per_dim(a["padding"], "a convolution's padding")
    attrs = dict(strides=per_dim(a["stride"], "a stride"), pads=pads + pads,
                 dilations=per_dim(a["dilation"], "a dilation"), group=a["groups"])
    dt = _out(n).dtype
    ins = [c.input(a["input"], dt), c.input(w, dt)] + ([c.input(a["bias"], dt)] if a["bias"] is not None else [])
    if a["transposed"]:
        return c.emit("ConvTranspose", ins, output_padding=per_dim(a["output_padding"], "an output padding"), **attrs)
    return c.emit("Conv", ins, **attrs)


@op("topk", "sort")
def _topk(c, n, a):
    x = a["self"]
    rank = max(len(x.shape), 1)
    dim = a["dim"] % rank
    if n["op"] == "sort":
        k, largest = x.shape[dim] if x.shape else 1, a["descending"]
    else:
        k, largest = a["k"], a["largest"]
    return c.emit("TopK", [c.input(x), c.size(k)], n_out=2, name_hints=["values", "indices"], axis=dim,
                  largest=int(bool(largest)), sorted=1)


# ---- composites the exporter keeps whole (KEEP): ONNX has them as single ops


@op("linear")
def _linear(c, n, a):
    dt = _out(n).dtype
    x, w, b = a["input"], a["weight"], a["bias"]
    if len(x.shape) == 2 and len(w.shape) == 2:
        ins = [c.input(x, dt), c.input(w, dt)] + ([c.input(b, dt)] if b is not None else [])
        return c.emit("Gemm", ins, transB=1)
    y = c.emit("MatMul", [c.input(x, dt), c.emit("Transpose", [c.input(w, dt)], perm=list(range(len(w.shape)))[::-1])])
    return c.emit("Add", [y, c.input(b, dt)]) if b is not None else y


@op("layer_norm")
def _layer_norm(c, n, a):
    x = a["input"]
    dt = _out(n).dtype
    k = len(a["normalized_shape"])
    shape = list(a["normalized_shape"])
    w = c.input(a["weight"], dt) if a["weight"] is not None else c.emit("Expand", [c.scalar(1, dt), c.shape(shape)])
    ins = [c.input(x, dt), w] + ([c.input(a["bias"], dt)] if a["bias"] is not None else [])
    return c.emit("LayerNormalization", ins, axis=-k, epsilon=float(a["eps"]))


@op("softmax", "log_softmax")
def _softmax(c, n, a):
    x = a["self"]
    src = c.input(x, _out(n).dtype)
    if not x.shape:  # softmax of one element
        r = c.emit("Reshape", [src, c.ints([1], "shape")])
        r = c.emit("Softmax" if n["op"] == "softmax" else "LogSoftmax", [r], axis=0)
        return c.emit("Reshape", [r, c.ints([], "shape")])
    return c.emit("Softmax" if n["op"] == "softmax" else "LogSoftmax", [src], axis=a["dim"] % len(x.shape))


@op("batch_norm")
def _batch_norm(c, n, a):
    if a["training"] or a["running_mean"] is None or a["running_var"] is None:
        c.fail("batch_norm with batch statistics (training mode, or no running statistics) has no ONNX export; "
               "export the model in eval mode")
    x = a["input"]
    dt = _out(n).dtype
    ch = [x.shape[1]]
    w = c.input(a["weight"], dt) if a["weight"] is not None else c.emit("Expand", [c.scalar(1, dt), c.shape(ch)])
    b = c.input(a["bias"], dt) if a["bias"] is not None else c.emit("Expand", [c.scalar(0, dt), c.shape(ch)])
    return c.emit("BatchNormalization", [c.input(x, dt), w, b, c.input(a["running_mean"], dt),
                                         c.input(a["running_var"], dt)], epsilon=float(a["eps"]))


def _pool_attrs(c, a, k):
    def per_dim(v, default=None):
        v = list(v) if v is not None else []
        if not v:
            return default
        return v * k if len(v) == 1 else v
    kernel = per_dim(a["kernel_size"])
    pads = per_dim(a["padding"], [0] * k)
    return dict(kernel_shape=kernel, strides=per_dim(a["stride"], kernel), pads=pads + pads,
                ceil_mode=int(bool(a["ceil_mode"])))


def _pool(c, n, a, onnx_op, **extra):
    """MaxPool / AveragePool; an unbatched input (no N dim) gets one for the ONNX op."""
    x = a["input"]
    k = int(n["op"][-2])  # max_pool2d: 2 spatial dims
    attrs = _pool_attrs(c, a, k)
    src = c.input(x)
    unbatched = len(x.shape) == k + 1
    if unbatched:
        src = c.emit("Unsqueeze", [src, c.ints([0], "axes")])
    y = c.emit(onnx_op, [src], **attrs, **extra)
    return c.emit("Squeeze", [y, c.ints([0], "axes")]) if unbatched else y


@op("max_pool1d", "max_pool2d")
def _max_pool(c, n, a):
    k = int(n["op"][-2])
    d = list(a["dilation"])
    return _pool(c, n, a, "MaxPool", dilations=d * k if len(d) == 1 else d)


@op("avg_pool1d", "avg_pool2d")
def _avg_pool(c, n, a):
    return _pool(c, n, a, "AveragePool", count_include_pad=int(bool(a["count_include_pad"])))


# Composites the view keeps whole (every other composite is decomposed to prims first).
KEEP = ["linear", "layer_norm", "softmax", "log_softmax", "relu", "batch_norm", "max_pool1d", "max_pool2d",
        "avg_pool1d", "avg_pool2d"]
