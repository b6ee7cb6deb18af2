// einsum: the equation is parsed into labels per operand; repeated labels become diagonals,
// labels no one else needs are summed early, and operands are contracted left to right, each
// pair as one batched matmul after a permute/reshape.
#include <algorithm>
#include <map>
#include <set>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

constexpr int kEllipsis = 1000;  // label codes: letters are their char; ellipsis dim j is 1000 + j

struct Operand {
  Tensor t;
  std::vector<int> labels;  // one per dim of t
};

// The labels of one term ("ab...c"): letters, and kEllipsis - 1 for the "..." marker.
std::vector<int> parse_term(const std::string& s) {
  std::vector<int> r;
  bool ell = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      KILN_CHECK(s.compare(i, 3, "...") == 0 && !ell, "einsum: invalid ellipsis in term \"", s, "\"");
      ell = true;
      r.push_back(kEllipsis - 1);
      i += 2;
    } else {
      KILN_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), "einsum: invalid subscript '", std::string(1, c),
                 "' (labels must be letters a-z or A-Z)");
      r.push_back(c);
    }
  }
  return r;
}

// Replaces the "..." marker by the right-aligned ellipsis labels of `n` dims out of `total`.
std::vector<int> expand_ellipsis(const std::vector<int>& term, int64_t n, int64_t total) {
  std::vector<int> r;
  for (int l : term) {
    if (l != kEllipsis - 1) {
      r.push_back(l);
      continue;
    }
    for (int64_t j = 0; j < n; ++j) r.push_back(kEllipsis + int(total - n + j));
  }
  return r;
}

int64_t find(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) - v.begin(); }
bool has(const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// Sums out the dims whose labels are not in `keep`.
void sum_unneeded(Operand& o, const std::set<int>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> rest;
  for (size_t i = 0; i < o.labels.size(); ++i) {
    if (keep.count(o.labels[i])) rest.push_back(o.labels[i]);
    else dims.push_back(int64_t(i));
  }
  if (dims.empty()) return;
  o.t = sum(o.t, dims);
  o.labels = rest;
}

SymInt label_size(const Operand& a, const Operand& b, int l) {
  const int64_t i = find(a.labels, l), j = find(b.labels, l);
  if (i == int64_t(a.labels.size())) return b.t.sym_size(j);
  if (j == int64_t(b.labels.size())) return a.t.sym_size(i);
  const SymInt x = a.t.sym_size(i), y = b.t.sym_size(j);
  return x == 1 ? y : x;
}

// One operand permuted to `order` and broadcast/flattened into the given groups of labels.
Tensor arrange(const Operand& o, const std::vector<std::vector<int>>& groups, const std::map<int, SymInt>& sizes) {
  std::vector<int64_t> perm;
  SymShape full, flat;
  for (const auto& grp : groups) {
    SymInt n = 1;
    for (int l : grp) {
      perm.push_back(find(o.labels, l));
      full.push_back(sizes.at(l));
      n = n * sizes.at(l);
    }
    flat.push_back(n);
  }
  return reshape(expand(permute(o.t, perm), full), flat);
}

Operand contract(Operand a, Operand b, const std::set<int>& needed) {
  // Labels only one side has and no one needs any more are summed first.
  std::set<int> keep_a(needed.begin(), needed.end()), keep_b = keep_a;
  keep_a.insert(b.labels.begin(), b.labels.end());
  keep_b.insert(a.labels.begin(), a.labels.end());
  sum_unneeded(a, keep_a);
  sum_unneeded(b, keep_b);
  std::vector<int> batch, left, right, con;
  for (int l : a.labels) {
    if (!has(b.labels, l)) left.push_back(l);
    else (needed.count(l) ? batch : con).push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) right.push_back(l);
  std::map<int, SymInt> sizes;
  for (int l : a.labels) sizes[l] = label_size(a, b, l);
  for (int l : b.labels) sizes[l] = label_size(a, b, l);
  for (int l : a.labels)
    if (has(b.labels, l)) {
      const SymInt x = a.t.sym_size(find(a.labels, l)), y = b.t.sym_size(find(b.labels, l));
      KILN_CHECK(x == y || x == 1 || y == 1, "einsum: subscript '", std::string(1, char(l < kEllipsis ? l : '.')),
                 "' has size ", x, " in one operand and ", y, " in another");
    }
  Tensor r = matmul(arrange(a, {batch, left, con}, sizes), arrange(b, {batch, con, right}, sizes));
  SymShape shape;
  std::vector<int> labels;
  for (const auto* grp : {&batch, &left, &right})
    for (int l : *grp) {
      shape.push_back(sizes[l]);
      labels.push_back(l);
    }
  return {reshape(r, shape), labels};
}

KILN_DECOMP(einsum) {
  std::string eq;
  for (char c : a.str(0))
    if (c != ' ') eq += c;
  const TensorList& ts = a.tensors(1);
  KILN_CHECK(!ts.empty(), "einsum: must provide at least one operand");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(terms.size() == ts.size(), "einsum: the equation has ", terms.size(), " operand terms but ", ts.size(),
             " tensors were given");
  // Ellipsis dims per operand; the output has as many as the widest.
  std::vector<int64_t> ell(ts.size(), 0);
  int64_t n_ell = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const int64_t letters = int64_t(std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l != kEllipsis - 1; }));
    const bool dots = has(terms[i], kEllipsis - 1);
    KILN_CHECK(dots ? ts[i].dim() >= letters : ts[i].dim() == letters, "einsum: the term for operand ", i, " has ",
               letters, " subscripts", dots ? " plus an ellipsis" : "", " but the operand has ", ts[i].dim(), " dims");
    ell[i] = ts[i].dim() - letters;
    n_ell = std::max(n_ell, ell[i]);
  }
  std::vector<Operand> ops;
  std::map<int, int> count, raw;  // operands having each label; raw: occurrences in the equation
  for (const auto& t : terms)
    for (int l : t) ++raw[l];
  for (size_t i = 0; i < ts.size(); ++i) {
    Operand o{ts[i], expand_ellipsis(terms[i], ell[i], n_ell)};
    // A label repeated within a term takes the diagonal.
    for (bool again = true; again;) {
      again = false;
      for (size_t p = 0; p < o.labels.size() && !again; ++p)
        for (size_t q = p + 1; q < o.labels.size() && !again; ++q)
          if (o.labels[p] == o.labels[q]) {
            KILN_CHECK(o.t.sym_size(int64_t(p)) == o.t.sym_size(int64_t(q)), "einsum: subscript '",
                       std::string(1, char(o.labels[p])), "' is repeated for operand ", i,
                       " but the sizes don't match, ", o.t.sym_size(int64_t(p)), " != ", o.t.sym_size(int64_t(q)));
            const int l = o.labels[p];
            o.t = diagonal(o.t, 0, int64_t(p), int64_t(q));
            o.labels.erase(o.labels.begin() + int64_t(q));
            o.labels.erase(o.labels.begin() + int64_t(p));
            o.labels.push_back(l);
            again = true;
          }
    }
    for (int l : std::set<int>(o.labels.begin(), o.labels.end())) ++count[l];
    ops.push_back(std::move(o));
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    for (int l : parse_term(eq.substr(arrow + 2))) {
      if (l == kEllipsis - 1) {
        for (int64_t j = 0; j < n_ell; ++j) out.push_back(kEllipsis + int(j));
        continue;
      }
      KILN_CHECK(count.count(l), "einsum: output subscript '", std::string(1, char(l)),
                 "' does not appear in the equation for any input operand");
      KILN_CHECK(!has(out, l), "einsum: output subscript '", std::string(1, char(l)), "' appears more than once");
      out.push_back(l);
    }
  } else {  // implicit: ellipsis dims, then the labels seen once, in alphabetical order
    for (int64_t j = 0; j < n_ell; ++j) out.push_back(kEllipsis + int(j));
    for (const auto& [l, c] : raw)
      if (l < kEllipsis - 1 && c == 1) out.push_back(l);
    std::stable_sort(out.begin() + n_ell, out.end());
  }
  const std::set<int> out_set(out.begin(), out.end());
  Operand r = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    std::set<int> needed = out_set;
    for (size_t j = i + 1; j < ops.size(); ++j) needed.insert(ops[j].labels.begin(), ops[j].labels.end());
    r = contract(r, ops[i], needed);
  }
  sum_unneeded(r, out_set);
  std::vector<int64_t> perm;
  for (int l : out) {
    const int64_t i = find(r.labels, l);
    if (i < int64_t(r.labels.size())) perm.push_back(i);
  }
  Tensor res = permute(r.t, perm);
  // Ellipsis dims absent from every operand after broadcasting (size-1 everywhere) are kept.
  for (size_t k = 0; k < out.size(); ++k)
    if (!has(r.labels, out[k])) res = unsqueeze(res, int64_t(k));
  return {res};
}

}  // namespace
}  // namespace kiln::decomp
