"""pytest setup for the Python suite: the summary line of the differential suite.

Under pytest-xdist (scripts/test.sh runs the suite with `-n <cores> --dist loadfile`) test_ops.py
runs in one worker process; the worker hands its counts to the controller, which prints the line.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

_worker_stats = []  # what the workers sent (xdist controller)


def _stats_here():
    mod = sys.modules.get("test_ops")
    if mod is None:
        return None
    s = mod.STATS
    return {"checked": [list(c) for c in s["checked"]], "grad": [list(g) for g in s["grad"]],
            "samples": s["samples"]}


def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)  # set in an xdist worker only
    stats = _stats_here()
    if out is not None and stats is not None:
        out["kiln_differential"] = stats


def pytest_testnodedown(node, error):
    stats = getattr(node, "workeroutput", {}).get("kiln_differential")
    if stats is not None:
        _worker_stats.append(stats)


def pytest_terminal_summary(terminalreporter):
    parts = [s for s in [_stats_here()] if s is not None] + _worker_stats
    if not parts:
        return
    import op_db
    checked = {tuple(c) for p in parts for c in p["checked"]}
    grad = {tuple(g) for p in parts for g in p["grad"]}
    samples = sum(p["samples"] for p in parts)
    failed = len(terminalreporter.stats.get("failed", []))
    ops = {op for op, _ in checked}
    terminalreporter.write_line(
        f"kiln differential suite: {len(ops)} ops x dtypes = {len(checked)} checked "
        f"({len(grad)} with gradients, {samples} samples), "
        f"{len(op_db.SKIPS)} ops skipped, {failed} failed")
    for op, reason in sorted(op_db.SKIPS.items()):
        terminalreporter.write_line(f"  skipped {op}: {reason}")
