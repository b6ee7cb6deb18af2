"""pytest setup for the Python suite: the summary line of the differential suite."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_terminal_summary(terminalreporter):
    mod = sys.modules.get("test_ops")
    if mod is None:
        return
    import op_db
    stats = mod.STATS
    failed = len(terminalreporter.stats.get("failed", []))
    ops = {op for op, _ in stats["checked"]}
    terminalreporter.write_line(
        f"kiln differential suite: {len(ops)} ops x dtypes = {len(stats['checked'])} checked "
        f"({len(stats['grad'])} with gradients, {stats['samples']} samples), "
        f"{len(op_db.SKIPS)} ops skipped, {failed} failed")
    for op, reason in sorted(op_db.SKIPS.items()):
        terminalreporter.write_line(f"  skipped {op}: {reason}")
