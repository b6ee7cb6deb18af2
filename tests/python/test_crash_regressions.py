"""Issue 15's reproducers, parts B and C: inputs that crashed the process (SIGSEGV, SIGBUS) or gave a
wrong result without a word. Each runs in its own Python process, so a crash fails only its test,
with the signal; the result or error it reports is checked against what PyTorch does."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_bad_input import child_pythonpath  # noqa: E402 - this one's PYTHONPATH first, then python/

# The child runs `code`, which sets `result` (JSON-able) or raises; it prints one JSON line.
HARNESS = """
import json, sys
import numpy as np
import kiln
def nest(depth, leaf):
    for _ in range(depth):
        leaf = [leaf]
    return leaf
try:
{code}
    print(json.dumps({{"result": result}}))
except BaseException as e:
    print(json.dumps({{"error": type(e).__name__, "message": str(e)}}))
"""


def run(code, tmp_path=None):
    src = HARNESS.format(code=textwrap.indent(textwrap.dedent(code).strip(), "    "))
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=300, env=env,
                       cwd=str(tmp_path) if tmp_path else None)
    if p.returncode < 0:
        pytest.fail(f"the process died with {signal.Signals(-p.returncode).name}:\n{code}\n{p.stderr[-2000:]}")
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def raises(code, message, error="Error", tmp_path=None):
    out = run(code, tmp_path)
    assert "error" in out, f"no error, got {out}"
    assert out["error"] == error, out
    assert message in out["message"], out["message"]


# ---------------------------------------------------------------- B: sizes that overflow
# PyTorch raises "Storage size calculation overflowed" (or "numel: integer multiplication
# overflow") for every one; kiln crashed on most of them.
OVERFLOWS = [
    "kiln.empty(2**62)",
    "kiln.empty(2**32, 2**32)",
    "kiln.zeros(3).repeat(2**31, 2**31)",
    "kiln.zeros(0).reshape(2**62, 2**62, 0)",
    "kiln.zeros(2**62, dtype=kiln.int32)",
    "kiln.full((2**62,), 1)",
    "kiln.arange(0, 2**62)",
    "kiln.linspace(0, 1, 2**62)",
    "kiln.randperm(2**61)",
    "kiln.randint(0, 5, (2**61,))",
    "kiln.rand(2**61)",
    "kiln.nn.functional.one_hot(kiln.tensor([1]), 2**62)",
    "kiln.zeros(1).expand(2**62).contiguous()",
    "kiln.empty(2**62).fill_(1)",
]


@pytest.mark.parametrize("expr", OVERFLOWS)
def test_size_overflow_raises(expr):
    with pytest.raises(RuntimeError):
        eval(expr.replace("kiln.", "torch."), {"torch": torch})
    raises(f"result = {expr}", "overflow")


def test_allocation_failure_says_how_much():
    with pytest.raises(RuntimeError, match="4398046511104 bytes"):
        torch.empty(2**40)
    raises("result = kiln.empty(2**40)", "out of memory allocating 4398046511104 bytes")


def test_broadcast_view_of_2_62_elements_is_fine():
    assert run("result = kiln.zeros(1).expand(2**62).shape[0]") == {"result": 2**62}
    assert torch.zeros(1).expand(2**62).shape[0] == 2**62


# ---------------------------------------------------------------- B: views past their storage
AS_STRIDED = {
    "kiln": "x = kiln.zeros(4)",
    "numpy": "x = kiln.from_numpy(np.zeros(4, dtype=np.float32))",
    "torch": "import torch; x = kiln.from_dlpack(torch.zeros(4))",
    "loaded": "kiln.save({'x': kiln.zeros(4)}, 'x.safetensors'); x = kiln.load('x.safetensors')['x']",
    "loaded-mmap": "kiln.save({'x': kiln.zeros(4)}, 'x.safetensors'); x = kiln.load('x.safetensors', mmap=True)['x']",
}


@pytest.mark.parametrize("source", sorted(AS_STRIDED))
def test_as_strided_past_the_storage_raises(source, tmp_path):
    raises(AS_STRIDED[source] + "\nresult = x.as_strided((5,), (1,)).tolist()", "storage of 4 elements",
           tmp_path=tmp_path)
    raises(AS_STRIDED[source] + "\nresult = x.as_strided((2,), (1,), 3).tolist()", "storage of 4 elements",
           tmp_path=tmp_path)
    assert run(AS_STRIDED[source] + "\nresult = x.as_strided((2,), (2,), 1).tolist()", tmp_path) == {"result": [0, 0]}
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        torch.zeros(4).as_strided((5,), (1,))


def test_as_strided_of_empty_storage_raises():
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 0"):
        torch.zeros(0).as_strided((1,), (1,))
    raises("result = kiln.zeros(0).as_strided((1,), (1,)).tolist()", "storage of 0 elements")


def test_negative_numpy_strides_stay_inside_the_array():
    # PyTorch refuses negative strides in from_numpy; kiln takes them, and its views stay inside.
    assert run("result = kiln.from_numpy(np.arange(4, dtype=np.float32)[::-1]).tolist()") == {"result": [3, 2, 1, 0]}
    raises("result = kiln.from_numpy(np.zeros(4, dtype=np.float32)[::-1]).as_strided((4,), (1,)).tolist()",
           "storage of 4 elements")
    out = run("result = kiln.from_numpy(np.arange(4, dtype=np.float32)[::-1]).as_strided((4,), (1,), 0).tolist()")
    assert out == {"result": [0, 1, 2, 3]}


# ---------------------------------------------------------------- B: deep structures
def test_deeply_nested_list_raises():
    with pytest.raises(ValueError, match="too many dimensions"):
        torch.tensor(nest_list(100000))
    raises("result = kiln.tensor(nest(100000, 1.0)).shape", "too many dimensions", error="ValueError")
    assert run("result = list(kiln.tensor(nest(100, 1.0)).shape)") == {"result": [1] * 100}


def test_indexing_with_a_deeply_nested_list_raises():
    # (PyTorch itself dies with SIGSEGV here.)
    raises("result = kiln.zeros(3)[nest(100000, 0)].shape", "too many dimensions", error="ValueError")


def nest_list(depth):
    x = [1.0]
    for _ in range(depth):
        x = [x]
    return x


@pytest.mark.parametrize("end", ["backward(); del y; import gc; gc.collect()", "pass", "del y"])
def test_autograd_chain_of_300k_ops(end):
    out = run(f"""
        x = kiln.ones(1, requires_grad=True)
        y = x
        for _ in range(300000):
            y = y * 1.0
        {"y." + end if end.startswith("backward") else end}
        result = x.grad.tolist() if x.grad is not None else None
    """)
    assert out == {"result": [1.0] if end.startswith("backward") else None}


# ---------------------------------------------------------------- B: files changed under a mapping
def test_loaded_tensors_survive_truncation_of_the_file(tmp_path):
    # kiln.load copies by default; with the file mapped, this access died with SIGBUS.
    out = run("""
        import os
        kiln.save({'w': kiln.arange(1 << 20, dtype=kiln.float32)}, 'w.safetensors')
        w = kiln.load('w.safetensors')['w']
        os.truncate('w.safetensors', 8)
        result = [w[-1].item(), float(w.sum().item())]
    """, tmp_path)
    n = 1 << 20
    assert out == {"result": [n - 1, float(n * (n - 1) // 2)]}


def test_mapping_is_opt_in(tmp_path):
    out = run("""
        kiln.save({'w': kiln.arange(4, dtype=kiln.float32)}, 'w.safetensors')
        result = [kiln.load('w.safetensors', mmap=True)['w'].tolist(), kiln.load('w.safetensors')['w'].tolist()]
    """, tmp_path)
    assert out == {"result": [[0, 1, 2, 3], [0, 1, 2, 3]]}


# ---------------------------------------------------------------- C: wrong without a word
def test_detach_shares_the_version_counter():
    def repro(lib):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        d = y.detach()
        d.zero_()
        (y * y).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        repro(torch)
    raises("""
        x = kiln.ones(3, requires_grad=True); y = x.exp(); d = y.detach(); d.zero_()
        (y * y).sum().backward()
        result = x.grad.tolist()
    """, "modified by an in-place operation")


@pytest.mark.parametrize("write", ["add_(1)", "copy_(kiln.ones(3))", "mul_(2)"])
def test_writes_to_self_overlapping_memory_raise(write):
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        eval(f"torch.zeros(1).expand(3).{write.replace('kiln.', 'torch.')}", {"torch": torch})
    raises(f"result = kiln.zeros(1).expand(3).{write}.tolist()", "refers to a single memory location")


def test_fill_of_an_expanded_tensor_is_allowed():
    assert torch.zeros(1).expand(3).fill_(2).tolist() == [2, 2, 2]
    assert run("result = kiln.zeros(1).expand(3).fill_(2).tolist()") == {"result": [2, 2, 2]}


@pytest.mark.parametrize("hook,error", [("g[:1]", "shape"), ("g.double()", "dtype")])
def test_hooks_must_keep_the_gradient_like(hook, error):
    x = torch.ones(3, requires_grad=True)
    x.register_hook(eval(f"lambda g: {hook}"))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the"):
        (x * 2).sum().backward()
    raises(f"""
        x = kiln.ones(3, requires_grad=True)
        x.register_hook(lambda g: {hook})
        (x * 2).sum().backward()
        result = x.grad.tolist()
    """, f"changed the {error} of the gradient")


def test_grad_assignment_of_another_dtype_raises():
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        torch.ones(3, requires_grad=True).grad = torch.ones(3, dtype=torch.int64)
    raises("""
        p = kiln.ones(3, requires_grad=True)
        p.grad = kiln.ones(3, dtype=kiln.int64)
        result = None
    """, "a gradient of dtype int64 for a tensor of dtype float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_mean_accumulates_in_float32(dtype):
    expected = torch.ones(2**24, dtype=getattr(torch, dtype)).mean().item()
    assert expected == 1.0
    assert run(f"result = kiln.ones(2**24, dtype=kiln.{dtype}).mean().item()") == {"result": expected}


@pytest.mark.parametrize("kw", ["min=float('nan')", "max=float('nan')", "min=0.0, max=float('nan')"])
def test_clamp_with_a_nan_bound_gives_nan(kw):
    assert all(np.isnan(eval(f"torch.clamp(torch.ones(2), {kw})").numpy()))
    assert run(f"result = [str(v) for v in kiln.clamp(kiln.ones(2), {kw}).tolist()]") == {"result": ["nan", "nan"]}


@pytest.mark.parametrize("args", ["2**62, 2**62 + 5", "2**62, 2**62 + 5, 2", "2.0**53, 2.0**53 + 10",
                                  "2.0**53 - 5, 2.0**53 + 5, 1.0", "-5, 2**62, 2**61"])
def test_arange_length_matches_pytorch(args):
    dtype = ", dtype=torch.float64" if "." in args else ""
    expected = eval(f"torch.arange({args}{dtype})").tolist()
    out = run(f"result = kiln.arange({args}{dtype.replace('torch', 'kiln')}).tolist()")
    assert out == {"result": expected}


def test_bool_arrays_with_other_bytes_are_rejected():
    # These bytes printed and computed as 2 and 255 (a sum of 257); PyTorch reads them as True.
    raises("result = kiln.from_numpy(np.array([2, 255, 0], dtype=np.uint8).view(np.bool_)).sum().item()",
           "holds the byte 2 at element 0")
    assert run("result = kiln.from_numpy(np.array([1, 0, 1], dtype=np.uint8).view(np.bool_)).sum().item()") == \
        {"result": 2}


def safetensors_file(header, data=b""):
    return len(header).to_bytes(8, "little") + header + data


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("case,message", [
    ("nul", "NUL byte"), ("twice", "more than once"), ("bool", "holds the byte 2"), ("utf8", "not valid JSON")])
def test_safetensors_headers_the_format_forbids(case, message, mmap, tmp_path):
    one = b'"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    files = {
        "nul": safetensors_file(b"{" + one + b"}\0\0\0\0", b"\0" * 4),
        "twice": safetensors_file(b"{" + one + b"," + one + b"}", b"\0" * 4),
        "bool": safetensors_file(b'{"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', b"\x01\x02"),
        "utf8": safetensors_file(b'{"\xff\xfe":1}'),
    }
    (tmp_path / "f.safetensors").write_bytes(files[case])
    raises(f"result = str(kiln.load('f.safetensors', mmap={mmap}))", message, tmp_path=tmp_path)
