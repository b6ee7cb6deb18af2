// Autotuning: time every config once per key, keep the fastest in memory and on disk (autotune.h).
#include "tile/autotune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <sstream>

#include <kiln/log.h>

#include "runtime/cache.h"

namespace kiln::tile {
namespace {

using Clock = std::chrono::steady_clock;

// The bar on stderr: redrawn in place on a terminal; elsewhere (logs, CI) only the final line.
class Progress {
 public:
  Progress(std::string head, size_t total) : head_(std::move(head)), total_(total), tty_(isatty(STDERR_FILENO)) {}
  void step(size_t done, const std::string& now) {
    if (!tty_) return;
    constexpr size_t kWidth = 24;
    const size_t filled = total_ ? done * kWidth / total_ : kWidth;
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu %s\x1b[K", head_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total_, now.c_str());
    std::fflush(stderr);
  }
  void finish(const std::string& result) {
    std::fprintf(stderr, "%s%s: %s\n", tty_ ? "\r\x1b[K" : "", head_.c_str(), result.c_str());
    std::fflush(stderr);
  }

 private:
  std::string head_;
  size_t total_;
  bool tty_;
};

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f ms", seconds * 1e3);
  return buf;
}

}  // namespace

std::string Config::str() const {
  std::string s;
  for (const auto& [name, value] : constexprs) s += name + "=" + value.str() + ", ";
  return s + "num_warps=" + std::to_string(num_warps) + ", num_stages=" + std::to_string(num_stages);
}

size_t tune(const std::string& label, const std::string& kernel, const std::string& key,
            const std::vector<Config>& configs, const std::function<void(size_t)>& run, const TuneOptions& options) {
  KILN_CHECK(!configs.empty(), "tile.autotune: ", label, " has no configs");
  KILN_CHECK(options.repeats > 0 && options.warmup >= 0, "tile.autotune: repeats must be > 0 and warmup >= 0");
  if (configs.size() == 1) return 0;
  std::string listed;
  for (const Config& c : configs) listed += c.str() + "\n";
  const std::string entry = runtime::cache::hash({kernel, key, listed, cpu::compiler().arch, runtime::cache::kiln_version()}) + ".txt";
  const std::string head = "kiln autotune " + label + " [" + key + "]";
  if (auto stored = runtime::cache::get("autotune", entry)) {
    const std::string chosen = stored->substr(0, stored->find('\n'));
    for (size_t i = 0; i < configs.size(); ++i)
      if (configs[i].str() == chosen) {
        KILN_LOG(autotune) << label << " [" << key << "]: " << chosen << " (from the disk cache)";
        return i;
      }
    KILN_LOG(autotune) << label << " [" << key << "]: the disk cache's choice " << chosen << " is no config now; tuning";
  }
  Progress bar(head, configs.size());
  const auto t_start = Clock::now();
  std::vector<double> medians(configs.size(), INFINITY);
  std::exception_ptr first_error;
  std::string report;
  for (size_t i = 0; i < configs.size(); ++i) {
    bar.step(i, configs[i].str());
    std::vector<double> times;
    try {
      for (int w = 0; w < options.warmup; ++w) run(i);
      for (int r = 0; r < options.repeats; ++r) {
        const auto t0 = Clock::now();
        run(i);
        times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    } catch (const Error& e) {
      KILN_LOG(autotune) << label << " [" << key << "] " << configs[i].str() << ": failed, skipped: " << e.what();
      if (!first_error) first_error = std::current_exception();
      continue;
    }
    std::sort(times.begin(), times.end());
    medians[i] = times[times.size() / 2];
    std::ostringstream line;
    line << configs[i].str() << ": median " << ms(medians[i]) << " (min " << ms(times.front()) << ", max "
         << ms(times.back()) << ", " << times.size() << " runs)";
    KILN_LOG(autotune) << label << " [" << key << "] " << line.str();
    report += line.str() + "\n";
  }
  const size_t best = size_t(std::min_element(medians.begin(), medians.end()) - medians.begin());
  if (!std::isfinite(medians[best])) std::rethrow_exception(first_error);
  const double total = std::chrono::duration<double>(Clock::now() - t_start).count();
  bar.step(configs.size(), "");
  char took[32];
  std::snprintf(took, sizeof took, "%.2f s", total);
  bar.finish(std::to_string(configs.size()) + " configs in " + took + ", best " + configs[best].str() + " (" +
             ms(medians[best]) + ")");
  runtime::cache::put("autotune", entry, configs[best].str() + "\n" + report);
  return best;
}

Autotuner::Autotuner(std::string name, std::vector<Config> configs, MakeFn make, std::vector<std::string> key,
                     TuneOptions options)
    : name_(std::move(name)), configs_(std::move(configs)), make_(std::move(make)), key_(std::move(key)),
      options_(options) {
  KILN_CHECK(!configs_.empty(), "tile.autotune: ", name_, " has no configs");
  const Program first = make_(configs_[0]);
  for (const std::string& k : key_) {
    const bool found = std::any_of(first.params.begin(), first.params.end(), [&](const Param& p) { return p.name == k; });
    KILN_CHECK_HINT(found, "the key names the kernel's parameters", "tile.autotune: ", name_, "'s key ", k,
                    " is not a parameter of the kernel");
  }
  code_ = print(first, PrintOptions{.origins = false});
  for (const Param& p : first.params) params_.push_back(p.name);
  kernels_.resize(configs_.size());
}

const cpu::Kernel& Autotuner::kernel(size_t i) {
  if (!kernels_[i]) kernels_[i] = cpu::compile(make_(configs_[i]));
  return *kernels_[i];
}

std::string Autotuner::key_of(std::span<const cpu::Arg> args) {
  // The key's arguments by value, and every tensor's dtype (a kernel for f64 is another kernel).
  std::string key;
  for (size_t i = 0; i < params_.size() && i < args.size(); ++i) {
    const cpu::Arg& a = args[i];
    if (std::find(key_.begin(), key_.end(), params_[i]) != key_.end())
      key += params_[i] + "=" + (a.kind == cpu::Arg::Kind::Float ? Scalar(a.f).str() : std::to_string(a.i)) + ", ";
    else if (a.kind == cpu::Arg::Kind::Tensor && a.tensor->defined())
      key += params_[i] + ":" + short_name(a.tensor->dtype()) + ", ";
  }
  return key.empty() ? key : key.substr(0, key.size() - 2);
}

const Config& Autotuner::best(const cpu::GridFn& grid, std::span<const cpu::Arg> args) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = key_of(args);
  auto it = chosen_.find(key);
  if (it == chosen_.end()) {
    const size_t i = tune(name_, code_, key, configs_, [&](size_t c) { kernel(c).launch(grid, args); }, options_);
    it = chosen_.emplace(key, i).first;
  }
  return configs_[it->second];
}

void Autotuner::launch(const cpu::GridFn& grid, std::span<const cpu::Arg> args) {
  const Config& c = best(grid, args);
  const cpu::Kernel* k;
  {
    std::lock_guard<std::mutex> lock(mu_);
    k = &kernel(size_t(&c - configs_.data()));
  }
  k->launch(grid, args);
}

}  // namespace kiln::tile
