// Linear algebra composites (mm, bmm, addmm, baddbmm, linear, dot, vdot, outer, einsum) against
// float64 loops.
#include <map>

#include "support/test_util.h"

namespace kiln::test {
namespace {

// [m, k] x [k, n] on logical values.
std::vector<double> ref_mm(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<double> r(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) r[size_t(i * n + j)] += a[size_t(i * k + p)] * b[size_t(p * n + j)];
  return r;
}

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : tolerance(dt) * 8; }

TEST(LinalgOps, MmBmm) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* layout : {"contiguous", "transposed", "strided"}) {
      std::vector<double> av, bv;
      Tensor a = random_tensor({3, 4}, dt, &av, layout), b = random_tensor({4, 5}, dt, &bv, layout);
      expect_close(mm(a, b), ref_mm(av, bv, 3, 4, 5), tol(dt), tol(dt), "mm");
      Tensor ba = random_tensor({2, 3, 4}, dt, &av, layout), bb = random_tensor({2, 4, 5}, dt, &bv, layout);
      std::vector<double> ref;
      for (int64_t i = 0; i < 2; ++i) {
        std::vector<double> x(av.begin() + i * 12, av.begin() + (i + 1) * 12), y(bv.begin() + i * 20, bv.begin() + (i + 1) * 20);
        std::vector<double> r = ref_mm(x, y, 3, 4, 5);
        ref.insert(ref.end(), r.begin(), r.end());
      }
      Tensor r = bmm(ba, bb);
      EXPECT_EQ(r.sizes(), (Shape{2, 3, 5}));
      expect_close(r, ref, tol(dt), tol(dt), "bmm");
    }
  EXPECT_EQ(mm(zeros({0, 3}), zeros({3, 2})).sizes(), (Shape{0, 2}));
  expect_close(mm(zeros({2, 0}), zeros({0, 2})), {0, 0, 0, 0}, 0, 0, "empty k");
  EXPECT_THROW(mm(zeros({2, 3, 4}), zeros({4, 5})), Error);
  EXPECT_THROW(mm(zeros({3}), zeros({3, 5})), Error);
  EXPECT_THROW(mm(zeros({2, 3}), zeros({4, 5})), Error);
  EXPECT_THROW(mm(zeros({2, 3}), zeros({3, 5}, kFloat64)), Error);
  EXPECT_THROW(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})), Error);  // no batch broadcasting
  EXPECT_THROW(bmm(zeros({1, 3, 4}), zeros({2, 4, 5})), Error);
  EXPECT_THROW(bmm(zeros({2, 3, 4}), zeros({2, 3, 5})), Error);
  EXPECT_THROW(bmm(zeros({3, 4}), zeros({4, 5})), Error);
}

TEST(LinalgOps, AddmmBaddbmm) {
  std::vector<double> sv, av, bv;
  Tensor self = random_tensor({5}, kFloat64, &sv), a = random_tensor({3, 4}, kFloat64, &av, "transposed");
  Tensor b = random_tensor({4, 5}, kFloat64, &bv);
  std::vector<double> p = ref_mm(av, bv, 3, 4, 5), ref(15);
  for (size_t i = 0; i < 15; ++i) ref[i] = 0.5 * sv[i % 5] + 2.0 * p[i];
  expect_close(addmm(self, a, b, 0.5, 2.0), ref, 1e-12, 1e-12, "addmm");
  // beta = 0 ignores self, nan included.
  Tensor nan_self = full({3, 5}, std::nan(""), kFloat64);
  expect_close(addmm(nan_self, a, b, 0, 1), p, 1e-12, 1e-12, "addmm beta=0");
  Tensor bs = random_tensor({2, 1, 5}, kFloat64, &sv), b1 = random_tensor({2, 3, 4}, kFloat64, &av);
  Tensor b2 = random_tensor({2, 4, 5}, kFloat64, &bv);
  ref.clear();
  for (int64_t i = 0; i < 2; ++i) {
    std::vector<double> x(av.begin() + i * 12, av.begin() + (i + 1) * 12), y(bv.begin() + i * 20, bv.begin() + (i + 1) * 20);
    std::vector<double> r = ref_mm(x, y, 3, 4, 5);
    for (size_t j = 0; j < 15; ++j) ref.push_back(1.0 * sv[size_t(i * 5) + j % 5] - 1.5 * r[j]);
  }
  expect_close(baddbmm(bs, b1, b2, 1, -1.5), ref, 1e-12, 1e-12, "baddbmm");
  EXPECT_THROW(addmm(zeros({4}), zeros({3, 4}), zeros({4, 5})), Error);  // self does not broadcast
  EXPECT_THROW(baddbmm(zeros({2, 3, 5}), zeros({2, 3, 4}), zeros({3, 4, 5})), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{addmm(t[0], t[1].t(), t[2], 0.5, 2.0)}; },
                   {grad_input({5}), grad_input({4, 3}), grad_input({4, 5})}, "addmm");
  expect_gradcheck([](const TensorList& t) { return TensorList{baddbmm(t[0], t[1], t[2].transpose(1, 2), 2, 1)}; },
                   {grad_input({1, 5}), grad_input({2, 3, 4}), grad_input({2, 5, 4})}, "baddbmm");
}

TEST(LinalgOps, Linear) {
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    std::vector<double> xv, wv, bv;
    Tensor x = random_tensor({2, 3, 4}, dt, &xv, "strided"), w = random_tensor({5, 4}, dt, &wv);
    Tensor b = random_tensor({5}, dt, &bv);
    std::vector<double> wt(20);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 4; ++j) wt[size_t(j * 5 + i)] = wv[size_t(i * 4 + j)];
    std::vector<double> ref = ref_mm(xv, wt, 6, 4, 5);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += bv[i % 5];
    Tensor r = linear(x, w, b);
    EXPECT_EQ(r.sizes(), (Shape{2, 3, 5}));
    expect_close(r, ref, tol(dt), tol(dt), "linear");
    // A 1-D weight drops the feature dim.
    std::vector<double> ref1(6, 0.0);
    for (size_t i = 0; i < 6; ++i)
      for (size_t j = 0; j < 4; ++j) ref1[i] += xv[i * 4 + j] * wv[j];
    Tensor r1 = linear(x, squeeze(w.slice(0, 0, 1), {0}));
    EXPECT_EQ(r1.sizes(), (Shape{2, 3}));
    expect_close(r1, ref1, tol(dt), tol(dt), "linear 1-d weight");
  }
  EXPECT_THROW(linear(zeros({2, 3}), zeros({5, 4})), Error);
  EXPECT_THROW(linear(zeros({2, 4}), zeros({2, 5, 4})), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{linear(t[0].transpose(0, 1), t[1], t[2])}; },
                   {grad_input({4, 3}), grad_input({5, 4}), grad_input({5})}, "linear");
}

TEST(LinalgOps, DotVdotOuter) {
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    std::vector<double> xv, yv;
    Tensor x = random_tensor({7}, dt, &xv, "strided"), y = random_tensor({7}, dt, &yv);
    double d = 0;
    for (size_t i = 0; i < 7; ++i) d += xv[i] * yv[i];
    EXPECT_EQ(dot(x, y).dim(), 0);
    expect_close(dot(x, y), {d}, tol(dt), tol(dt), "dot");
    expect_close(vdot(x, y), {d}, tol(dt), tol(dt), "vdot");
    std::vector<double> o;
    for (size_t i = 0; i < 7; ++i)
      for (size_t j = 0; j < 7; ++j) o.push_back(xv[i] * yv[j]);
    expect_close(outer(x, y), o, tol(dt), tol(dt), "outer");
  }
  EXPECT_THROW(dot(zeros({3}), zeros({4})), Error);
  EXPECT_THROW(dot(zeros({3}), zeros({3}, kFloat64)), Error);
  EXPECT_THROW(dot(zeros({3, 1}), zeros({3})), Error);
  EXPECT_THROW(vdot(zeros({3}), zeros({2})), Error);
  EXPECT_THROW(outer(zeros({3, 1}), zeros({3})), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{outer(t[0], t[1].slice(0, 0, std::nullopt, 2))}; },
                   {grad_input({3}), grad_input({8})}, "outer");
  expect_gradcheck([](const TensorList& t) { return TensorList{dot(t[0], t[1]).reshape({1})}; },
                   {grad_input({5}), grad_input({5})}, "dot");
}

// A reference einsum over letter labels (explicit output): sums the product over every label
// assignment.
std::vector<double> ref_einsum(const std::string& in_terms, const std::string& out, const std::vector<Shape>& shapes,
                               const std::vector<std::vector<double>>& vals) {
  std::vector<std::string> terms;
  std::string cur;
  for (char c : in_terms) {
    if (c == ',') terms.push_back(cur), cur.clear();
    else cur += c;
  }
  terms.push_back(cur);
  std::map<char, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i)
    for (size_t d = 0; d < terms[i].size(); ++d) size[terms[i][d]] = shapes[i][d];
  std::vector<char> labels;
  for (auto& [c, s] : size) labels.push_back(c);
  int64_t total = 1;
  for (char c : labels) total *= size[c];
  int64_t out_n = 1;
  for (char c : out) out_n *= size[c];
  std::vector<double> r(size_t(out_n), 0.0);
  std::map<char, int64_t> idx;
  for (int64_t t = 0; t < total; ++t) {
    int64_t rem = t;
    for (char c : labels) idx[c] = rem % size[c], rem /= size[c];
    double p = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < terms[i].size(); ++d) off = off * shapes[i][d] + idx[terms[i][d]];
      p *= vals[i][size_t(off)];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + idx[c];
    r[size_t(o)] += p;
  }
  return r;
}

struct EinsumCase {
  std::string eq;            // what kiln gets
  std::string ref_in, ref_out;  // the same contraction spelled with letters only
  std::vector<Shape> shapes;
};

const std::vector<EinsumCase> kEinsum = {
    {"ij,jk->ik", "ij,jk", "ik", {{3, 4}, {4, 5}}},
    {"ij,jk", "ij,jk", "ik", {{3, 4}, {4, 5}}},
    {"ba,ac", "ba,ac", "bc", {{3, 4}, {4, 2}}},
    {"ji", "ji", "ij", {{3, 4}}},  // implicit output is alphabetical: a transpose
    {"bij,bjk->bik", "bij,bjk", "bik", {{2, 3, 4}, {2, 4, 5}}},
    {"ii->i", "ii", "i", {{4, 4}}},
    {"ii", "ii", "", {{4, 4}}},
    {"i,i->", "i,i", "", {{5}, {5}}},
    {"i,j->ij", "i,j", "ij", {{3}, {4}}},
    {"bhqd,bhkd->bhqk", "bhqd,bhkd", "bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
    {"ij,ij,ij->i", "ij,ij,ij", "i", {{3, 4}, {3, 4}, {3, 4}}},
    {"ijk->", "ijk", "", {{2, 3, 4}}},
    {"iij->ji", "iij", "ji", {{3, 3, 2}}},
    {"ab,cd->abcd", "ab,cd", "abcd", {{2, 3}, {2, 2}}},
    {"Ab,bA->A", "Ab,bA", "A", {{3, 4}, {4, 3}}},
    {"...ij,...jk->...ik", "bij,bjk", "bik", {{2, 3, 4}, {2, 4, 5}}},
    {"...ij,jk", "bij,jk", "bik", {{2, 3, 4}, {4, 5}}},
    {"i...->...", "ib", "b", {{3, 4}}},
    {"b i j , b j k -> b i k", "bij,bjk", "bik", {{2, 3, 4}, {2, 4, 5}}},
    {"ij,jk->ik", "ij,jk", "ik", {{0, 4}, {4, 5}}},
};

TEST(LinalgOps, Einsum) {
  for (DType dt : {kFloat32, kFloat64})
    for (const EinsumCase& c : kEinsum) {
      TensorList ts;
      std::vector<std::vector<double>> vals;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        std::vector<double> v;
        ts.push_back(random_tensor(c.shapes[i], dt, &v, i % 2 ? "transposed" : "contiguous"));
        vals.push_back(v);
      }
      std::string ref_in;
      for (char ch : c.ref_in)
        if (ch != ' ') ref_in += ch;
      Tensor r = einsum(c.eq, ts);
      Shape expect_shape;
      std::map<char, int64_t> size;
      std::string in = ref_in;
      size_t t = 0, d = 0;
      for (char ch : in) {
        if (ch == ',') ++t, d = 0;
        else size[ch] = c.shapes[t][d++];
      }
      for (char ch : c.ref_out) expect_shape.push_back(size[ch]);
      EXPECT_EQ(r.sizes(), expect_shape) << c.eq;
      expect_close(r, ref_einsum(ref_in, c.ref_out, c.shapes, vals), tol(dt) * 4, tol(dt) * 4, c.eq);
    }
}

TEST(LinalgOps, EinsumBroadcastAndErrors) {
  // Ellipsis dims broadcast (size 1 against 3).
  std::vector<double> av, bv;
  Tensor a = random_tensor({1, 2, 3}, kFloat64, &av), b = random_tensor({3, 3, 4}, kFloat64, &bv);
  std::vector<double> ae;
  for (int i = 0; i < 3; ++i) ae.insert(ae.end(), av.begin(), av.end());
  expect_close(einsum("...ij,...jk->...ik", {a, b}), ref_einsum("bij,bjk", "bik", {{3, 2, 3}, {3, 3, 4}}, {ae, bv}),
               1e-12, 1e-12, "broadcast ellipsis");
  EXPECT_THROW(einsum("ij,jk->ik", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("ij,jk->ik", {zeros({2, 3}), zeros({4, 5})}), Error);
  EXPECT_THROW(einsum("ij->k", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("ij->ii", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("ijk->i", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("i1->i", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("ii->i", {zeros({2, 3})}), Error);
  EXPECT_THROW(einsum("ij", {}), Error);
}

TEST(LinalgOps, EinsumGradcheck) {
  for (const char* eq : {"bij,bjk->bik", "ii->i", "i,j->ij", "ij,ij,ij->i", "...ij,jk"}) {
    std::vector<Shape> shapes;
    for (const EinsumCase& c : kEinsum)
      if (c.eq == eq) shapes = c.shapes;
    TensorList in;
    for (const Shape& s : shapes) in.push_back(grad_input(s));
    expect_gradcheck([&](const TensorList& t) { return TensorList{einsum(eq, t)}; }, in, eq);
  }
  expect_gradcheck([](const TensorList& t) { return TensorList{einsum("ij,jk->ik", {t[0].t(), t[1]})}; },
                   {grad_input({4, 3}), grad_input({4, 5})}, "transposed operand");
}

TEST(LinalgOps, MmGradcheck) {
  expect_gradcheck([](const TensorList& t) { return TensorList{mm(t[0].t(), t[1])}; },
                   {grad_input({4, 3}), grad_input({4, 5})}, "mm");
  expect_gradcheck([](const TensorList& t) { return TensorList{bmm(t[0], t[1].transpose(1, 2))}; },
                   {grad_input({2, 3, 4}), grad_input({2, 5, 4})}, "bmm");
}

}  // namespace
}  // namespace kiln::test
