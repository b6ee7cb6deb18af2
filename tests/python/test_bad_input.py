"""The standing bad-input suite: every op of op_db (so every op of kiln's registry the differential
suite checks) called with random shapes, dtypes, layouts and arguments (Hypothesis draws the
mutations of the op's samples, see bad_input.py), in kiln and in PyTorch. Either both raise, or
both succeed with equal results; kiln's errors are kiln.Error / TypeError / ValueError /
IndexError / NotImplementedError and never a nanobind dump. The calls run in a child process: a
crash (or a hang) fails the suite with the call that crashed, and the child is restarted.

KILN_BAD_INPUT_EXAMPLES (default 3000) sets the number of calls; KILN_BAD_INPUT_SEED=<n> draws
other cases than the fixed default ones. Every disagreement is reported with its reproducer:
  PYTHONPATH=python python3 tests/python/bad_input.py '<case json>'
"""
import json
import math
import os
import select
import subprocess
import sys
import threading
from collections import defaultdict

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import bad_input

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = int(os.environ.get("KILN_BAD_INPUT_EXAMPLES", "3000"))
SEED = os.environ.get("KILN_BAD_INPUT_SEED")
TIMEOUT_S = 60  # per call; a call past it counts as a hang
WORKERS = max(1, min(2, os.cpu_count() or 1))  # child processes (CI has 2 cores)

# Differences from PyTorch, each with its reason: (op, outcome) -> why. The outcome is accepted
# for that op; any other disagreement fails the suite. "deliberate" ones are kiln's design;
# "known" ones are bugs found by this suite in code outside the Python layer, reported to its owner.
_INT_TO_FLOAT = ("deliberate: kiln's INT_TO_FLOAT dtype rule (docs/ops.md) computes integer and bool inputs of a "
                 "float-valued op in float32; PyTorch has no integer or bool kernel for it")
_ANY_DTYPE = ("deliberate: kiln's dtype rule defines the op on bool and integers (docs/ops.md); PyTorch has no "
              "kernel for that dtype")
_FLOAT_KERNELS = ("deliberate: kiln's convolution and pooling kernels are floating-point only; PyTorch's CPU "
                  "has integer ones")
_EMPTY_CHECKED = ("deliberate: kiln checks dtypes and index ranks also when there are no elements; PyTorch skips "
                  "its checks for an empty tensor")
_SCALAR_PROMOTES = ("known (src/decomp): a float alpha/beta/value promotes an integer result to float32; "
                    "PyTorch keeps the integer dtype")
DIFFERENCES = {
    ("argmax", "torch_raises"): _ANY_DTYPE,
    ("median_dim", "torch_raises"): _ANY_DTYPE,
    ("ceil", "torch_raises"): _ANY_DTYPE,
    ("round", "torch_raises"): _ANY_DTYPE,
    ("trunc", "torch_raises"): _ANY_DTYPE,
    ("hardtanh", "torch_raises"): _ANY_DTYPE,
    ("relu6", "torch_raises"): _ANY_DTYPE,
    ("shift_left", "torch_raises"): _ANY_DTYPE,
    ("pad", "torch_raises"): _ANY_DTYPE,
    ("embedding_bag", "torch_raises"): _ANY_DTYPE,
    ("unfold", "torch_raises"): _ANY_DTYPE,
    ("gelu", "torch_raises"): _INT_TO_FLOAT,
    ("hardsigmoid", "torch_raises"): _INT_TO_FLOAT,
    ("hardswish", "torch_raises"): _INT_TO_FLOAT,
    ("mish", "torch_raises"): _INT_TO_FLOAT,
    ("leaky_relu", "torch_raises"): _INT_TO_FLOAT,
    ("hypot", "torch_raises"): _INT_TO_FLOAT,
    ("nextafter", "torch_raises"): _INT_TO_FLOAT,
    ("instance_norm", "torch_raises"): "deliberate: parameters of another float dtype than the input are promoted; "
                                       "PyTorch requires one dtype",
    ("take_along_dim", "torch_raises"): "deliberate: PyTorch's dim=None path views a non-contiguous input and "
                                        "fails; kiln flattens any layout",
    ("as_strided", "torch_raises"): "known (src/core, issue 15 B: view bounds): kiln accepts a view past the end "
                                    "of its storage",
    ("conv1d", "kiln_raises"): _FLOAT_KERNELS,
    ("conv2d", "kiln_raises"): _FLOAT_KERNELS,
    ("conv3d", "kiln_raises"): _FLOAT_KERNELS,
    ("convolution", "kiln_raises"): _FLOAT_KERNELS,
    ("max_pool2d", "kiln_raises"): _FLOAT_KERNELS,
    ("unfold", "kiln_raises"): _FLOAT_KERNELS,
    ("gather", "kiln_raises"): _EMPTY_CHECKED,
    ("scatter", "kiln_raises"): _EMPTY_CHECKED,
    ("scatter_add", "kiln_raises"): _EMPTY_CHECKED,
    ("randn", "kiln_raises"): _EMPTY_CHECKED,
    ("dropout", "kiln_raises"): _EMPTY_CHECKED,
    ("median", "kiln_raises"): "deliberate: the median of an empty tensor is an error in kiln; PyTorch returns nan",
    ("masked_fill", "kiln_raises"): "known (src/decomp): out of place, PyTorch broadcasts self to the mask's shape; "
                                    "kiln requires the mask to broadcast to self, as the in-place form does",
    ("cross_entropy", "kiln_raises"): "deliberate: kiln checks label_smoothing is in [0, 1], as PyTorch documents "
                                      "but does not check",
    ("addcmul", "differ"): _SCALAR_PROMOTES,
    ("addmm", "differ"): _SCALAR_PROMOTES,
    ("prod", "differ"): "deliberate: prod(x, None, keepdim=True) keeps every dim as size 1, as sum does; PyTorch's "
                        "prod ignores keepdim when dim is None",
}


class Worker:
    """A child process running cases (bad_input.serve); restarted after a crash or hang."""

    def __init__(self):
        self.proc = None

    def _start(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, "..", "..", "python"), HERE,
                                                           os.environ.get("PYTHONPATH", "")]))
        env.setdefault("OMP_NUM_THREADS", "1")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "bad_input.py"), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        assert self.proc.stdout.readline().strip() == "ready", "the bad-input worker did not start"

    def run(self, case):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT_S)
            line = self.proc.stdout.readline() if ready else ""
        except OSError:  # the child is gone
            ready, line = True, ""
        if line:
            return json.loads(line)
        if not ready:
            self.proc.kill()
        code = self.proc.wait()
        self.proc = None
        what = "hang" if not ready else "crash"
        return {"outcome": what, "call": "", "kiln": f"worker exit status {code}" if what == "crash" else
                f"no answer in {TIMEOUT_S} s", "torch": ""}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


_mutation = st.one_of(
    st.tuples(st.just("shape"), st.integers(0, 7), st.lists(st.integers(0, 5), max_size=4)),
    st.tuples(st.just("dtype"), st.integers(0, 7), st.sampled_from(bad_input.DTYPES)),
    st.tuples(st.just("layout"), st.integers(0, 7), st.sampled_from(bad_input.LAYOUTS)),
    st.tuples(st.just("int"), st.integers(0, 7), st.sampled_from(bad_input.INTS)),
    st.tuples(st.just("float"), st.integers(0, 7), st.sampled_from(bad_input.FLOATS)),
    st.tuples(st.just("dtype_arg"), st.integers(0, 7), st.sampled_from(bad_input.DTYPES)),
    st.tuples(st.just("none"), st.integers(0, 7), st.none()),
    st.tuples(st.just("drop"), st.just(0), st.none()),
)
_case = st.fixed_dictionaries({
    "op": st.sampled_from(bad_input.ops()),
    "dtype": st.sampled_from(bad_input.DTYPES),
    "sample": st.integers(0, 63),
    "seed": st.integers(0, 2**16),
    "mutations": st.lists(_mutation, min_size=1, max_size=3),
})


def _json_safe(case):
    """Cases go to the child as JSON, with inf and nan as JSON's Infinity / NaN."""
    return json.loads(json.dumps(case))


def draw_cases(n, seed_value=None):
    """n cases drawn by Hypothesis (the same ones every run unless a seed is given)."""
    cases = []

    @settings(max_examples=n, deadline=None, database=None, derandomize=seed_value is None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=_case)
    def draw(case):
        cases.append(_json_safe(case))

    if seed_value is not None:
        draw = seed(seed_value)(draw)
    draw()
    return cases


def run_cases(cases, workers=WORKERS):
    """Runs the cases, split over `workers` child processes: [(case, result)] in order."""
    chunks = [cases[i::workers] for i in range(workers)]
    results = [None] * workers

    def run_chunk(i):
        w = Worker()
        try:
            results[i] = [(c, w.run(c)) for c in chunks[i]]
        finally:
            w.close()

    threads = [threading.Thread(target=run_chunk, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for chunk in results if chunk for r in chunk]


def unexplained(results):
    """{(op, outcome): [(case, result)]} of the disagreements DIFFERENCES does not list."""
    out = defaultdict(list)
    for case, r in results:
        if r["outcome"] in ("equal", "both_raise", "unbuildable"):
            continue
        if r["outcome"] in ("kiln_raises", "torch_raises", "differ") and (case["op"], r["outcome"]) in DIFFERENCES:
            continue
        out[(case["op"], r["outcome"])].append((case, r))
    return out


def report(bad):
    lines = []
    for (op, outcome), items in sorted(bad.items()):
        case, r = items[0]
        lines.append(f"{op}: {outcome} x{len(items)}: {r['call']}\n    kiln:  {r['kiln']}\n    torch: {r['torch']}\n"
                     f"    reproduce: PYTHONPATH=python python3 tests/python/bad_input.py '{json.dumps(case)}'")
    return "\n".join(lines)


def test_bad_inputs_agree_with_pytorch():
    results = run_cases(draw_cases(EXAMPLES, None if SEED is None else int(SEED)))
    assert len(results) >= min(EXAMPLES, 1000), f"only {len(results)} cases ran"
    counts = defaultdict(int)
    for _, r in results:
        counts[r["outcome"]] += 1
    print(f"bad-input suite: {len(results)} calls, {len({c['op'] for c, _ in results})} ops: {dict(counts)}")
    bad = unexplained(results)
    assert not bad, f"{sum(map(len, bad.values()))} calls disagree with PyTorch:\n{report(bad)}"


def test_differences_name_real_ops_and_outcomes():
    ops = set(bad_input.ops())
    for (op, outcome), reason in DIFFERENCES.items():
        assert op in ops, f"DIFFERENCES names {op}, which op_db does not have"
        assert outcome in ("kiln_raises", "torch_raises", "differ") and reason, (op, outcome)


def test_a_crash_fails_the_call_that_crashed_and_the_worker_restarts():
    """The harness itself: a child that dies is reported as a crash, and the next call runs."""
    w = Worker()
    r = w.run({"op": "__crash__"})
    assert r["outcome"] == "crash" and "-11" in r["kiln"], r
    r = w.run({"op": "add", "dtype": "float32", "sample": 0, "seed": 0, "mutations": []})
    assert r["outcome"] == "equal", r
    w.close()
    assert math.isinf(_json_safe({"x": math.inf})["x"])
