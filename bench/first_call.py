"""A compiled workload's first calls in this process: wall time, resident memory, page faults and
system/user CPU per call (bench/cpu.py's workloads, kiln only). Run it twice with one
KILN_CACHE_DIR: the first process compiles (cold), the second loads everything (warm); what the
warm first call costs over the later ones is the warm start.

    PYTHONPATH=python python3 bench/first_call.py [--workload gpt_tiny_train] [--calls 5] [--backend inductor]

docs/performance.md ("Memory: large blocks and huge pages") used it for KILN_HUGEPAGES's default.
"""
import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402  (bench/cpu.py: the workloads)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="gpt_tiny_train")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--backend", default="inductor", help="a kiln.compile backend, or 'eager' for no compile")
    a = ap.parse_args()
    import kiln
    kiln.manual_seed(0)
    fn, args, _, _ = cpu.workload(kiln, a.workload)
    before = getattr(fn, "before_call", None)
    no_grad = getattr(fn, "no_grad", False)  # (read before compile: the compiled function has no such attribute)
    if a.backend != "eager":
        fn = kiln.compile(fn, backend=a.backend)
    if no_grad:
        fn = kiln.no_grad()(fn)
    for i in range(a.calls):
        r0, u0 = rss_mb(), resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        if before:
            before()
        fn(*args)
        t = time.perf_counter() - t0
        u1 = resource.getrusage(resource.RUSAGE_SELF)
        print(f"call {i}: {t * 1e3:8.1f} ms  RSS {r0:6.0f} -> {rss_mb():6.0f} MB  page faults {u1.ru_minflt - u0.ru_minflt:7d}  "
              f"system {u1.ru_stime - u0.ru_stime:5.2f} s  user {u1.ru_utime - u0.ru_utime:5.2f} s", flush=True)


if __name__ == "__main__":
    main()
