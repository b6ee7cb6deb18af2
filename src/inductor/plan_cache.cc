// The plan cache's entry format and store (plan_cache.h).
#include "inductor/plan_cache.h"

#include <kiln/log.h>

#include "graph/literal.h"
#include "runtime/cache.h"

namespace kiln::inductor::plan_cache {

void Writer::put(const Scalar& s) {
  number(int64_t(s.kind()));
  if (s.is_float()) put(s.to_double());
  else number(s.to_int());
}

void Writer::put(const sym::ExprPtr& e) {
  number(e ? 1 : 0);
  if (!e) return;
  number(int64_t(e->kind));
  switch (e->kind) {
    case sym::Kind::Const: number(e->value); return;
    case sym::Kind::Symbol: put(e->name), put(e->extent); break;
    default: put(e->args);
  }
  number(e->range.lo), number(e->range.hi);
}

void Writer::put(const SymInt& s) {
  number(s.is_symbolic() ? 1 : 0);
  if (s.is_symbolic()) put(s.expr());
  number(s.hint());
}

void Writer::put(const Tensor& t) {
  number(t.defined() ? 1 : 0);
  if (!t.defined()) return;
  put(t.dtype()), put(t.sizes()), put(graph::literal_elements(t));
}

Reader::Reader(std::string_view text) : text_(text) {
  if (text_.substr(0, kFormat.size()) != kFormat) bad("not a plan of this format");
  at_ = kFormat.size();
}

void Reader::bad(const char* what) const { throw FormatError{std::string(what) + " at byte " + std::to_string(at_)}; }

int64_t Reader::number() {
  const size_t end = text_.find(' ', at_);
  if (end == std::string_view::npos || end == at_ || end - at_ > 20) bad("expected a number");
  int64_t v = 0;
  const bool negative = text_[at_] == '-';
  if (negative && end == at_ + 1) bad("expected a number");
  for (size_t i = at_ + (negative ? 1 : 0); i < end; ++i) {
    const char c = text_[i];
    if (c < '0' || c > '9') bad("expected a number");
    v = int64_t(uint64_t(v) * 10 + uint64_t(c - '0'));  // wraps as the writer's two's complement did
  }
  at_ = end + 1;
  return negative ? int64_t(0 - uint64_t(v)) : v;
}

size_t Reader::count() {
  const int64_t n = number();
  if (n < 0 || uint64_t(n) > text_.size() - at_) bad("a length past the end");
  return size_t(n);
}

void Reader::get(std::string& s) {
  const size_t n = count();
  s.assign(text_.substr(at_, n));
  at_ += n;
}

void Reader::get(Scalar& s) {
  const int64_t kind = number();
  if (kind == int64_t(Scalar::Kind::Float)) {
    double d;
    get(d);
    s = Scalar(d);
  } else if (kind == int64_t(Scalar::Kind::Int)) {
    s = Scalar(number());
  } else if (kind == int64_t(Scalar::Kind::Bool)) {
    s = Scalar(number() != 0);
  } else {
    bad("a scalar of no kind");
  }
}

void Reader::get(sym::ExprPtr& e) {
  e = nullptr;
  if (!number()) return;
  const int64_t kind = number();
  if (kind == int64_t(sym::Kind::Const)) {
    e = sym::constant(number());
    return;
  }
  std::string name;
  sym::ExprPtr extent;
  std::vector<sym::ExprPtr> args;
  if (kind == int64_t(sym::Kind::Symbol)) {
    get(name), get(extent);
  } else if (kind > int64_t(sym::Kind::Symbol) && kind <= int64_t(sym::Kind::Max)) {
    get(args);
    for (const sym::ExprPtr& a : args)
      if (!a) bad("an expression with a missing operand");
  } else {
    bad("an expression of no kind");
  }
  sym::Range range;
  range.lo = number(), range.hi = number();
  if (kind == int64_t(sym::Kind::Symbol)) e = extent ? sym::index(name, extent) : sym::symbol(name, range);
  else e = sym::detail::make(sym::Kind(kind), std::move(args), range);  // written canonical: interned as it was
}

void Reader::get(SymInt& s) {
  sym::ExprPtr e;
  if (number()) {
    get(e);
    if (!e) bad("a symbolic size without its expression");
  }
  const int64_t hint = number();
  s = e ? SymInt(e, hint) : SymInt(hint);
}

void Reader::get(Tensor& t) {
  t = Tensor();
  if (!number()) return;
  DType dtype;
  Shape sizes;
  std::vector<Scalar> elements;
  get(dtype), get(sizes), get(elements);
  t = graph::literal_tensor(sizes, dtype, elements);
}

bool load(std::string_view ns, const std::string& entry, const std::function<void(Reader&)>& read) {
  const std::optional<std::string> bytes = runtime::cache::get(ns, entry);
  if (!bytes) return false;
  std::string why;
  try {
    Reader r(*bytes);
    read(r);
    if (r.done()) return true;
    why = "bytes after the plan";
  } catch (const FormatError& e) {
    why = e.what;
  } catch (const Error& e) {  // e.g. the graph text or a kernel image that does not check out
    why = e.what();
  }
  KILN_LOG(cache) << "the cached plan " << entry << " does not parse (" << why << "); removed, it is rebuilt";
  runtime::cache::remove(ns, entry);
  return false;
}

void store(std::string_view ns, const std::string& entry, const std::function<void(Writer&)>& write) {
  if (!runtime::cache::enabled()) return;
  Writer w;
  write(w);
  runtime::cache::put(ns, entry, w.text());
}

}  // namespace kiln::inductor::plan_cache
