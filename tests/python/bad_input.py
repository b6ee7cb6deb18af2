"""One call of the bad-input suite (test_bad_input.py): a case names an op of op_db, a dtype, one
of its samples and mutations of that sample (other shapes, dtypes, layouts, numbers, None, a
missing argument); run() builds the call, runs it in kiln and in PyTorch, and says how they
compare. The suite runs cases in a child process (`serve`, one JSON case per line), so that a
crash of kiln fails the case that crashed instead of pytest.

Reproduce one case: PYTHONPATH=python python3 tests/python/bad_input.py '<case json>'
"""
import json
import math
import os
import signal
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))

DTYPES = ("float32", "float64", "bfloat16", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
LAYOUTS = ("contiguous", "transposed", "strided")
# What a mutation may put in place of a number: small, so that no call asks for huge memory.
INTS = (-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 100)
FLOATS = (0.0, -0.0, -1.5, 0.5, 2.0, 1e30, math.inf, -math.inf, math.nan)
# Exceptions a bad call may raise in kiln; anything else (AttributeError, ZeroDivisionError,
# SystemError, ...) is a bug in kiln's checks. kiln.Error is a RuntimeError.
GOOD_ERRORS = (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError)
BAD_TEXTS = ("incompatible function arguments", "std::bad_cast", "nanobind", "conversion error")

_loaded = None


def _load():
    global _loaded
    if _loaded is None:
        import numpy as np
        import torch

        import kiln
        import op_db
        import oracle
        op_db.load_all()
        torch.set_num_threads(1)
        _loaded = (np, torch, kiln, op_db, oracle)
    return _loaded


def ops():
    """The op ids the suite calls (every op of op_db, i.e. of kiln's registry but the skips)."""
    return sorted(_load()[3].OPS)


def _leaves(value, path, out):
    """Paths of the mutable leaves of a sample's arguments, by kind: T, int, float, dtype."""
    _, _, _, op_db, oracle = _load()
    if isinstance(value, op_db.T):
        out["T"].append(path)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _leaves(v, path + (i,), out)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int):
        out["int"].append(path)
    elif isinstance(value, float):
        out["float"].append(path)
    elif isinstance(value, str) and value in oracle.TYPE_NAMES:
        out["dtype"].append(path)


def _get(root, path):
    for p in path:
        root = root[p]
    return root


def _set(root, path, value):
    """root with the leaf at path replaced (tuples are rebuilt; root is a list of args)."""
    if len(path) == 1:
        root = list(root) if isinstance(root, tuple) else root
        root[path[0]] = value
        return root
    kind = type(root)
    items = list(root)
    items[path[0]] = _set(items[path[0]], path[1:], value)
    return kind(items) if kind is tuple else items


def build_call(case):
    """(info, sample args list, kwargs dict, dtype) for a case, mutations applied."""
    import dataclasses
    _, _, _, op_db, _ = _load()
    info = op_db.OPS[case["op"]]
    dtype = case["dtype"]
    made_for = dtype if dtype in info.dtypes else info.dtypes[0]
    samples = list(info.samples(made_for))
    s = samples[case["sample"] % len(samples)]
    # One list holds positional args and then keyword values, so a path reaches either.
    keys = list(s.kwargs)
    root = list(s.args) + [s.kwargs[k] for k in keys]
    nargs = len(s.args)
    for kind, index, value in case["mutations"]:
        found = {"T": [], "int": [], "float": [], "dtype": []}
        _leaves(root, (), found)
        if kind in ("shape", "dtype", "layout"):
            paths = found["T"]
            if not paths:
                continue
            p = paths[index % len(paths)]
            t = _get(root, p)
            if kind == "shape":
                t = dataclasses.replace(t, shape=tuple(value), values=None)
            elif kind == "dtype":
                t = dataclasses.replace(t, dtype=value, values=None if t.values is None else t.values)
            else:
                t = dataclasses.replace(t, layout=value)
            root = _set(root, p, t)
        elif kind in ("int", "float"):
            paths = found[kind]
            if paths:
                root = _set(root, paths[index % len(paths)], value)
        elif kind == "dtype_arg":
            if found["dtype"]:
                root = _set(root, found["dtype"][index % len(found["dtype"])], value)
        elif kind == "none" and root:
            root = _set(root, (index % len(root),), None)
        elif kind == "drop" and nargs:
            root.pop(nargs - 1)
            nargs -= 1
    return info, root[:nargs], dict(zip(keys, root[nargs:])), dtype


def _describe(v):
    np, torch, kiln, _, _ = _load()
    if isinstance(v, (kiln.Tensor, torch.Tensor)):
        kind = "" if v.is_contiguous() else " (non-contiguous)"
        return f"{str(v.dtype).split('.')[-1]}{list(v.shape)}{kind}"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_describe(x) for x in v)
        return f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
    return repr(v)


def _error_text(e):
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' | '.join(lines[:4])}"[:400]


def _harness_none(e):
    """An op_db wrapper calling a method of an argument a mutation made None (x.clone() in a
    lambda): the suite's own doing, not kiln's."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    in_tests = tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(os.path.dirname(
        os.path.abspath(__file__)))
    return in_tests and isinstance(e, AttributeError) and "'NoneType' object has no attribute" in str(e)


def run(case):
    """Runs a case: {'outcome': ..., 'call': ..., 'kiln': ..., 'torch': ...}. Outcomes: 'equal'
    (both succeed with equal results), 'both_raise', 'kiln_raises', 'torch_raises', 'differ',
    'bad_error' (kiln raised an exception type or text no bad input should give), 'unbuildable'
    (the mutated sample's tensors cannot be made, e.g. explicit values out of a dtype's range)."""
    if case["op"] == "__crash__":  # the suite's check of its own crash handling
        os.kill(os.getpid(), signal.SIGSEGV)
    np, torch, kiln, op_db, oracle = _load()
    info, args, kwargs, dtype = build_call(case)
    rng = np.random.default_rng(case["seed"])
    try:
        kargs, targs = oracle.build(tuple(args), rng, dtype, False)
        kkw, tkw = {}, {}
        for k, v in kwargs.items():
            kkw[k], tkw[k] = oracle.build(v, rng, dtype, False)
    except Exception as e:  # a sample that cannot be made (a dtype NumPy lacks for its values)
        return {"outcome": "unbuildable", "call": repr(case), "kiln": _error_text(e), "torch": ""}
    kfn = info.kiln_fn or getattr(kiln, info.op)
    tfn = info.torch_fn or getattr(torch, info.op)
    call = f"{info.op}({', '.join([_describe(a) for a in kargs] + [f'{k}={_describe(v)}' for k, v in kkw.items()])})"
    result = {"call": call, "kiln": "", "torch": ""}
    kr = tr = kerr = terr = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            kr = kfn(*kargs, **kkw)
        except Exception as e:  # noqa: BLE001 - every exception is classified below
            kerr = e
        try:
            tr = tfn(*targs, **tkw)
        except Exception as e:  # noqa: BLE001
            terr = e
    if kerr is not None:
        result["kiln"] = _error_text(kerr)
        if (not isinstance(kerr, GOOD_ERRORS) and not _harness_none(kerr)) or any(b in str(kerr) for b in BAD_TEXTS):
            return dict(result, outcome="bad_error")
    if terr is not None:
        result["torch"] = _error_text(terr)
    if kerr is not None or terr is not None:
        outcome = "both_raise" if kerr is not None and terr is not None else "kiln_raises" if kerr else "torch_raises"
        return dict(result, outcome=outcome)
    try:
        compare(info, kr, tr, dtype)
    except Exception as e:  # noqa: BLE001 - a difference, or results that cannot be compared
        if not _load()[4].no_further_from_exact(info, tfn, targs, tkw, kr, tr):
            return dict(result, outcome="differ", kiln=_error_text(e)[:300])
    return dict(result, outcome="equal")


def compare(info, kr, tr, dtype):
    """Raises AssertionError where kiln's and PyTorch's results differ (values; for random ops
    and empty, shapes and dtypes only)."""
    np, torch, kiln, _, oracle = _load()
    if info.check is not None and isinstance(kr, tuple) and len(kr) == 3 and isinstance(tr, torch.Tensor):
        kr = kr[0]  # a seeded random op of op_db: (draw, same seed again, next draw)
    def outputs(r):  # op_db's output= picks what to compare; it may not apply to a mutated call
        if info.output is None or info.check is not None:
            return oracle.tensors_of(r)
        try:
            return oracle.tensors_of(info.output(r))
        except Exception:  # noqa: BLE001
            return None
    kouts, touts = outputs(kr), outputs(tr)
    if kouts is None and touts is None:
        kouts, touts = oracle.tensors_of(kr), oracle.tensors_of(tr)
    assert kouts is not None and touts is not None, "the results have different structures"
    assert len(kouts) == len(touts), f"{len(kouts)} outputs (kiln) != {len(touts)} (torch)"
    for i, (k, t) in enumerate(zip(kouts, touts)):
        if info.check is not None:  # random values, or none (empty): shape and dtype
            assert tuple(k.shape) == tuple(t.shape), f"shape {tuple(k.shape)} != {tuple(t.shape)}"
            assert str(k.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], f"dtype {k.dtype} != {t.dtype}"
        else:
            # Tolerances by the result's dtype (a mutation may have changed it from the case's).
            oracle.assert_close(k, t, str(t.dtype).split(".")[-1], info.tol, f"output {i}")


def serve():
    """Reads one JSON case per line from stdin, writes one JSON result per line to stdout."""
    out = sys.stdout
    sys.stdout = sys.stderr  # prints of the code under test must not garble the protocol
    _load()
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        case = json.loads(line)
        out.write(json.dumps(run(case)) + "\n")
        out.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(run(json.loads(sys.argv[1])), indent=1))
