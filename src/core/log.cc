// KILN_LOGS: which components print their logs.
#include <kiln/error.h>
#include <kiln/log.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>

namespace kiln {
namespace {

constexpr int kCount = int(LogComponent::kCount);
const char* const kNames[kCount] = {"graph", "guards", "recompiles", "graph_breaks", "dynamic", "aot", "decomp",
                                    "ir", "fusion", "output_code", "autotune", "cudagraphs", "cache", "perf", "passes"};

std::atomic<uint32_t>& mask() {
  static std::atomic<uint32_t> m = [] {
    const char* env = std::getenv("KILN_LOGS");
    uint32_t bits = 0;
    if (env) {
      try {
        std::string s(env);
        size_t at = 0;
        while (at <= s.size()) {
          size_t comma = s.find(',', at);
          std::string name = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
          if (name == "all") bits = ~0u;
          for (int i = 0; i < kCount; i++)
            if (name == kNames[i]) bits |= 1u << i;
          if (comma == std::string::npos) break;
          at = comma + 1;
        }
      } catch (...) {
      }
    }
    return bits;
  }();
  return m;
}

}  // namespace

const char* log_name(LogComponent c) { return kNames[int(c)]; }

bool log_enabled(LogComponent c) { return (mask().load(std::memory_order_relaxed) >> int(c)) & 1u; }

void set_logs(const std::string& components) {
  uint32_t bits = 0;
  size_t at = 0;
  while (at < components.size()) {
    size_t comma = components.find(',', at);
    std::string name = components.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? components.size() : comma + 1;
    if (name.empty()) continue;
    if (name == "all") {
      bits = ~0u;
      continue;
    }
    int found = -1;
    for (int i = 0; i < kCount; i++)
      if (name == kNames[i]) found = i;
    if (found < 0) {
      std::string valid;
      for (int i = 0; i < kCount; i++) valid += std::string(i ? ", " : "") + kNames[i];
      detail::fail("unknown log component '" + name + "'", "use some of: all, " + valid);
    }
    bits |= 1u << found;
  }
  mask().store(bits);
}

std::string enabled_logs() {
  std::string out;
  for (int i = 0; i < kCount; i++)
    if (log_enabled(LogComponent(i))) out += std::string(out.empty() ? "" : ",") + kNames[i];
  return out;
}

detail::LogLine::~LogLine() {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  std::cerr << "[kiln:" << kNames[int(c_)] << "] " << os_.str() << "\n";
}

}  // namespace kiln
