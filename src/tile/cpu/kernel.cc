// Compiling and launching tile kernels on the CPU (kernel.h).
#include "tile/cpu/kernel.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <map>
#include <set>
#include <utility>

#include <kiln/log.h>

#include "runtime/cache.h"
#include "tile/cpu/emit_c.h"
#include "tile/passes/passes.h"

namespace kiln::tile::cpu {

void launch_failure(const std::string& kernel, const std::string& message, const std::string& hint) {
  Error::Info info;
  info.op = "tile.launch";
  info.message = "kernel " + kernel + ": " + message;
  info.hint = hint;
  throw Error(std::move(info));
}

std::string param_text(const ParamSig& p) {
  switch (p.kind) {
    case ParamKind::Pointer: return std::string("ptr<") + short_name(p.dtype) + ">";
    case ParamKind::Sym: return "sym";
    default: return short_name(p.dtype);
  }
}

namespace {

// The generated code's kiln_tile_arg (emit_c.cc): one 8-byte slot per parameter.
union RawArg {
  void* p;
  int64_t i;
  double f;
};
using EntryFn = void (*)(const RawArg* args, const int64_t* grid);

[[noreturn]] void fail(const std::string& kernel, const std::string& message, const std::string& hint = {}) {
  launch_failure(kernel, message, hint);
}

}  // namespace

struct Kernel::Data {
  std::string name;
  std::vector<ParamSig> params;
  Meta meta;
  std::string ir;
  std::shared_ptr<const GroupImage> group;  // its translation unit: group->sources[part] (shared, not copied per kernel)
  size_t part = 0;
  std::shared_ptr<Library> lib;
  EntryFn entry = nullptr;
};

const std::string& Kernel::name() const { return d_->name; }
const std::vector<ParamSig>& Kernel::params() const { return d_->params; }
const Meta& Kernel::meta() const { return d_->meta; }
const std::string& Kernel::ir() const { return d_->ir; }
const std::string& Kernel::source() const { return d_->group->sources[d_->part]; }
const Library& Kernel::library() const { return *d_->lib; }

void Kernel::launch(const Grid& grid, std::span<const Arg> args) const {
  KILN_CHECK(d_, "tile: launching an empty Kernel (default-constructed)");
  const Data& k = *d_;
  if (args.size() != k.params.size())
    fail(k.name, detail::cat("takes ", k.params.size(), " argument(s), got ", args.size()));
  RawArg raw[64];
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSig& p = k.params[i];
    const Arg& a = args[i];
    switch (p.kind) {
      case ParamKind::Pointer: {
        if (a.kind != Arg::Kind::Tensor)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a tensor (", param_text(p), ")"));
        const Tensor& t = *a.tensor;
        if (!t.defined()) fail(k.name, detail::cat("argument ", i, " (", p.name, ") is an undefined tensor"));
        if (t.dtype() != p.dtype)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is a ", kiln::name(t.dtype()), " tensor, the kernel takes ", param_text(p)),
               "convert it with .to() or build the kernel for this dtype");
        if (!t.device().is_cpu())
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is on ", t.device().str(), "; this kernel runs on the CPU"));
        if (t.is_fake()) fail(k.name, detail::cat("argument ", i, " (", p.name, ") is a fake tensor (no data)"));
        raw[i].p = t.data_ptr();
        break;
      }
      case ParamKind::Int:
      case ParamKind::Sym:
        if (a.kind != Arg::Kind::Int)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be an integer (", param_text(p), ")"));
        if (p.dtype == kInt32 && (a.i < std::numeric_limits<int32_t>::min() || a.i > std::numeric_limits<int32_t>::max()))
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") = ", a.i, " does not fit in i32"),
               "declare the parameter i64");
        raw[i].i = a.i;
        break;
      case ParamKind::Float:
        if (a.kind == Arg::Kind::Tensor)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a number (", param_text(p), ")"));
        raw[i].f = a.kind == Arg::Kind::Float ? a.f : double(a.i);
        break;
    }
  }
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  for (int d = 0; d < 3; ++d)
    if (g[d] < 0 || g[d] > std::numeric_limits<int32_t>::max())
      fail(k.name, detail::cat("grid dim ", d, " is ", g[d], "; it must be in [0, 2^31)"));
  if (g[0] == 0 || g[1] == 0 || g[2] == 0) return;
  k.entry(raw, g);
}

// (kernel.h) Names swapped for fixed ones while printing, then restored.
std::string code_text(Program& p) {
  std::string name = std::exchange(p.name, "kernel");
  std::vector<std::string> names;
  for (size_t i = 0; i < p.params.size(); ++i) names.push_back(std::exchange(p.params[i].value->name, "p" + std::to_string(i)));
  PrintOptions o;
  o.origins = false;
  std::string text = print(p, o);
  p.name = std::move(name);
  for (size_t i = 0; i < p.params.size(); ++i) p.params[i].value->name = std::move(names[i]);
  return text;
}

namespace {

// Below this much tile IR (its printed text, a proxy for the C it emits) a group stays one
// translation unit: each unit pays the compiler's start and the prelude (~0.2 s of CPU), worth
// it only against ~1 s of kernels (the GPT example's forward graph: ~40 KB of IR, ~2 s at -O3).
constexpr size_t kPartIrBytes = 24 << 10;

// Splits kernels [0, n) by their IR sizes into consecutive parts of about equal size (the
// launch order kept, so a group's parts, and its cache keys, are deterministic).
std::vector<size_t> part_starts(const std::vector<size_t>& sizes) {
  size_t total = 0;
  for (size_t z : sizes) total += z;
  const size_t parts = std::clamp<size_t>(total / kPartIrBytes, 1, std::min<size_t>(sizes.size(), size_t(compile_jobs())));
  std::vector<size_t> starts = {0};
  size_t acc = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    acc += sizes[i];
    if (starts.size() < parts && acc * parts >= total * starts.size()) starts.push_back(i + 1);
  }
  return starts;
}

std::string part_stem(const std::vector<Program>& programs, const std::vector<size_t>& members) {
  std::string stem;
  for (size_t i : members) stem += (stem.empty() ? "" : "+") + programs[i].name;
  if (stem.size() > 60) stem = stem.substr(0, 60);
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+') c = '_';
  return stem;
}


// What a group compiles to, short of the compilers: its translation units and each kernel's
// part, the kernel whose code it runs (itself or an earlier one with the same code) and IR
// after the passes. Kept in the disk cache ("tile-group", keyed by the programs'
// text before the passes, the passes and cache_key's compiler, flags, CPU and version), so a
// warm process skips the passes and the C emitter too.
struct Layout {
  std::vector<std::string> stems, sources;  // per translation unit
  std::vector<size_t> part_of;              // per kernel
  std::vector<size_t> code_of;              // per kernel: the kernel whose entry it launches
  std::vector<std::string> ir;              // per kernel

  std::string serialize() const {
    std::string out = "kiln-tile-group 2\n";
    auto field = [&](const std::string& f) { out += std::to_string(f.size()) + "\n" + f; };
    out += std::to_string(sources.size()) + "\n";
    for (size_t k = 0; k < sources.size(); ++k) field(stems[k]), field(sources[k]);
    out += std::to_string(ir.size()) + "\n";
    for (size_t i = 0; i < ir.size(); ++i)
      out += std::to_string(part_of[i]) + "\n" + std::to_string(code_of[i]) + "\n", field(ir[i]);
    return out;
  }
  // Null when the text is not a layout of `kernels` kernels (an entry of another format).
  static std::optional<Layout> parse(const std::string& text, size_t kernels) {
    size_t at = 0;
    bool ok = true;
    auto line = [&]() -> std::string {
      const size_t end = text.find('\n', at);
      if (end == std::string::npos) return ok = false, std::string();
      std::string l = text.substr(at, end - at);
      at = end + 1;
      return l;
    };
    auto number = [&]() -> size_t {
      const std::string l = line();
      if (l.empty() || l.size() > 18 || l.find_first_not_of("0123456789") != std::string::npos) return ok = false, 0;
      return size_t(std::stoull(l));
    };
    auto field = [&]() -> std::string {
      const size_t n = number();
      if (!ok || n > text.size() - at) return ok = false, std::string();
      std::string f = text.substr(at, n);
      at += n;
      return f;
    };
    if (line() != "kiln-tile-group 2") return std::nullopt;
    Layout l;
    const size_t parts = number();
    for (size_t k = 0; ok && k < parts; ++k) l.stems.push_back(field()), l.sources.push_back(field());
    if (number() != kernels) return std::nullopt;
    for (size_t i = 0; ok && i < kernels; ++i) {
      l.part_of.push_back(number());
      l.code_of.push_back(number());
      l.ir.push_back(field());
      const size_t code = l.code_of.back();
      if (l.part_of.back() >= parts || code > i || l.code_of[code] != code || l.part_of[code] != l.part_of.back()) ok = false;
    }
    if (!ok || at != text.size() || parts == 0) return std::nullopt;
    return l;
  }
};

constexpr const char* kGroupNamespace = "tile-group";

Layout layout(std::vector<Program>& programs, const std::string& passes) {
  Layout l;
  std::vector<size_t> unique, sizes;      // the kernels that compile, and their IR sizes
  std::map<std::string, size_t> by_code;  // code text -> the first kernel with it
  for (size_t i = 0; i < programs.size(); ++i) {
    Program& p = programs[i];
    verify(p);
    run_passes(p, passes);
    l.ir.push_back(print(p));
    const size_t code = by_code.emplace(code_text(p), i).first->second;
    l.code_of.push_back(code);
    if (code == i) unique.push_back(i), sizes.push_back(l.ir.back().size());
  }
  std::vector<size_t> starts = part_starts(sizes);
  starts.push_back(unique.size());
  l.part_of.resize(programs.size());
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    std::vector<size_t> members(unique.begin() + long(starts[k]), unique.begin() + long(starts[k + 1]));
    std::vector<const Program*> ptrs;
    for (size_t i : members) ptrs.push_back(&programs[i]), l.part_of[i] = k;
    l.sources.push_back(translation_unit(ptrs));
    l.stems.push_back(part_stem(programs, members));
  }
  std::vector<std::string> shared(l.sources.size());  // which kernels launch another's entry
  for (size_t i = 0; i < programs.size(); ++i) {
    if (l.code_of[i] == i) continue;
    l.part_of[i] = l.part_of[l.code_of[i]];
    shared[l.part_of[i]] += "// " + programs[i].name + " runs the code of " + programs[l.code_of[i]].name + "\n";
  }
  for (size_t k = 0; k < l.sources.size(); ++k)
    if (!shared[k].empty()) l.sources[k] += "\n// Kernels with the same code as one above (one entry serves them):\n" + shared[k];
  KILN_LOG(perf) << "tile: " << programs.size() << " kernel(s), " << unique.size() << " of distinct code, in "
                 << l.sources.size() << " translation unit(s)";
  return l;
}

}  // namespace

PendingGroup compile_group_async(std::vector<Program> programs, const std::string& passes, std::string printed) {
  KILN_CHECK(!programs.empty(), "tile: compile_group of no kernels");
  std::set<std::string> names;
  const bool print_here = printed.empty();
  for (const Program& p : programs) {
    KILN_CHECK(names.insert(entry_name(p)).second, "tile: two kernels named ", p.name, " in one compile group");
    if (print_here) printed += print(p);
  }
  // Only a group big enough to split is worth an entry (a small one re-runs its passes and
  // emitter in a few ms, cheaper than the entry's write). The parts depend on the jobs too.
  const bool keep = printed.size() >= kPartIrBytes;
  const std::string entry = cache_key(passes + "\n" + std::to_string(compile_jobs()) + "\n" + printed) + ".group";
  std::optional<Layout> cached;
  if (auto bytes = keep ? runtime::cache::get(kGroupNamespace, entry) : std::nullopt) {
    cached = Layout::parse(*bytes, programs.size());
    if (!cached) {
      KILN_LOG(cache) << "the cached kernel group " << entry << " does not parse; removed, it is rebuilt";
      runtime::cache::remove(kGroupNamespace, entry);
    }
  }
  // The passes change no parameter or meta-parameter (a hit takes them from the programs as given).
  Layout l = cached ? std::move(*cached) : layout(programs, passes);
  if (keep && !cached) runtime::cache::put(kGroupNamespace, entry, l.serialize());
  GroupImage image;
  image.stems = l.stems;
  image.sources = std::move(l.sources);
  for (size_t i = 0; i < programs.size(); ++i) {
    const Program& p = programs[i];
    GroupImage::Entry& e = image.kernels.emplace_back();
    e.name = p.name;
    e.symbol = entry_name(programs[l.code_of[i]]);
    for (const Param& prm : p.params) e.params.push_back({prm.name, prm.kind, prm.value->type.dtype});
    e.meta = p.meta;
    e.part = l.part_of[i];
  }
  return load_group(std::move(image), std::move(l.ir));
}

PendingGroup load_group(GroupImage image, std::vector<std::string> ir) {
  KILN_CHECK(!image.sources.empty() && image.stems.size() == image.sources.size() && !image.kernels.empty(),
             "tile: load_group of an image without translation units or kernels");
  auto img = std::make_shared<const GroupImage>(std::move(image));
  std::vector<std::shared_ptr<Kernel::Data>> data;
  for (const GroupImage::Entry& e : img->kernels) {
    KILN_CHECK(e.part < img->sources.size(), "tile: load_group: kernel ", e.name, " is in unit ", e.part, " of ",
               img->sources.size());
    auto d = std::make_shared<Kernel::Data>();
    d->name = e.name;
    d->params = e.params;
    d->meta = e.meta;
    if (data.size() < ir.size()) d->ir = std::move(ir[data.size()]);
    d->group = img;
    d->part = e.part;
    data.push_back(std::move(d));
  }
  PendingGroup g;
  g.image_ = img;
  g.sources_ = std::shared_ptr<const std::vector<std::string>>(img, &img->sources);
  // One thread per part beyond the first (the compile slots bound how many compilers run); the
  // first part compiles on the group's own thread.
  // (the exit waits for this thread: CompileInFlight, cc.h)
  auto flight = std::make_shared<CompileInFlight>();
  g.kernels_ = std::async(std::launch::async, [img, data = std::move(data), flight]() mutable {
                 const auto held = std::move(flight);  // (released when the thread's work ends, not with the future)
                 const std::vector<std::string>& sources = img->sources;
                 std::vector<std::future<std::shared_ptr<Library>>> rest;
                 for (size_t k = 1; k < sources.size(); ++k)
                   rest.push_back(std::async(std::launch::async, [&, k] { return compile_source(sources[k], img->stems[k]); }));
                 std::vector<std::shared_ptr<Library>> libs = {compile_source(sources[0], img->stems[0])};
                 for (auto& f : rest) libs.push_back(f.get());
                 std::vector<Kernel> out;
                 for (size_t i = 0; i < data.size(); ++i) {
                   data[i]->lib = libs[img->kernels[i].part];
                   data[i]->entry = reinterpret_cast<EntryFn>(data[i]->lib->symbol(img->kernels[i].symbol));
                   Kernel k;
                   k.d_ = data[i];
                   out.push_back(std::move(k));
                 }
                 return out;
               }).share();
  return g;
}

std::vector<Kernel> compile_group(std::vector<Program> programs, const std::string& passes) {
  return compile_group_async(std::move(programs), passes).kernels();
}

Kernel compile(Program p, const std::string& passes) {
  std::vector<Program> one;
  one.push_back(std::move(p));
  return compile_group(std::move(one), passes).at(0);
}

}  // namespace kiln::tile::cpu
