// Many graphs' kernels in one compiler call (batch.h).
#include "fuzz/batch.h"

#include <sys/wait.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tile/cpu/cc.h"
#include "tile/cpu/emit_c.h"

namespace kiln::fuzz {
namespace {

// What every generated translation unit starts with: the prelude and the launch support.
const std::string& common_prefix() {
  static const std::string prefix = tile::cpu::translation_unit({});
  return prefix;
}

// The names of the functions a unit exports (its kernels' entry points, `extern "C"`).
std::vector<std::string> entry_symbols(const std::string& code) {
  std::vector<std::string> names;
  const std::string marker = "extern \"C\"";
  for (size_t at = code.find(marker); at != std::string::npos; at = code.find(marker, at + marker.size())) {
    size_t end = code.find('(', at);
    if (end == std::string::npos) break;
    while (end > at && code[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > at && (std::isalnum(static_cast<unsigned char>(code[begin - 1])) || code[begin - 1] == '_')) --begin;
    if (begin < end) names.push_back(code.substr(begin, end - begin));
  }
  return names;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

namespace {
struct Unit {
  std::string source;
  bool done = false;
  std::optional<tile::cpu::Prebuilt> object;  // nullopt when its batch did not compile
};
}  // namespace

struct KernelBatch::State {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int tasks = 0, done = 0;  // of the open batch
  std::chrono::steady_clock::time_point last_event;  // a source collected or a task done
  std::vector<std::shared_ptr<Unit>> collected;
  Stats stats;

  // The hook: a source waits for its batch's object (nullopt: compile it as usual).
  std::optional<tile::cpu::Prebuilt> wait(const std::string& source) {
    std::unique_lock<std::mutex> lock(mu);
    if (!open || source.compare(0, common_prefix().size(), common_prefix()) != 0) {
      ++stats.alone;
      return std::nullopt;
    }
    auto unit = std::make_shared<Unit>();
    unit->source = source;
    collected.push_back(unit);
    last_event = std::chrono::steady_clock::now();
    cv.notify_all();
    cv.wait(lock, [&] { return unit->done; });
    return unit->object;
  }

  // One compiler call for `units`: the prelude once, then each unit's kernels in a namespace of
  // its own (their static helpers have the same names in every unit), its entry symbols given
  // the suffix "__u<index>" by macros (an `extern "C"` name is the same in every namespace).
  void build(const std::vector<std::shared_ptr<Unit>>& units, const std::string& level, int id) {
    const std::string& prefix = common_prefix();
    std::string tu = prefix;
    for (size_t j = 0; j < units.size(); ++j) {
      const std::string code = units[j]->source.substr(prefix.size()), suffix = "__u" + std::to_string(j);
      const std::vector<std::string> names = entry_symbols(code);
      for (const std::string& n : names) tu += "#define " + n + " " + n + suffix + "\n";
      tu += "namespace kiln_fuzz_u" + std::to_string(j) + " {\n" + code + "\n}\n";
      for (const std::string& n : names) tu += "#undef " + n + "\n";
    }
    const std::string base = tile::cpu::work_dir() + "/fuzz-batch" + std::to_string(id);
    std::ofstream(base + ".cc", std::ios::binary) << tu;
    const tile::cpu::Compiler& c = tile::cpu::compiler();
    std::string cmd = quote(c.command);
    for (const std::string& f : c.flags) cmd += " " + (f.rfind("-O", 0) == 0 ? level : f);
    cmd += " -o " + quote(base + ".so") + " " + quote(base + ".cc") + " > " + quote(base + ".log") + " 2>&1";
    const int status = std::system(cmd.c_str());
    const bool ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok)
      std::cerr << "[fuzz] a batch of " << units.size() << " kernel units did not compile (" << level
                << "); each compiles alone. " << base << ".cc:\n" << read_file(base + ".log").substr(0, 4000) << "\n";
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t j = 0; j < units.size(); ++j) {
        if (ok) units[j]->object = tile::cpu::Prebuilt{base + ".so", "__u" + std::to_string(j)};
        units[j]->done = true;
      }
      ++(ok ? stats.batches : stats.failed);
      if (ok) stats.units += int(units.size());
    }
    cv.notify_all();
  }
};

KernelBatch::KernelBatch() : s_(std::make_shared<State>()) {
  std::weak_ptr<State> state = s_;
  tile::cpu::set_prebuilt_hook([state](const std::string& source) -> std::optional<tile::cpu::Prebuilt> {
    if (auto s = state.lock()) return s->wait(source);
    return std::nullopt;
  });
}

KernelBatch::~KernelBatch() {
  tile::cpu::set_prebuilt_hook(nullptr);
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->tasks = 0;  // close at once
  }
  close_when_ready("-O1");
  for (std::thread& t : compilers_) t.join();
}

void KernelBatch::open(int tasks) {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->open = true;
  s_->tasks = tasks, s_->done = 0;
  s_->last_event = std::chrono::steady_clock::now();
}

void KernelBatch::task_done() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    ++s_->done;
    s_->last_event = std::chrono::steady_clock::now();
  }
  s_->cv.notify_all();
}

void KernelBatch::close_when_ready(const std::string& level, int parts) {
  std::vector<std::shared_ptr<Unit>> units;
  {
    std::unique_lock<std::mutex> lock(s_->mu);
    State& s = *s_;
    // (A task may hand over several sources, so "ready" also waits a moment for stragglers.)
    const auto ready = [&] { return int(s.collected.size()) + s.done >= s.tasks; };
    const auto quiet_for = [&](std::chrono::milliseconds t) { return std::chrono::steady_clock::now() - s.last_event >= t; };
    while (s.open && !(ready() && quiet_for(std::chrono::milliseconds(20))) && !quiet_for(std::chrono::seconds(5)))
      s.cv.wait_for(lock, std::chrono::milliseconds(10));
    if (s.open && !ready()) ++s.stats.quiet_closes;
    s.open = false;
    units.swap(s.collected);
  }
  const size_t n = std::min<size_t>(size_t(std::max(parts, 1)), units.size());
  for (size_t k = 0; k < n; ++k) {
    std::vector<std::shared_ptr<Unit>> part(units.begin() + ptrdiff_t(units.size() * k / n),
                                            units.begin() + ptrdiff_t(units.size() * (k + 1) / n));
    // A name no batch of the process had (dlopen of a path already loaded returns that object).
    static std::atomic<int> next_id{0};
    compilers_.emplace_back([state = s_, part = std::move(part), level, id = next_id++] { state->build(part, level, id); });
  }
}

KernelBatch::Stats KernelBatch::stats() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->stats;
}

}  // namespace kiln::fuzz
