// Per-component logs, switched on by the KILN_LOGS environment variable (a comma-separated list,
// e.g. KILN_LOGS=graph,guards,recompiles; "all" for every component) or from the API.
//
//   KILN_LOG(recompiles) << "guard failed: " << why;   // printed as "[kiln:recompiles] ..."
#pragma once
#include <cstdint>
#include <sstream>
#include <string>

namespace kiln {

enum class LogComponent : uint8_t {
  graph, guards, recompiles, graph_breaks, dynamic, aot, decomp, ir, fusion, output_code, autotune,
  cudagraphs, cache, perf, passes, kCount
};

bool log_enabled(LogComponent c);
// Replaces the enabled set: "graph,guards", "all", or "" (none). Unknown names are a kiln::Error
// listing the valid ones.
void set_logs(const std::string& components);
std::string enabled_logs();
const char* log_name(LogComponent c);

namespace detail {
// One log line, written to stderr when it goes out of scope.
class LogLine {
 public:
  explicit LogLine(LogComponent c) : c_(c) {}
  ~LogLine();
  template <class T>
  LogLine& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  LogComponent c_;
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace kiln

#define KILN_LOG(component)                                            \
  if (!::kiln::log_enabled(::kiln::LogComponent::component)) {         \
  } else                                                               \
    ::kiln::detail::LogLine(::kiln::LogComponent::component)
