"""The differential suite: every op of kiln's registry against PyTorch, forward and backward.

Ops come from kiln's own registry (kiln._C._op_registry(), i.e. ops.def), so an op added to
kiln without an entry in op_db fails test_every_op_is_covered. Run: scripts/test.sh (or
`PYTHONPATH=python python3 -m pytest tests/python`).
"""
import pytest

import kiln
import op_db
import oracle

op_db.load_all()
REGISTRY = {o["id"]: o for o in kiln._C._op_registry()}
STATS = {"checked": set(), "grad": set(), "samples": 0}


def cases():
    for op_id, info in sorted(op_db.OPS.items()):
        dtypes = list(info.dtypes) + (["bfloat16"] if info.bf16 else [])
        for dt in dtypes:
            yield pytest.param(op_id, dt, id=f"{op_id}-{dt}")


def test_every_op_is_covered():
    missing = sorted(set(REGISTRY) - set(op_db.OPS) - set(op_db.SKIPS))
    assert not missing, f"ops with neither an oracle entry nor an explicit skip: {missing}"
    unknown = sorted((set(op_db.OPS) | set(op_db.SKIPS)) - set(REGISTRY))
    assert not unknown, f"op_db names ops kiln's registry does not have: {unknown}"
    both = sorted(set(op_db.OPS) & set(op_db.SKIPS))
    assert not both, f"ops both checked and skipped: {both}"


@pytest.mark.parametrize("op_id,dtype", list(cases()))
def test_op(op_id, dtype):
    info = op_db.OPS[op_id]
    diff = "diff" in REGISTRY[op_id]["flags"]
    check_grad = info.grad and diff and dtype in ("float32", "float64")
    samples = list(info.samples(dtype))
    assert samples, f"{op_id}: no samples for {dtype}"
    graded = False
    for i, s in enumerate(samples):
        graded |= oracle.run_sample(info, s, dtype, seed=1000 + i, check_grad=check_grad)
        STATS["samples"] += 1
    STATS["checked"].add((op_id, dtype))
    if graded:
        STATS["grad"].add((op_id, dtype))
    if check_grad:
        assert graded, f"{op_id}[{dtype}]: differentiable, but no sample compared a gradient"
