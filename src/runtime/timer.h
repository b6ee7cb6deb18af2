// The perf log's times (KILN_LOGS=perf): wall clock and this thread's CPU time (which a loaded
// machine inflates far less), as "12.3 ms (4.5 ms CPU)". Capture, AOT, the backends and
// inductor time their phases with it.
#pragma once
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace kiln::runtime {

struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = thread_cpu();
  static double thread_cpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  double wall_ms() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count(); }
  double cpu_ms() const { return 1e3 * (thread_cpu() - cpu); }
  std::string ms() const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f ms (%.1f ms CPU)", wall_ms(), cpu_ms());
    return buf;
  }
};

}  // namespace kiln::runtime
