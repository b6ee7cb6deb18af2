#include <kiln/ops.h>

#include <mutex>

namespace kiln {
namespace {
std::mutex g_mu;
GeneratorState g_state{0x4b494c4e /* "KILN" */, 0};
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_state = {seed, 0};
}

GeneratorState generator_state() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state;
}

void set_generator_state(GeneratorState s) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_state = s;
}

GeneratorState next_random_range(uint64_t n) {
  std::lock_guard<std::mutex> lock(g_mu);
  GeneratorState r = g_state;
  g_state.offset += n;
  return r;
}

}  // namespace kiln
