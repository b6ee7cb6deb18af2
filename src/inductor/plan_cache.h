// Whole compiled graphs on disk (docs/cache.md): the executable plan inductor builds for a graph
// (plan.cc) as an entry of the disk cache, "inductor-plan/<key>.plan", so a warm process skips
// lowering, fusion, the tile passes and the C emitter and only loads the kernels' objects; and
// the "inductor" backend's entry per captured graph (src/compile/backends.cc), which names them.
//
// The plan is written and read by one list of fields per struct, used in both directions:
//
//   template <class A> void fields(A& a, Step& s) { a(s.node, s.kernel, s.args, s.grid, s.release); }
//
// (found by argument-dependent lookup beside the struct), so a new field is one more name in its
// list. Numbers, enums, strings, vectors, optionals, pairs, sym expressions, SymInts, Scalars and
// constant tensors are built in. The reader checks every length and tag: an entry that does not
// parse is a miss (removed and rebuilt), as a corrupt one is (the cache's checksum).
#pragma once
#include <kiln/tensor.h>

#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "sym/expr.h"

namespace kiln::inductor::plan_cache {

// The text of the entry format's first line: a new layout of any struct is a new version.
inline constexpr std::string_view kFormat = "kiln-inductor-plan 1\n";

// Thrown by Reader on text that is not a plan (caught by the plan cache: a miss).
struct FormatError {
  std::string what;
};

class Writer {
 public:
  Writer() : out_(kFormat) {}
  template <class... T>
  void operator()(const T&... v) { (put(v), ...); }
  const std::string& text() const { return out_; }

 private:
  void number(int64_t v) { out_ += std::to_string(v), out_ += ' '; }
  void put(const std::string& s) { number(int64_t(s.size())), out_ += s; }
  void put(double d) {
    int64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    number(bits);
  }
  void put(const Scalar& s);
  void put(const sym::ExprPtr& e);
  void put(const SymInt& s);
  void put(const Tensor& t);  // a small constant: dtype, sizes, elements
  template <class T>
  void put(const std::vector<T>& v) {
    number(int64_t(v.size()));
    for (const T& x : v) put(x);
  }
  template <class T>
  void put(const std::optional<T>& v) {
    number(v ? 1 : 0);
    if (v) put(*v);
  }
  template <class T, class U>
  void put(const std::pair<T, U>& p) { put(p.first), put(p.second); }
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_enum_v<T>) number(int64_t(v));
    else if constexpr (std::is_integral_v<T>) number(int64_t(v));
    else fields(*this, const_cast<T&>(v));  // the struct's list (never changes v)
  }
  std::string out_;
};

class Reader {
 public:
  // Throws FormatError unless the text starts with this format's line.
  explicit Reader(std::string_view text);
  template <class... T>
  void operator()(T&... v) { (get(v), ...); }
  bool done() const { return at_ == text_.size(); }

 private:
  [[noreturn]] void bad(const char* what) const;
  int64_t number();
  size_t count();  // a length, at most what is left of the text
  void get(std::string& s);
  void get(double& d) {
    const int64_t bits = number();
    std::memcpy(&d, &bits, sizeof d);
  }
  void get(Scalar& s);
  void get(sym::ExprPtr& e);
  void get(SymInt& s);
  void get(Tensor& t);
  template <class T>
  void get(std::vector<T>& v) {
    v.clear();
    const size_t n = count();
    v.resize(n);
    for (T& x : v) get(x);
  }
  template <class T>
  void get(std::optional<T>& v) {
    v.reset();
    if (number()) get(v.emplace());
  }
  template <class T, class U>
  void get(std::pair<T, U>& p) { get(p.first), get(p.second); }
  template <class T>
  void get(T& v) {
    if constexpr (std::is_same_v<T, bool>) v = number() != 0;
    else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) v = T(number());
    else fields(*this, v);
  }
  std::string_view text_;
  size_t at_ = 0;
};

// The cache's entry ns/name read by `read` (which throws FormatError, or a kiln::Error, on a
// bad entry); false on a miss, including an entry that did not parse (then removed: the caller
// rebuilds it). Entries: "inductor-plan" (plan.cc), "inductor-graph" (src/compile/backends.cc).
bool load(std::string_view ns, const std::string& name, const std::function<void(Reader&)>& read);
// Stores an entry written by `write` (the cache's atomic write; nothing when the cache is off).
void store(std::string_view ns, const std::string& name, const std::function<void(Writer&)>& write);

}  // namespace kiln::inductor::plan_cache
