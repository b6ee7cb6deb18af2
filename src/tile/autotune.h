// Autotuning (docs/tile.md, "Autotuning"): a kernel declares candidate configs (constexpr values,
// num_warps, num_stages) and a key (which arguments the best config depends on, the seed's
// `@triton.autotune(configs=[...], key=['M', 'N', 'K'])`). On the first launch per key every
// config is timed (warmup, then repeats; the median counts), the fastest is kept in memory and in
// the disk cache (namespace "autotune"), and later launches, in this process or the next, use it.
// A progress bar goes to stderr while tuning; KILN_LOGS=autotune logs every timing.
//
//   tile::Autotuner mm("matmul", {tile::Config({{"BM", 32}, {"BN", 32}}), tile::Config({{"BM", 64}, {"BN", 64}})},
//                      [](const tile::Config& c) { return make_matmul(c); },  // the program for a config
//                      {"M", "N", "K"});                                      // the key: parameter names
//   mm.launch([&](const tile::Meta& m) { return cpu::Grid(cdiv(M, m.find("BM")->to_int()), ...); }, {a, b, c, M, N, K});
//
// tune() is the one tuner: Autotuner (C++) and kiln.tile.autotune (Python) both call it.
#pragma once
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tile/cpu/kernel.h"
#include "tile/ir.h"

namespace kiln::tile {

// One candidate: the constexpr values it sets, and the GPU's num_warps / num_stages.
struct Config {
  std::vector<std::pair<std::string, Scalar>> constexprs;
  int num_warps = 4;
  int num_stages = 3;
  Config() = default;
  Config(std::vector<std::pair<std::string, Scalar>> c, int warps = 4, int stages = 3)
      : constexprs(std::move(c)), num_warps(warps), num_stages(stages) {}
  // "BLOCK=256, num_warps=4, num_stages=3": how logs show it and the disk cache stores it.
  std::string str() const;
};

struct TuneOptions {
  int warmup = 2;   // untimed runs per config (the first compiles it)
  int repeats = 7;  // timed runs per config; the median counts
};

// The index of the fastest of `configs` for (`kernel`, `key`): from the disk cache when it holds
// a choice for them, else by timing run(i) for every config. `kernel` identifies the kernel's
// code (its program text), `key` the values it is tuned for ("n=4096, x:f32"); both go into the
// disk cache key with the configs, the target CPU and kiln's version. `label` names it in the
// progress bar and the logs. A config whose run throws kiln::Error is skipped (logged); when all
// fail, the first config's error is rethrown.
size_t tune(const std::string& label, const std::string& kernel, const std::string& key,
            const std::vector<Config>& configs, const std::function<void(size_t)>& run, const TuneOptions& options = {});

// A C++ kernel with configs: builds and compiles the program of a config when first needed,
// tunes per key on first launch, then launches the chosen kernel.
class Autotuner {
 public:
  using MakeFn = std::function<Program(const Config&)>;
  Autotuner(std::string name, std::vector<Config> configs, MakeFn make, std::vector<std::string> key,
            TuneOptions options = {});
  // Tunes (first launch per key) and launches the best config's kernel. The grid is computed
  // from that kernel's meta. Arguments are as for cpu::Kernel::launch.
  void launch(const cpu::GridFn& grid, std::span<const cpu::Arg> args);
  void launch(const cpu::GridFn& grid, std::initializer_list<cpu::Arg> args) {
    launch(grid, std::span<const cpu::Arg>(args.begin(), args.size()));
  }
  // The config chosen for these arguments (tuning with `grid` if none is yet).
  const Config& best(const cpu::GridFn& grid, std::span<const cpu::Arg> args);
  const std::vector<Config>& configs() const { return configs_; }

 private:
  const cpu::Kernel& kernel(size_t i);
  std::string key_of(std::span<const cpu::Arg> args);
  std::string name_;
  std::vector<Config> configs_;
  MakeFn make_;
  std::vector<std::string> key_;
  TuneOptions options_;
  std::string code_;  // the first config's program text: the kernel's identity for the disk cache
  std::vector<std::string> params_;  // the kernel's parameter names, in order
  std::vector<std::optional<cpu::Kernel>> kernels_;
  std::map<std::string, size_t> chosen_;
  std::mutex mu_;
};

}  // namespace kiln::tile
