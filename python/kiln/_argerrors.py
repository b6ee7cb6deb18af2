"""Argument errors that say what is wrong, for every function kiln._C binds with nanobind.

nanobind refuses arguments that do not fit a C++ signature with "incompatible function
arguments" and a dump of every overload. install() wraps each public function, method and
property setter of kiln._C once, at import, in kiln._C._checked (see python/csrc/errors.cc): the
call goes through unchanged, and only when nanobind refuses its arguments (not when something
inside the call fails) does explain() build the message
every kiln argument error has: "fn(): argument 'arg' must be <accepted>, not <given>" (a
TypeError), or a ValueError for a number of the right type out of the function's range.
"""
import builtins
import re

from . import _C

# nanobind's annotation -> (accepted, as words; a check of a value, None: cannot tell).
_KINDS = {
    "str": ("a str", lambda v: isinstance(v, str)),
    "int": ("an int", lambda v: isinstance(v, builtins.int)),
    "float": ("a float", lambda v: isinstance(v, (builtins.float, builtins.int))),
    "bool": ("a bool", lambda v: isinstance(v, builtins.bool)),
    "dict": ("a dict", lambda v: isinstance(v, dict)),
    "list": ("a list", lambda v: isinstance(v, list)),
    "tuple": ("a tuple", lambda v: isinstance(v, tuple)),
    "object": ("anything", lambda v: True),
}


def _kind(annotation):
    """(accepted, check) for one annotation; check is None where the annotation is unknown."""
    alts = [a.strip() for a in annotation.split("|")]
    words, checks = [], []
    for a in alts:
        if a == "None":
            words.append("None")
            checks.append(lambda v: v is None)
        elif a in _KINDS:
            words.append(_KINDS[a][0])
            checks.append(_KINDS[a][1])
        elif a.startswith("kiln."):
            cls = getattr(_C, a[5:], None)
            words.append("a " + a)
            checks.append((lambda v, c=cls: isinstance(v, c)) if isinstance(cls, type) else None)
        elif a.startswith("collections.abc.Callable"):
            words.append("a callable")
            checks.append(callable)
        else:
            words.append(a)
            checks.append(None)
    if any(c is None for c in checks):
        return " or ".join(words), None
    return " or ".join(words), lambda v: any(c(v) for c in checks)


def _split_params(text):
    """Top-level comma split of a parameter list (annotations may hold brackets and commas)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or ch in "])" and -1 or 0
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


_SIG = re.compile(r"^def (\w*)\((.*)\)(?: -> .*)?$", re.S)


def _parse(sig):
    """(name, params) from a nanobind signature; params: dicts name, annotation, default, kind."""
    m = _SIG.match(sig)
    if not m:
        return None, None
    params, kind = [], "positional"
    for p in _split_params(m.group(2)):
        if p == "/":
            for q in params:
                q["kind"] = "positional_only"
            continue
        if p == "*":
            kind = "keyword_only"
            continue
        if p.startswith("**"):
            params.append({"name": p[2:].split(":")[0], "kind": "var_keyword"})
            continue
        if p.startswith("*"):
            params.append({"name": p[1:].split(":")[0], "kind": "var_positional"})
            kind = "keyword_only"
            continue
        name, _, rest = p.partition(":")
        annotation, _, default = rest.partition("=")
        params.append({"name": name.strip(), "annotation": annotation.strip() or "object",
                       "default": bool(default.strip()) or "=" in name, "kind": kind})
    return m.group(1), params


def _given(v):
    """What was passed: its type, and its value when short ("float (4.5)")."""
    t = type(v).__name__
    if isinstance(v, (builtins.int, builtins.float, str)) and not isinstance(v, builtins.bool):
        r = repr(v)
        return f"{t} ({r})" if len(r) <= 40 else t
    return t


def _problem(params, args, kwargs, is_setter):
    """The first problem binding (args, kwargs) to params: (exception type, text) or None."""
    positional = [p for p in params if p["kind"] in ("positional", "positional_only")]
    var_pos = any(p["kind"] == "var_positional" for p in params)
    var_kw = any(p["kind"] == "var_keyword" for p in params)
    if positional and positional[0]["name"] == "self":
        positional, args = positional[1:], args[1:]
    bound = {}
    if len(args) > len(positional) and not var_pos:
        return TypeError, f"takes {len(positional)} positional argument(s) but {len(args)} were given"
    for p, v in zip(positional, args):
        bound[p["name"]] = (p, v)
    by_name = {p["name"]: p for p in params if p["kind"] in ("positional", "keyword_only")}
    for k, v in kwargs.items():
        if k not in by_name:
            if var_kw:
                continue
            return TypeError, f"got an unexpected keyword argument '{k}'"
        if k in bound:
            return TypeError, f"got multiple values for argument '{k}'"
        bound[k] = (by_name[k], v)
    for p in params:
        if p["kind"] in ("positional", "positional_only", "keyword_only") and p["name"] != "self" \
                and p["name"] not in bound and not p["default"]:
            return TypeError, f"missing required argument '{p['name']}'"
    for p in params:
        if p["name"] not in bound:
            continue
        _, v = bound[p["name"]]
        accepted, check = _kind(p["annotation"])
        if v is None and p["annotation"] == "object":  # nanobind's nb::handle refuses None
            return TypeError, ("must not be None" if is_setter else f"argument '{p['name']}' must not be None")
        if check is not None and not check(v):
            what = "must be" if is_setter else f"argument '{p['name']}' must be"
            return TypeError, f"{what} {accepted}, not {_given(v)}"
    for p in params:  # the types fit: an int past what the C++ parameter holds
        if p["name"] in bound and p["annotation"].split("|")[0].strip() == "int":
            v = bound[p["name"]][1]
            if isinstance(v, builtins.int) and not -2**63 <= v < 2**64:
                what = "" if is_setter else f"argument '{p['name']}' "
                return ValueError, f"{what}is out of range: {v} does not fit a 64-bit integer"
    return None


def _clean(sig, defaults):
    """A signature as a user reads it: no 'def ', defaults filled in (nanobind writes \\0, \\1)."""
    sig = sig[4:] if sig.startswith("def ") else sig
    return re.sub(r"\\(\d+)", lambda m: repr(defaults[builtins.int(m.group(1))]) if defaults else "...", sig)


def explain(fn, qualname, args, kwargs):
    """(exception type, message) for a call that nanobind refused; None keeps nanobind's own."""
    try:
        overloads = fn.__nb_signature__
    except AttributeError:
        return None
    is_setter = False
    problems = []
    for sig, _doc, defaults in overloads:
        name, params = _parse(sig)
        if params is None:
            return None
        is_setter = name == ""
        problems.append(_problem(params, args, kwargs, is_setter))
    head = qualname if is_setter else f"{qualname}()"
    accepted = "; ".join(_clean(s, d).replace("def (", f"{qualname}(") for s, _, d in overloads)
    if len(overloads) == 1 and problems[0] is not None:
        exc, text = problems[0]
        if is_setter:
            return exc, f"{qualname} {text}"
        return exc, f"{head}: {text}" if text.startswith(("argument", "is out")) else f"{head} {text}"
    shown = args[1:] if "(self" in overloads[0][0] else args
    given = ", ".join([_given(a) for a in shown] + [f"{k}={_given(v)}" for k, v in kwargs.items()])
    if len(overloads) == 1:  # the types fit: a number out of the range of its C++ type
        return ValueError, f"{head}: the arguments ({given}) do not fit {accepted} (a number out of range?)"
    return TypeError, f"{head}: no signature accepts these arguments ({given}); accepted: {accepted}"


def _wrap(fn, qualname, method):
    return _C._checked(fn, qualname, explain, method)


def _is_nb(obj):
    return type(obj).__name__ in ("nb_func", "nb_method")


def _wraps_something(fn):
    """False for functions taking only (*args, **kwargs): they check their own arguments."""
    sigs = getattr(fn, "__nb_signature__", ())
    return not all(re.search(r"\(\s*(self, )?\*args, \*\*kwargs\)", s) for s, _, _ in sigs)


# Private functions that public Python functions call with the user's arguments: errors name the
# public one.
_PUBLIC_NAMES = {"_backward": "autograd.backward", "_grad": "autograd.grad", "_autocast_push": "autocast"}


def install(module=_C):
    """Wraps every public function, method and property setter of module (and its submodules
    and classes), and the private functions of _PUBLIC_NAMES, once."""
    for name, obj in list(vars(module).items()):
        if _is_nb(obj) and (not name.startswith("_") or name in _PUBLIC_NAMES) and _wraps_something(obj):
            setattr(module, name, _wrap(obj, _PUBLIC_NAMES.get(name, name), False))
        elif type(obj).__name__ == "module" and obj.__name__.startswith(module.__name__ + "."):
            install(obj)
        elif isinstance(obj, type) and obj.__module__.startswith("kiln"):
            _install_class(obj)


def _install_class(cls):
    for name, obj in list(vars(cls).items()):
        if name.startswith("_") and not (name.startswith("__") and name != "__init__"):
            continue
        if _is_nb(obj) and _wraps_something(obj):
            setattr(cls, name, _wrap(obj, f"{cls.__name__}.{name}", True))
        elif isinstance(obj, property) and _is_nb(obj.fset):
            setattr(cls, name, property(obj.fget, _wrap(obj.fset, f"{cls.__name__}.{name}", False), obj.fdel,
                                        obj.__doc__))
