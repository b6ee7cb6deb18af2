"""What a traced Python function reads and writes outside itself: kiln.compile's guards on Python
values and its side-effect checks (docs/compile.md, "Python values: guards and side effects").

While the engine traces a function (runs it once on fake tensors), sys.settrace follows every
frame of code outside the kiln package instruction by instruction (f_trace_opcodes). Before each
instruction runs, it is decoded (dis) and its operands are read off the frame's value stack
(_C._frame_stack). Values loaded from a global, a closure cell or an argument are *anchored*: the
recorder knows their source, and follows attribute and item loads from them (`k[0]`,
`state['w']`, `cfg.k`, `self.scale` of a module reached so), through every frame they reach.
Each value read gets a guard in a C++ tree (_C._GuardTree), evaluated on every later call:
numbers and strings by value, tensors by identity, modules by identity plus the state of their
attributes (compared once kiln.nn's counter of attribute assignments moved), containers item by item when used whole (passed to a call,
iterated), other objects by identity (and their type where only their attributes were read).

A tensor assigned to a plain attribute of a module (`self.last_loss = loss`) is replayed: the
store is recorded (Recorder.stores), the value becomes an extra output of the graph, and
_compile.py stores the real output there after every call, as Dynamo does. Other writes into
anchored objects (attribute and item stores, list.append and the other mutating methods), global
and nonlocal stores, print(), logging and warnings stop the trace with a graph break *before*
they happen: the function then runs in segments, its Python code eagerly on every call, so the
side effect happens on every call and no fake tensor is stored outside.
"""
import builtins
import collections
import dis
import gc
import logging
import os
import sys
import types
import warnings
import weakref

from . import _C
from .nn import module as _module

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PRIMITIVE = (bool, int, float, complex, str, bytes, type(None))
_KEY_TYPES = (int, str, bool, type(None), float, bytes)
_MUTATING = (
    (list, {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__", "__delitem__",
            "__iadd__", "__imul__"}),
    (dict, {"update", "pop", "popitem", "clear", "setdefault", "__setitem__", "__delitem__", "__ior__"}),
    (set, {"add", "discard", "remove", "pop", "clear", "update", "difference_update", "intersection_update",
           "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__"}),
    (collections.deque, {"append", "appendleft", "extend", "extendleft", "pop", "popleft", "clear", "remove", "rotate",
                         "insert", "__setitem__", "__delitem__", "__iadd__"}),
    (bytearray, {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "__setitem__", "__delitem__"}),
)
# Instructions that neither use their operands nor load anything the recorder follows.
_INERT = {"NOP", "CACHE", "EXTENDED_ARG", "PUSH_NULL", "PRECALL", "KW_NAMES", "LOAD_FAST", "LOAD_FAST_CHECK",
          "LOAD_CONST", "STORE_FAST", "DELETE_FAST", "POP_TOP", "COPY", "SWAP", "COPY_FREE_VARS", "MAKE_CELL",
          "LOAD_CLOSURE", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "RETURN_GENERATOR",
          "LOAD_ASSERTION_ERROR", "BEFORE_WITH", "PUSH_EXC_INFO", "POP_EXCEPT", "RERAISE", "INTERPRETER_EXIT",
          "GEN_START", "SETUP_ANNOTATIONS", "LOAD_BUILD_CLASS", "MAKE_FUNCTION", "END_FOR"}
# How many stack items an instruction uses (default 1); n: its argument; None: none.
_USES = {"BINARY_OP": 2, "COMPARE_OP": 2, "IS_OP": 2, "CONTAINS_OP": 2, "BUILD_TUPLE": "n", "BUILD_LIST": "n",
         "BUILD_SET": "n", "BUILD_STRING": "n", "BUILD_SLICE": "n", "BUILD_MAP": "2n", "BUILD_CONST_KEY_MAP": "n+1",
         "LIST_EXTEND": 1, "SET_UPDATE": 1, "DICT_UPDATE": 1, "DICT_MERGE": 1, "LIST_APPEND": 1, "SET_ADD": 1,
         "MAP_ADD": 2, "FORMAT_VALUE": 2, "CALL_FUNCTION_EX": 4, "BINARY_SLICE": 3, "STORE_SLICE": 4}


class _Break(Exception):
    pass


_DECODED = weakref.WeakKeyDictionary()  # code -> {offset: (opname, argval, arg)}


def _instructions(code):
    table = _DECODED.get(code)
    if table is None:
        table = _DECODED[code] = {i.offset: (i.opname, i.argval, i.arg) for i in dis.get_instructions(code)}
    return table


_CELL_SLOTS = weakref.WeakKeyDictionary()  # code -> the locals-plus slots of its cell variables


def _cell_slots(code):
    slots = _CELL_SLOTS.get(code)
    if slots is None:
        slots = _CELL_SLOTS[code] = [arg for op, _, arg in _instructions(code).values() if op == "MAKE_CELL"]
    return slots


def _mutates(obj, name):
    return any(isinstance(obj, t) and name in names for t, names in _MUTATING)


def _is_output(fn, receiver):
    """print(), logging, warnings, writes to sys.stdout/stderr: what must run on every call."""
    if fn is builtins.print or fn is warnings.warn or fn is builtins.input:
        return True
    if getattr(fn, "__module__", None) == "logging" or isinstance(receiver, (logging.Logger, logging.LoggerAdapter)):
        return True
    target = getattr(fn, "__self__", receiver)
    return target is not None and (target is sys.stdout or target is sys.stderr)


def _optimizer_type():
    from .optim.optimizer import Optimizer
    return Optimizer


class Recorder:
    """Records what one trace of fn reads (guards) and stops it before a write outside it."""

    supported = _C._frame_stack(sys._getframe(), 0) is not None

    def __init__(self, fn, args, kwargs):
        self.tree = _C._GuardTree(_module._config, _module.state_fingerprint)
        self._nodes = {}      # source spec -> node index in the tree
        self._objs = {}       # source spec -> the objects it names (a globals dict, a cell, ...)
        self._labels = {}     # source spec -> its name in guards and explain ("k[0]", "cfg.k")
        self._anchors = {}    # id(object) -> (object, source spec): objects whose source is known
        self._functions = {}  # code -> the function running it (for its closure cells)
        self._used = set()    # specs whose value got its full (by value / item by item) guard
        self._local_cells = {}  # id -> cell: cell variables of frames the trace entered (its own locals)
        self._optimizer = _optimizer_type()
        top, skip = fn, 0
        if not isinstance(fn, (types.FunctionType, types.MethodType)):  # a module or a callable object
            self._anchor(fn, self._const(fn, f"the compiled {type(fn).__name__}"))  # self.scale in its forward
            top, skip = getattr(type(fn), "forward" if isinstance(fn, _module.Module) else "__call__", None), 1
        elif isinstance(fn, types.MethodType):
            self._anchor(fn.__self__, self._const(fn.__self__, "self"))
            top, skip = fn.__func__, 1
        names = ()
        if isinstance(top, types.FunctionType):
            self._functions[top.__code__] = top
            names = top.__code__.co_varnames[skip:top.__code__.co_argcount]
        for i, a in enumerate(args):
            self._anchor_tree(a, ("item", ("item", ("roots",), 0), i), names[i] if i < len(names) else f"args[{i}]")
        for k, a in kwargs.items():
            self._anchor_tree(a, ("item", ("item", ("roots",), 1), k), k)
        self._old = None
        self.stores = []  # (module, attribute, its value before) of the replayed attribute stores

    def _const(self, obj, label):
        spec = ("const", id(obj))
        self._objs[spec] = (obj,)
        self._labels[spec] = label
        return spec

    # --- sources ---------------------------------------------------------------------------
    def _anchor_tree(self, obj, spec, label, depth=3):
        if isinstance(obj, _PRIMITIVE) or isinstance(obj, _C.Tensor):
            return
        self._labels[spec] = label
        self._anchor(obj, spec)
        if depth and isinstance(obj, (list, tuple)):
            for i, o in enumerate(obj):
                self._anchor_tree(o, ("item", spec, i), f"{label}[{i}]", depth - 1)
        elif depth and isinstance(obj, dict):
            for k, o in obj.items():
                if isinstance(k, _KEY_TYPES):
                    self._anchor_tree(o, ("item", spec, k), f"{label}[{k!r}]", depth - 1)

    def _anchor(self, obj, spec):
        if not isinstance(obj, _PRIMITIVE) and id(obj) not in self._anchors:
            self._anchors[id(obj)] = (obj, spec)

    def _anchored(self, obj):
        a = self._anchors.get(id(obj))
        return a[1] if a is not None and a[0] is obj else None

    def _node(self, spec):
        n = self._nodes.get(spec)
        if n is not None:
            return n
        kind = spec[0]
        t = self.tree
        if kind == "roots":
            n = t.add("roots", -1, None, None, None, "the arguments")
        elif kind in ("global", "cell", "const"):
            objs = self._objs[spec]
            n = t.add(kind, -1, objs[0], objs[1] if kind == "global" else None, spec[2] if kind == "global" else None,
                      self._label(spec))
        else:
            n = t.add(kind, self._node(spec[1]), spec[2], None, None, self._label(spec))
        self._nodes[spec] = n
        return n

    def _label(self, spec):
        got = self._labels.get(spec)
        if got is not None:
            return got
        kind = spec[0]
        if kind in ("attr", "item"):
            base = self._label(spec[1])
            got = f"{base}.{spec[2]}" if kind == "attr" else f"{base}[{spec[2]!r}]"
        elif kind == "global":
            got = spec[2]
        else:
            got = "an object" if kind == "const" else "a closure variable"
        self._labels[spec] = got
        return got

    def _guard(self, spec, value, kind, frame):
        where = f"read at {frame.f_code.co_filename}:{frame.f_lineno}"
        self.tree.guard(self._node(spec), value, kind, where)

    def _loaded(self, spec, value, frame):
        """A value read from a known source: guarded now (a leaf) or anchored (followed further)."""
        if isinstance(value, _PRIMITIVE) or isinstance(value, _C.Tensor):
            if spec not in self._used:
                self._used.add(spec)
                self._guard(spec, value, "value", frame)
            return
        if isinstance(value, _module.Module):
            if spec not in self._used:
                self._used.add(spec)
                self._guard(spec, value, "module", frame)
        elif isinstance(value, self._optimizer):  # its hyperparameters are read in kiln's code
            self._use(spec, value, frame)
            self._loaded(("attr", spec, "param_groups"), value.param_groups, frame)
            self._use(("attr", spec, "param_groups"), value.param_groups, frame)
        elif spec not in self._used:
            self._guard(spec, value, "type", frame)
        if isinstance(value, types.FunctionType):
            self._functions[value.__code__] = value
        elif isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
            self._functions[value.__func__.__code__] = value.__func__
        self._anchor(value, spec)

    def _use(self, spec, value, frame):
        """An anchored value used whole (passed to a call, iterated, computed with): guarded by
        value, item by item; the objects in it are anchored (their attributes are followed)."""
        if spec in self._used:
            return
        self._used.add(spec)
        if isinstance(value, _module.Module):
            self._guard(spec, value, "module", frame)
            return
        self._guard(spec, value, "value", frame)
        self._anchor_items(value, spec, 3)

    def _anchor_items(self, value, spec, depth):
        if not depth:
            return
        items = enumerate(value) if isinstance(value, (list, tuple)) else \
            value.items() if isinstance(value, dict) else ()
        for k, o in items:
            if isinstance(o, _PRIMITIVE) or isinstance(o, _C.Tensor) or not isinstance(k, _KEY_TYPES):
                continue
            s = ("item", spec, k)
            self._used.add(s)  # the container's guard already covers its identity
            if isinstance(o, _module.Module):  # (its identity is the container's guard; its state, this)
                self.tree.guard(self._node(s), o, "module", "")
            self._anchor(o, s)
            self._anchor_items(o, s, depth - 1)

    def _cell(self, frame, name):
        code = frame.f_code
        fn = self._functions.get(code)
        if fn is None:
            found = [f for f in gc.get_referrers(code) if isinstance(f, types.FunctionType) and f.__code__ is code]
            if len(found) != 1:
                self._break(f"kiln.compile cannot find the closure of {code.co_name}() (to guard {name!r})")
            fn = self._functions[code] = found[0]
        return fn.__closure__[code.co_freevars.index(name)]

    def _break(self, reason):
        _C._graph_break(reason)  # raises: the trace stops here, the function runs in segments
        raise _Break(reason)

    # --- the trace functions ---------------------------------------------------------------
    def __enter__(self):
        # No garbage collection while the trace runs: gc callbacks and finalizers would run
        # unrelated code (a test framework's timer, a library's cleanup) inside the traced frames,
        # and the recorder would follow it as if the function had called it.
        self._gc = gc.isenabled()
        gc.disable()
        self._old = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._old)
        if self._gc:
            gc.enable()
        return False

    def attach(self):
        """Makes the traced graph hold only while every guard recorded holds."""
        if len(self.tree):
            self.tree.attach()

    def _call(self, frame, event, arg):
        if event != "call" or frame.f_code.co_filename.startswith(_PKG):
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        # The frame's cells exist now (the call event comes after MAKE_CELL): closures made
        # during the trace that read them read the trace's own locals, nothing to guard.
        for slot in _cell_slots(frame.f_code):
            cell = _C._frame_local(frame, slot)
            if cell is not None:
                self._local_cells[id(cell)] = cell
        return self._opcode

    def _opcode(self, frame, event, arg):
        if event != "opcode":
            return self._opcode
        ins = _instructions(frame.f_code).get(frame.f_lasti)
        if ins is None:
            return self._opcode
        op, argval, oparg = ins
        if op in _INERT:
            return self._opcode
        try:
            getattr(self, "_op_" + op, self._op_generic)(frame, op, argval, oparg)
        except (_Break, _C.Error):
            raise
        except Exception as e:  # never silently unguarded: stop the trace instead
            self._break(f"kiln.compile could not follow {op} in {frame.f_code.co_name}() ({type(e).__name__}: {e})")
        return self._opcode

    # One handler per instruction the recorder follows; the rest use their operands (generic).
    def _op_LOAD_GLOBAL(self, frame, op, name, oparg):
        g, b = frame.f_globals, frame.f_builtins
        if name in g:
            value = g[name]
        elif name in b:
            value = b[name]
        else:
            return
        spec = ("global", id(g), name)
        self._objs[spec] = (g, b)
        self._labels.setdefault(spec, name)
        self._loaded(spec, value, frame)

    _op_LOAD_NAME = _op_LOAD_GLOBAL

    def _op_LOAD_DEREF(self, frame, op, name, oparg):
        if name not in frame.f_code.co_freevars:
            return  # the frame's own cell: a local variable
        cell = self._cell(frame, name)
        if id(cell) in self._local_cells:
            return
        try:
            value = cell.cell_contents
        except ValueError:
            return
        spec = ("cell", id(cell))
        self._objs[spec] = (cell,)
        self._labels.setdefault(spec, name)
        self._loaded(spec, value, frame)

    _op_LOAD_CLASSDEREF = _op_LOAD_DEREF

    def _op_LOAD_ATTR(self, frame, op, name, oparg):
        (obj,) = _C._frame_stack(frame, 1)
        spec = self._anchored(obj)
        if spec is None:
            return
        if op == "LOAD_METHOD" and _mutates(obj, name):
            self._break(f"the function calls {self._label(spec)}.{name}(), changing an object from outside it "
                        "(the call runs on every call, outside the graph)")
        try:
            value = getattr(obj, name)
        except Exception:
            return
        if spec not in self._used:
            self._guard(spec, obj, "type", frame)  # the same type: the same attribute lookup
        if callable(value) and getattr(value, "__self__", None) is obj:
            code = getattr(getattr(value, "__func__", None), "__code__", None)
            if code is not None:
                self._functions[code] = value.__func__
            if code is None or code.co_filename.startswith(_PKG):
                self._use(spec, obj, frame)  # a method of C or kiln code: it may read anything of obj
            return  # a method of the type (the type guard covers it); its frame is followed
        self._loaded(self._attr_spec(obj, spec, name), value, frame)

    _op_LOAD_METHOD = _op_LOAD_ATTR

    def _attr_spec(self, obj, spec, name):
        """The source of obj.name; a module's parameter, buffer or submodule is read from its dict
        (m._modules['proj']): what Module.__getattr__ does, without a Python call per guard."""
        if isinstance(obj, _module.Module) and name not in obj.__dict__:
            for table in ("_parameters", "_buffers", "_modules"):
                if name in obj.__dict__.get(table, ()):
                    item = ("item", ("attr", spec, table), name)
                    self._labels.setdefault(item, f"{self._label(spec)}.{name}")
                    return item
        return ("attr", spec, name)

    def _op_BINARY_SUBSCR(self, frame, op, argval, oparg):
        key, obj = _C._frame_stack(frame, 2)
        spec = self._anchored(obj)
        if spec is None:
            return
        if not isinstance(key, _KEY_TYPES) or isinstance(obj, _module.Module):
            self._use(spec, obj, frame)  # a slice or a computed key: the whole container
            return
        try:
            value = obj[key]
        except Exception:
            return
        if spec not in self._used:
            self._guard(spec, obj, "type", frame)
        self._loaded(("item", spec, key), value, frame)

    def _write(self, frame, obj, what):
        spec = self._anchored(obj)
        if spec is not None:
            self._break(f"the function {what} {self._label(spec)}, an object from outside it "
                        "(the write runs on every call, outside the graph)")

    def _op_STORE_ATTR(self, frame, op, name, oparg):
        obj, value = _C._frame_stack(frame, 2)
        spec = self._anchored(obj)
        stored = any(o is obj and n == name for o, n, _ in self.stores)
        tensor = isinstance(value, _C.Tensor) and not isinstance(value, _module.Parameter)
        if spec is not None and tensor and (stored or self._replayable(obj, spec, name)):
            # A tensor assigned to a module attribute: the value becomes an output of the graph
            # and is stored there after every call (replay); reads of it later in the trace are
            # of the traced value, nothing to guard.
            attr = ("attr", spec, name)
            self._used.add(attr)
            if not stored:
                self.stores.append((obj, name, obj.__dict__.get(name, _module._MISSING)))
                _module.replay_attribute(obj, name)
            return
        self._write(frame, obj, f"assigns attribute {name!r} of")

    def _replayable(self, obj, spec, name):
        """Can a tensor stored in obj.name be replayed after the graph runs: a plain attribute
        (not a parameter, buffer, submodule or property) of a module, not read before."""
        if not isinstance(obj, _module.Module) or ("attr", spec, name) in self._used:
            return False
        d = obj.__dict__
        if any(name in d[table] for table in ("_parameters", "_buffers", "_modules")):
            return False
        return not hasattr(getattr(type(obj), name, None), "__set__")

    def _op_DELETE_ATTR(self, frame, op, name, oparg):
        self._write(frame, _C._frame_stack(frame, 1)[0], f"deletes attribute {name!r} of")

    def restore_stores(self):
        """Undoes the trace's attribute stores (it failed: no real value will replace its fake ones)."""
        for obj, name, old in self.stores:
            if old is _module._MISSING:
                obj.__dict__.pop(name, None)
            else:
                obj.__dict__[name] = old

    def _op_STORE_SUBSCR(self, frame, op, argval, oparg):
        self._write(frame, _C._frame_stack(frame, 2)[1], "assigns an item of")

    def _op_DELETE_SUBSCR(self, frame, op, argval, oparg):
        self._write(frame, _C._frame_stack(frame, 2)[1], "deletes an item of")

    def _op_STORE_GLOBAL(self, frame, op, name, oparg):
        self._break(f"the function assigns the global {name!r} (it runs on every call, outside the graph)")

    _op_DELETE_GLOBAL = _op_STORE_GLOBAL

    def _op_STORE_DEREF(self, frame, op, name, oparg):
        if name in frame.f_code.co_freevars and id(self._cell(frame, name)) not in self._local_cells:
            self._break(f"the function assigns the nonlocal {name!r} (it runs on every call, outside the graph)")

    _op_DELETE_DEREF = _op_STORE_DEREF

    def _op_CALL(self, frame, op, argc, oparg):
        items = _C._frame_stack(frame, oparg + 2)
        fn, receiver = (items[-1], items[-2]) if len(items) == oparg + 2 and items[-1] is not None else \
            (items[oparg] if len(items) > oparg else None, None)
        if _is_output(fn, receiver):
            self._break(f"{getattr(fn, '__qualname__', 'output')}() inside a compiled function "
                        "(it runs on every call, outside the graph)")
        owner = getattr(fn, "__self__", None)
        if owner is not None and self._anchored(owner) is not None and _mutates(owner, getattr(fn, "__name__", "")):
            self._break(f"the function calls {self._label(self._anchored(owner))}.{fn.__name__}(), changing an object "
                        "from outside it (the call runs on every call, outside the graph)")
        python_callee = isinstance(fn, (types.FunctionType, types.MethodType)) and \
            not getattr(getattr(fn, "__code__", None), "co_filename", _PKG).startswith(_PKG)
        for o in items:
            spec = self._anchored(o)
            # A Python callee's own reads are followed; what C or kiln code gets, it may read whole.
            if spec is not None and not (python_callee and not isinstance(o, (list, tuple, dict, set))):
                self._use(spec, o, frame)

    def _op_generic(self, frame, op, argval, oparg):
        n = _USES.get(op, 1)
        n = oparg if n == "n" else 2 * oparg if n == "2n" else oparg + 1 if n == "n+1" else n
        if op in ("CALL_FUNCTION_EX",) and oparg is not None and oparg & 1 == 0:
            n = 3
        for o in _C._frame_stack(frame, n) if n else ():
            spec = self._anchored(o)
            if spec is not None:
                self._use(spec, o, frame)
