"""kiln.tile beyond one kernel: the disk cache (a second process compiles nothing), autotuning
(@kiln.tile.autotune over @kiln.tile.jit), custom ops made of tile kernels (eager, compiled without
a graph break, with a derivative, with clear errors) and the errors of bad kernels."""
import inspect
import os
import subprocess
import sys
import tempfile

import pytest

import kiln

# Tests never touch the user's ~/.cache/kiln: this session's cache is a folder of its own.
_CACHE = tempfile.TemporaryDirectory(prefix="kiln-pytest-cache-")
os.environ["KILN_CACHE_DIR"] = _CACHE.name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@kiln.tile.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
    pid = kiln.tile.program_id(0)
    offs = pid * BLOCK + kiln.tile.arange(0, BLOCK)
    mask = offs < n
    kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=mask) + kiln.tile.load(y_ptr + offs, mask=mask), mask=mask)


# --- the disk cache

_CHILD = """
import kiln
@kiln.tile.jit
def scale(x_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
    offs = kiln.tile.program_id(0) * BLOCK + kiln.tile.arange(0, BLOCK)
    m = offs < n
    kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=m) * 3.0, mask=m)
x = kiln.randn(1000)
out = kiln.empty(1000)
k = scale.compile(x, out, 1000, BLOCK=128)
scale[(8,)](x, out, 1000, BLOCK=128)
assert kiln.equal(out, x * 3.0)
print("from_cache", k.from_cache, k.compile_seconds)
"""


def test_a_second_process_finds_the_compiled_kernel(tmp_path):
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.path.join(ROOT, "python"))
    run = lambda: subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True).stdout
    cold, warm = run(), run()
    assert "from_cache False" in cold
    assert "from_cache True 0.0" in warm
    objects = os.listdir(tmp_path / "cache" / "tile-cpu")
    assert len(objects) == 1 and objects[0].startswith("scale-") and objects[0].endswith(".so")


# --- autotuning

CONFIGS = [kiln.tile.Config({"BLOCK": 64}), kiln.tile.Config({"BLOCK": 256}, num_warps=8), kiln.tile.Config({"BLOCK": 1024})]


@kiln.tile.autotune(configs=CONFIGS, key=["n"], warmup=1, repeats=3)
@kiln.tile.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
    offs = kiln.tile.program_id(0) * BLOCK + kiln.tile.arange(0, BLOCK)
    mask = offs < n
    kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=mask) + kiln.tile.load(y_ptr + offs, mask=mask), mask=mask)


def test_autotune_times_every_config_once_per_key(capfd):
    for n in (5000, 777):
        x, y, out = kiln.randn(n), kiln.randn(n), kiln.empty(n)
        grid = lambda meta: (kiln.tile.cdiv(n, meta["BLOCK"]),)
        tuned_add[grid](x, y, out, n)
        bar = capfd.readouterr().err
        assert f"kiln autotune tuned_add [x_ptr:kiln.float32, y_ptr:kiln.float32, out_ptr:kiln.float32, n={n}]: 3 configs" in bar
        assert tuned_add.best_config in CONFIGS
        assert f"best {tuned_add.best_config}" in bar
        assert kiln.equal(out, x + y)
        out.zero_()
        tuned_add[grid](x, y, out, n)  # the same key: no tuning
        assert capfd.readouterr().err == ""
        assert kiln.equal(out, x + y)
    assert len(tuned_add.cache) == 2


def test_autotune_remembers_its_choice_on_disk(capfd):
    n = 4096
    x, y, out = kiln.randn(n), kiln.randn(n), kiln.empty(n)
    grid = lambda meta: (kiln.tile.cdiv(n, meta["BLOCK"]),)
    tuned_add[grid](x, y, out, n)
    capfd.readouterr()
    again = kiln.tile.autotune(configs=CONFIGS, key=["n"])(tuned_add.fn)  # a fresh tuner: nothing in memory
    kiln.set_logs("autotune")
    try:
        again[grid](x, y, out, n)
    finally:
        kiln.set_logs("")
    err = capfd.readouterr().err
    assert "(from the disk cache)" in err and "configs in" not in err
    assert again.best_config == tuned_add.best_config


def test_autotune_errors():
    with pytest.raises(ValueError, match="key m is not a parameter"):
        kiln.tile.autotune(configs=CONFIGS, key=["m"])(vector_add)
    with pytest.raises(ValueError, match="sets BLOCKS, which is not a constexpr"):
        kiln.tile.autotune(configs=[kiln.tile.Config({"BLOCKS": 1})], key=["n"])(vector_add)
    with pytest.raises(TypeError, match="decorates a @kiln.tile.jit kernel"):
        kiln.tile.autotune(configs=CONFIGS, key=["n"])(lambda x: x)


# --- custom ops: the seed's vector_add as an op

@kiln.tile.op("test::vector_add")
def vector_add_op(x, y):
    out = kiln.empty_like(x)
    n = out.numel()
    vector_add[(kiln.tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


@vector_add_op.register_fake
def _(x, y):
    if x.dtype != kiln.float32 or y.dtype != kiln.float32:
        raise TypeError(f"takes float32 tensors, got {x.dtype} and {y.dtype}")
    if list(x.shape) != list(y.shape):
        raise ValueError(f"x and y must have the same shape, got {list(x.shape)} and {list(y.shape)}")
    return kiln.empty_like(x)


@vector_add_op.register_autograd
def _(ctx, grad):
    return grad, grad


def test_a_custom_op_runs_eagerly():
    x, y = kiln.randn(3000), kiln.randn(3000)
    z = vector_add_op(x, y)
    assert kiln.equal(z, x + y)
    # A non-contiguous input: the op is a function of its values.
    a = kiln.randn(40, 60)
    assert kiln.equal(vector_add_op(a.t(), a.t()), a.t() + a.t())


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_custom_op_compiles_without_a_graph_break(backend):
    def f(x, y):
        return vector_add_op(x * 2, y).relu() + 1

    x, y = kiln.randn(5000), kiln.randn(5000)
    want = (x * 2 + y).relu() + 1
    compiled = kiln.compile(f, backend=backend, fullgraph=True)  # fullgraph: a break is an error
    got = compiled(x, y)
    assert kiln.equal(got, want)
    e = compiled.explain()
    assert e.graph_count == 1 and not e.breaks
    assert 'custom("test::vector_add"' in e.graphs[0]


def test_a_custom_op_has_its_derivative_eagerly_and_compiled():
    x = kiln.randn(100).requires_grad_()
    y = kiln.randn(100).requires_grad_()
    (vector_add_op(x, y) * kiln.arange(100.0)).sum().backward()
    assert kiln.equal(x.grad, kiln.arange(100.0)) and kiln.equal(y.grad, kiln.arange(100.0))
    x.grad, y.grad = None, None
    compiled = kiln.compile(lambda a, b: (vector_add_op(a, b) * a).sum(), backend="aot_eager", fullgraph=True)
    compiled(x, y).backward()
    # d/da sum((a + b) * a) = 2a + b, d/db = a
    assert kiln.allclose(x.grad, 2 * x.detach() + y.detach(), atol=1e-6)
    assert kiln.allclose(y.grad, x.detach(), atol=1e-6)


def test_custom_op_errors():
    x = kiln.randn(10)
    with pytest.raises(kiln.Error, match=r"test::vector_add: takes float32 tensors, got kiln.float32 and kiln.float64"):
        vector_add_op(x, x.double())
    with pytest.raises(kiln.Error, match=r"test::vector_add: x and y must have the same shape, got \[10\] and \[11\]"):
        vector_add_op(x, kiln.randn(11))
    # The same error from a compiled function (the graph breaks there and the eager rerun raises).
    with pytest.raises(kiln.Error, match="must have the same shape"):
        kiln.compile(lambda a, b: vector_add_op(a, b))(x, kiln.randn(11))

    @kiln.tile.op("test::no_meta")
    def no_meta(a):
        return a
    with pytest.raises(kiln.Error, match="test::no_meta has no meta function"):
        no_meta(x)

    @kiln.tile.op("test::no_grad")
    def no_grad(a):
        return a * 1

    no_grad.register_fake(lambda a: kiln.empty_like(a))
    with pytest.raises(kiln.Error, match="test::no_grad has no derivative"):
        no_grad(kiln.randn(3).requires_grad_()).sum().backward()

    @kiln.tile.op("test::lies")
    def lies(a):
        return a.double()

    lies.register_fake(lambda a: kiln.empty_like(a))
    with pytest.raises(kiln.Error, match=r"test::lies's kernel returned \[float64\[10\]\], its meta function said \[float32\[10\]\]"):
        lies(x)
    with pytest.raises(kiln.Error, match="namespace::name"):
        kiln.tile.op("nonamespace")(lambda a: a)
    with pytest.raises(TypeError, match="tensor arguments come first"):
        vector_add_op(x, 2.0, x)


# --- bad kernels

_BROKEN_COMPILER = """#!/bin/sh
case " $* " in *" -o "*) echo "fake-cc: error: out of licenses" >&2; exit 1 ;; esac
exec c++ "$@"
"""


def test_a_kernel_that_does_not_compile_names_the_source_and_the_compilers_message(tmp_path):
    cc = tmp_path / "cc"
    cc.write_text(_BROKEN_COMPILER)
    cc.chmod(0o755)
    env = dict(os.environ, KILN_CXX=str(cc), KILN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.path.join(ROOT, "python"))
    code = _CHILD.split("x = kiln.randn")[0] + (
        "try:\n"
        "    scale.compile(kiln.randn(10), kiln.empty(10), 10, BLOCK=128)\n"
        "except kiln.Error as e:\n"
        "    print('ERROR', e.op)\n"
        "    print(str(e))\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "ERROR tile.compile" in r.stdout, r.stdout + r.stderr
    assert "fake-cc: error: out of licenses" in r.stdout
    source = next(w for w in r.stdout.split() if w.endswith(".cc"))
    assert os.path.basename(source).startswith("scale-")
    assert os.path.exists(source), "the generated source is kept for a look"
    assert "kiln_tile_scale" in open(source).read()
    os.remove(source)


def test_a_shape_error_in_a_custom_ops_kernel_names_the_kernels_line():
    @kiln.tile.jit
    def bad(x_ptr, out_ptr, BLOCK: kiln.tile.constexpr):
        offs = kiln.tile.arange(0, BLOCK)
        kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + kiln.tile.arange(0, 2 * BLOCK)))

    @kiln.tile.op("test::bad_kernel")
    def bad_op(x):
        out = kiln.empty_like(x)
        bad[(1,)](x, out, BLOCK=8)
        return out

    bad_op.register_fake(lambda x: kiln.empty_like(x))
    line = inspect.getsourcelines(bad.fn)[1] + 3
    with pytest.raises(kiln.Error) as e:
        bad_op(kiln.zeros(8))
    assert "cannot broadcast the shapes [8] and [16]" in str(e.value)
    assert e.value.op == "tile.store" and e.value.file == __file__ and e.value.line == line
