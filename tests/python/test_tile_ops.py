"""kiln.tile beyond one kernel: the disk cache (a second process compiles nothing), autotuning
(@kiln.tile.autotune over @kiln.tile.jit), custom ops made of tile kernels (eager, compiled without
a graph break, with a derivative, with clear errors) and the errors of bad kernels."""
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
