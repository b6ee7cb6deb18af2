// The cases of the eager kernels generated through the tile layer (src/eager/tile/), shared by the
// CPU-backend test (tiled_test.cc) and the GPU test (cuda_eager_gpu_test.cc): every pointwise
// prim, each layout class (dense, strided, broadcast, number), the promotions, copy_ into strided
// and overlapping views, cat / constant_pad / flip, full and iota, the reductions in both orientations. Each case is an op's
// boxed arguments on the CPU; its reference is the CPU's kernel (ops::call_backend).
#pragma once
#include <kiln/kiln.h>

#include <cmath>

#include "eager/layout_copies.h"
#include "eager/tile/tiled.h"
#include "ops/dispatch.h"
#include "support/test_util.h"
#include "tile/prims.h"

namespace kiln::test {

struct TiledCase {
  std::string name;
  ops::Args args;
  double tol = 0;            // relative and absolute
  bool overlapping = false;  // copy_: the source is the destination's transpose (a view of it)
};

inline Tensor rand_t(const Shape& s, DType d, double lo = -2, double hi = 2, const std::string& layout = "contiguous") {
  return random_tensor(s, d, nullptr, layout, lo, hi);
}

// The arguments with their tensors on `device`, but 0-d CPU tensors and wrapped numbers (which
// join any device) and the destination of copy_, which is cloned there (each run writes its own;
// an overlapping case's source is made from it).
inline ops::Args on(const TiledCase& c, Device device) {
  ops::Args a = c.args;
  for (size_t i = 0; i < a.v.size(); ++i)
    if (auto* t = std::get_if<Tensor>(&a.v[i]); t && t->defined()) {
      if (a.op == ops::OpId::copy_ && i == 0) *t = t->to(device).clone();
      else if (t->dim() > 0 || (!t->is_wrapped_number() && i == 0)) *t = t->to(device);
    }
  for (ops::Arg& x : a.v)
    if (auto* ts = std::get_if<TensorList>(&x))
      for (Tensor& t : *ts)
        if (t.defined()) t = t.to(device);
  if (c.overlapping) a.v[1] = std::get<Tensor>(a.v[0]).t();
  for (ops::Arg& x : a.v)
    if (auto* d = std::get_if<Device>(&x)) *d = device;
  return a;
}

// The tiled kernel of a case's op.
inline std::vector<Tensor> run_tiled(const ops::Args& a, const eager::tiled::Runner& run) {
  const std::vector<TensorSpec> specs = ops::op_info(a.op).meta(a);
  switch (ops::op_info(a.op).family) {
    case ops::OpFamily::REDUCTION: return eager::tiled::reduction(a, specs, run);
    case ops::OpFamily::CREATION: return eager::tiled::creation(a, specs, run);
    case ops::OpFamily::MUTATION: return eager::tiled::copy(a, specs, run);
    case ops::OpFamily::INDEXING: return eager::tiled::indexing(a, specs, run);
    case ops::OpFamily::NN: return eager::tiled::rows(a, specs, run).value();
    case ops::OpFamily::SCAN: return eager::tiled::scan(a, specs, run);
    case ops::OpFamily::LAYOUT: {
      const eager::CopyInto copy = [&](const Tensor& dst, const Tensor& src) { eager::tiled::copy_into(dst, src, run); };
      if (a.op == ops::OpId::cat) return eager::cat_by_copies(a, specs, copy);
      if (a.op == ops::OpId::flip) return eager::flip_by_copies(a, specs, copy);
      return eager::constant_pad_by_copies(a, specs, copy);
    }
    default: return eager::tiled::pointwise(a, specs, run);
  }
}

// Every pointwise prim on [37, 45] (not a multiple of the block), in f32 where the prim takes it,
// else i32, else bool; divisors of integer division kept off zero.
inline std::vector<TiledCase> prim_cases() {
  using ops::OpId;
  std::vector<TiledCase> cases;
  for (int i = 0; i < ops::kNumOps; ++i) {
    const OpId op = OpId(i);
    const int arity = tile::prim_arity(op);
    if (arity == 0 || op == OpId::where) continue;
    DType d = kFloat32;
    if (!tile::prim_supports(op, d)) d = kInt32;
    if (!tile::prim_supports(op, d)) d = kBool;
    if (!tile::prim_supports(op, d)) continue;
    std::vector<ops::Arg> v{rand_t({37, 45}, d)};
    if (arity == 2) {
      Tensor y = rand_t({37, 45}, d, d == kInt32 ? 1 : -2, d == kInt32 ? 4 : 2);
      if (op == OpId::shift_left || op == OpId::shift_right_arithmetic) y = rand_t({37, 45}, d, 0, 5);
      v.push_back(y);
    }
    if (op == OpId::div) v.push_back(std::monostate{});
    cases.push_back({std::string(ops::op_info(op).name) + "." + name(d), ops::Args{op, std::move(v)}, 1e-6});
  }
  return cases;
}

inline std::vector<TiledCase> layout_cases() {
  using ops::OpId;
  auto number = [](auto v) { return ops::scalar_to_tensor(Scalar(v)); };
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v, double tol = 0) {
    return TiledCase{std::move(n), ops::Args{op, std::move(v)}, tol};
  };
  const ops::Arg none = std::monostate{};
  Tensor x = rand_t({37, 45}, kFloat32);
  std::vector<TiledCase> cs{
      c("add.broadcast_rows_cols", OpId::add, {rand_t({37, 1}, kFloat32), rand_t({45}, kFloat32)}),
      c("mul.transposed", OpId::mul, {rand_t({37, 45}, kFloat32, -2, 2, "transposed"), x}),
      c("sub.strided", OpId::sub, {rand_t({37, 45}, kFloat32, -2, 2, "strided"), x}),
      c("add.3d_slice", OpId::add, {rand_t({5, 6, 7}, kFloat32).slice(1, 1, 5), rand_t({5, 1, 7}, kFloat32)}),
      c("mul.zero_dim_cpu_tensor", OpId::mul, {x, tensor<float>({2.5f}).reshape({})}),
      c("mul.wrapped_number", OpId::mul, {x, number(0.3)}),
      c("add.wrapped_int", OpId::add, {rand_t({100}, kInt64), number(int64_t(7))}),
      c("add.i32_f32", OpId::add, {rand_t({37, 45}, kInt32), x}),
      c("add.bf16", OpId::add, {rand_t({37, 45}, kBFloat16), rand_t({37, 45}, kBFloat16)}),
      c("mul.f16_number", OpId::mul, {rand_t({37, 45}, kFloat16), number(1.7)}),
      c("exp.f64", OpId::exp, {rand_t({37, 45}, kFloat64)}, 1e-12),
      c("exp.i32", OpId::exp, {rand_t({37, 45}, kInt32)}, 1e-6),
      c("div_floor.i64", OpId::div, {rand_t({37, 45}, kInt64, -20, 20), rand_t({37, 45}, kInt64, 1, 5), std::string("floor")}),
      c("div_trunc.f32", OpId::div, {x, rand_t({37, 45}, kFloat32), std::string("trunc")}),
      c("div.i32", OpId::div, {rand_t({37, 45}, kInt32), rand_t({37, 45}, kInt32, 1, 5), none}, 1e-6),
      c("lt.i32_f32", OpId::lt, {rand_t({37, 45}, kInt32), x}),
      c("eq.i64_number", OpId::eq, {rand_t({37, 45}, kInt64), number(int64_t(1))}),
      c("logical_and.bool", OpId::logical_and, {rand_t({37, 45}, kBool), rand_t({45}, kBool)}),
      c("where.broadcast", OpId::where, {rand_t({37, 45}, kBool), x, rand_t({45}, kFloat32)}),
      c("where.number", OpId::where, {rand_t({37, 45}, kBool), rand_t({37, 45}, kBFloat16), number(2.0)}),
  };
  for (auto [from, to] : {std::pair{kFloat32, kInt32}, {kBFloat16, kFloat32}, {kFloat32, kBool}, {kInt64, kFloat16}, {kFloat32, kBFloat16}})
    cs.push_back(c(std::string("convert.") + name(from) + "_" + name(to), OpId::convert_element_type,
                   {rand_t({37, 45}, from, -300, 300), to}));
  return cs;
}

inline std::vector<TiledCase> copy_cases() {
  auto c = [](std::string n, Tensor dst, Tensor src, bool overlapping = false) {
    return TiledCase{std::move(n), ops::Args{ops::OpId::copy_, {dst, src}}, 0, overlapping};
  };
  const Tensor base = rand_t({16, 24}, kFloat32), square = rand_t({20, 20}, kFloat32);
  return {
      c("copy.transposed_src", base, rand_t({24, 16}, kFloat64).t()),
      c("copy.strided_dst_cast", base.t(), rand_t({24, 16}, kFloat64)),
      c("copy.broadcast_src", base, rand_t({24}, kInt32, -100, 100)),
      c("copy.overlapping", square, square, true),
  };
}

// cat, constant_pad and flip: copies between strided views (negative strides for flip).
inline std::vector<TiledCase> layout_prim_cases() {
  using ops::OpId;
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v) { return TiledCase{std::move(n), ops::Args{op, std::move(v)}}; };
  const Tensor x = rand_t({6, 7, 5}, kFloat32);
  return {
      c("cat.dim1", OpId::cat, {TensorList{x, rand_t({6, 3, 5}, kFloat32), rand_t({6, 1, 5}, kFloat32)}, int64_t(1)}),
      c("cat.last_strided_empty", OpId::cat,
        {TensorList{rand_t({4, 9}, kBFloat16, -2, 2, "transposed"), rand_t({0}, kBFloat16), rand_t({4, 2}, kBFloat16)}, int64_t(-1)}),
      c("constant_pad.grow", OpId::constant_pad, {x, SymShape{1, 2, 0, 3}, Scalar(-1.5)}),
      c("constant_pad.crop_and_grow", OpId::constant_pad, {rand_t({5, 8}, kInt64, -9, 9), SymShape{-2, 3, 1, -1}, Scalar(int64_t(4))}),
      c("flip.two_dims", OpId::flip, {x, std::vector<int64_t>{0, 2}}),
      c("flip.transposed", OpId::flip, {rand_t({9, 11}, kInt32, -50, 50, "transposed"), std::vector<int64_t>{-1}}),
  };
}

// gather, index_select, scatter, scatter_add, index_put: strided operands, duplicates where the
// op accumulates (atomics: float sums within rounding), negative indices where index_put allows them.
inline std::vector<TiledCase> indexing_cases() {
  using ops::OpId;
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v, double tol = 0) {
    return TiledCase{std::move(n), ops::Args{op, std::move(v)}, tol};
  };
  const Tensor x = rand_t({6, 40}, kFloat32);
  // A permutation of 0..39 per row, for scatter without duplicates.
  const Tensor perm = argsort(rand_t({6, 40}, kFloat32), 1).slice(1, 0, 25);
  return {
      c("gather.dim1", OpId::gather, {x, int64_t(1), rand_t({6, 17}, kInt64, 0, 39.49)}),
      c("gather.dim0_strided", OpId::gather, {rand_t({40, 6}, kBFloat16, -2, 2, "transposed"), int64_t(0), rand_t({9, 6}, kInt64, 0, 39.49)}),
      c("index_select.dim0_dups", OpId::index_select, {rand_t({30, 7}, kInt32, -99, 99), int64_t(0), rand_t({50}, kInt64, 0, 29.49)}),
      c("index_select.dim1_strided", OpId::index_select, {rand_t({5, 30}, kFloat64, -2, 2, "transposed"), int64_t(1), rand_t({8}, kInt64, 0, 29.49)}),
      c("scatter.dim1", OpId::scatter, {x, int64_t(1), perm, rand_t({6, 25}, kFloat32)}),
      c("scatter_add.dups_f32", OpId::scatter_add, {x, int64_t(1), rand_t({6, 300}, kInt64, 0, 39.49), rand_t({6, 300}, kFloat32)}, 1e-5),
      c("scatter_add.dups_i64_dim0", OpId::scatter_add, {rand_t({10, 4}, kInt64, -9, 9), int64_t(0), rand_t({70, 4}, kInt64, 0, 9.49), rand_t({70, 4}, kInt64, -9, 9)}),
      c("scatter_add.bool", OpId::scatter_add, {rand_t({8}, kBool), int64_t(0), rand_t({20}, kInt64, 0, 7.49), rand_t({20}, kBool)}),
      c("index_put.rows", OpId::index_put, {rand_t({40, 6}, kFloat32), std::vector<Tensor>{perm.select(0, 0)}, rand_t({25, 6}, kFloat32), false}),
      c("index_put.accumulate_negative", OpId::index_put, {x, std::vector<Tensor>{rand_t({90}, kInt64, -6, 5.49)}, rand_t({40}, kFloat32), true}, 1e-5),
      c("index_put.two_dims", OpId::index_put,
        {rand_t({5, 6, 7}, kFloat32), std::vector<Tensor>{Tensor{}, rand_t({4}, kInt64, 0, 5.49), rand_t({3, 1}, kInt64, -7, 6.49)},
         rand_t({1}, kFloat32), true}, 1e-5),
  };
}

// softmax, log_softmax and layer_norm as one program per row: lengths off the block, 16-bit
// inputs, softmax's dtype=, layer_norm over two dims, with and without its weight and bias.
inline std::vector<TiledCase> row_cases() {
  using ops::OpId;
  const ops::Arg none = std::monostate{};
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v, double tol) { return TiledCase{std::move(n), ops::Args{op, std::move(v)}, tol}; };
  return {
      c("softmax.f32", OpId::softmax, {rand_t({37, 45}, kFloat32, -8, 8), int64_t(-1), none}, 1e-6),
      c("softmax.bf16_to_f32", OpId::softmax, {rand_t({6, 700}, kBFloat16), int64_t(1), kFloat32}, 1e-6),
      c("softmax.bf16", OpId::softmax, {rand_t({3, 5, 129}, kBFloat16), int64_t(2), none}, 1e-2),
      c("log_softmax.f64", OpId::log_softmax, {rand_t({5, 3000}, kFloat64), int64_t(-1), none}, 1e-12),
      c("layer_norm.f32_affine", OpId::layer_norm, {rand_t({37, 45}, kFloat32), SymShape{45}, rand_t({45}, kFloat32), rand_t({45}, kFloat32), 1e-5}, 1e-5),
      c("layer_norm.two_dims_plain", OpId::layer_norm, {rand_t({4, 5, 6}, kFloat32, -2, 2, "transposed"), SymShape{5, 6}, none, none, 1e-3}, 1e-5),
      c("layer_norm.bf16_weight", OpId::layer_norm, {rand_t({9, 300}, kBFloat16), SymShape{300}, rand_t({300}, kBFloat16), none, 1e-5}, 2e-2),
  };
}

// cumsum and cumprod: lines longer than a block, along an outer dim, integer promotion, dtype=.
inline std::vector<TiledCase> scan_cases() {
  using ops::OpId;
  const ops::Arg none = std::monostate{};
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v, double tol) { return TiledCase{std::move(n), ops::Args{op, std::move(v)}, tol}; };
  return {
      c("cumsum.rows_long", OpId::cumsum, {rand_t({5, 700}, kFloat32), int64_t(1), none}, 1e-5),
      c("cumsum.outer_dim", OpId::cumsum, {rand_t({30, 4, 3}, kFloat32, -2, 2, "transposed"), int64_t(0), none}, 1e-5),
      c("cumsum.i32_to_i64", OpId::cumsum, {rand_t({3, 300}, kInt32, -100, 100), int64_t(-1), none}, 0),
      c("cumsum.bf16_dtype_f32", OpId::cumsum, {rand_t({4, 50}, kBFloat16), int64_t(1), kFloat32}, 1e-5),
      c("cumprod.f64", OpId::cumprod, {rand_t({6, 300}, kFloat64, 0.9, 1.1), int64_t(1), none}, 1e-12),
      c("cumprod.i64", OpId::cumprod, {rand_t({7, 20}, kInt64, -3, 3), int64_t(0), none}, 0),
  };
}

inline std::vector<TiledCase> creation_cases() {
  using ops::OpId;
  const ops::Arg cpu = Device(kCPU);
  return {
      {"full.f32", ops::Args{OpId::full, {SymShape{37, 45}, Scalar(1.25), kFloat32, cpu}}},
      {"full.i64", ops::Args{OpId::full, {SymShape{3000}, Scalar(int64_t(-7)), kInt64, cpu}}},
      {"full.bool", ops::Args{OpId::full, {SymShape{5, 5}, Scalar(true), kBool, cpu}}},
      {"full.bf16", ops::Args{OpId::full, {SymShape{77}, Scalar(0.1), kBFloat16, cpu}}},
      {"iota.i64", ops::Args{OpId::iota, {SymInt(2500), Scalar(int64_t(3)), Scalar(int64_t(-2)), kInt64, cpu}}},
      {"iota.f32", ops::Args{OpId::iota, {SymInt(1500), Scalar(0.5), Scalar(0.25), kFloat32, cpu}}},
  };
}

inline std::vector<TiledCase> reduction_cases() {
  using ops::OpId;
  using Dims = std::vector<int64_t>;
  const ops::Arg none = std::monostate{};
  auto c = [](std::string n, OpId op, std::vector<ops::Arg> v, double tol = 0) {
    return TiledCase{std::move(n), ops::Args{op, std::move(v)}, tol};
  };
  Tensor x = rand_t({37, 450}, kFloat32);
  Tensor nan = x.clone();
  copy_(nan.select(0, 3).select(0, 100), tensor<float>({NAN}).reshape({}));
  copy_(nan.select(0, 5).select(0, 7), tensor<float>({NAN}).reshape({}));
  return {
      c("sum.rows", OpId::sum, {x, Dims{1}, false, none}, 1e-5),
      c("sum.cols", OpId::sum, {x, Dims{0}, true, none}, 1e-5),
      c("sum.all", OpId::sum, {x, none, false, none}, 1e-5),
      c("sum.outer_dims", OpId::sum, {rand_t({6, 7, 8}, kFloat32), Dims{0, 2}, false, none}, 1e-5),
      c("sum.transposed", OpId::sum, {rand_t({37, 45}, kFloat32, -2, 2, "transposed"), Dims{1}, false, none}, 1e-5),
      c("sum.i32_to_i64", OpId::sum, {rand_t({37, 45}, kInt32, -100, 100), Dims{1}, false, none}),
      c("sum.bf16", OpId::sum, {rand_t({37, 45}, kBFloat16), Dims{0}, false, none}, 1e-2),
      c("sum.bool", OpId::sum, {rand_t({37, 45}, kBool), none, false, none}),
      c("sum.empty_dim", OpId::sum, {rand_t({0, 5}, kFloat32), Dims{0}, false, none}),
      c("sum.dtype_f64", OpId::sum, {x, Dims{1}, false, kFloat64}, 1e-12),
      c("prod.rows", OpId::prod, {rand_t({37, 20}, kFloat32, 0.5, 1.5), Dims{1}, false, none}, 1e-5),
      c("amax.rows_nan", OpId::amax, {nan, Dims{1}, false}),
      c("amin.cols_nan", OpId::amin, {nan, Dims{0}, false}),
      c("amax.i64_all", OpId::amax, {rand_t({1000}, kInt64, -1e6, 1e6), Dims{}, false}),
      c("amin.bool", OpId::amin, {rand_t({37, 45}, kBool), Dims{1}, true}),
      c("amax.f16_0d", OpId::amax, {tensor<float>({3.5f}).reshape({}).to(kFloat16), Dims{}, false}),
      // argmax / argmin: ties (small integers: the first index wins), NaN (the first NaN wins),
      // rows longer than a block, a kept contiguous dim, every dim at once, -inf everywhere.
      c("argmax.rows_ties", OpId::argmax, {rand_t({37, 2000}, kInt32, -3, 3), int64_t(1), false}),
      c("argmin.cols_ties", OpId::argmin, {rand_t({40, 37}, kInt64, -3, 3), int64_t(0), true}),
      c("argmax.nan", OpId::argmax, {nan, int64_t(-1), false}),
      c("argmin.nan_cols", OpId::argmin, {nan, int64_t(0), false}),
      c("argmax.all_bf16", OpId::argmax, {rand_t({30, 50}, kBFloat16, -2, 2, "transposed"), none, false}),
      c("argmin.all_minus_inf", OpId::argmin, {full({3, 5}, -INFINITY, kFloat32), none, false}),
      c("argmax.bool", OpId::argmax, {rand_t({9, 33}, kBool), int64_t(1), false}),
  };
}

inline std::vector<TiledCase> tiled_cases() {
  std::vector<TiledCase> all;
  for (auto* group : {prim_cases, layout_cases, copy_cases, layout_prim_cases, indexing_cases, row_cases, scan_cases, creation_cases, reduction_cases})
    for (TiledCase& c : group()) all.push_back(std::move(c));
  return all;
}

// got == want elementwise within tol (relative and absolute), NaN matching NaN.
inline void expect_same(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> w = want.cpu().to(kFloat64).contiguous().to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i) {
    const bool same = (std::isnan(g[i]) && std::isnan(w[i])) || g[i] == w[i] || std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]));
    if (!same) ++bad, ADD_FAILURE() << what << " [" << i << "]: got " << g[i] << ", reference " << w[i];
  }
}

}  // namespace kiln::test
