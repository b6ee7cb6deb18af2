// Tile kernels compiled by the CPU backend and run, against eager kiln: the seed's vector_add,
// a masked row softmax, a tiled matmul, scans, reductions, atomics, every pointwise prim on its
// dtypes (bit for bit: both run the scalar header), 16-bit loads and stores; and the errors of
// compiling and launching.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>
#include <filesystem>

#include "ops/dispatch.h"
#include "ops/schema.h"
#include "support/test_util.h"
#include "tile/cpu/kernel.h"
#include "tile/passes/passes.h"
#include "tile/prims.h"
#include "bench/gpu_tile_kernels.h"
#include "tests/unit/tile/tile_kernels.h"

namespace kiln::tile {
namespace {

using cpu::Grid;
using ops::OpId;

// Equal values, NaN equal to NaN (the same scalar functions ran on both sides).
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", eager gives " << b[i];
      return;
    }
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])) || (std::isnan(a[i]) && std::isnan(b[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", eager gives " << b[i];
      return;
    }
}

TEST(TileCpu, VectorAddWithATail) {
  cpu::Kernel k = cpu::compile(test::vector_add(256));
  const int64_t n = 1000;  // not a multiple of 256: the last program is masked
  Tensor x = randn({n}), y = randn({n});
  Tensor out = zeros({n});  // exactly n elements: a store past them would be caught by ASan
  k(Grid(cdiv(n, 256)), x, y, out, n);
  expect_same(out, x + y, "vector_add");
  // The grid as a function of the meta-parameters.
  Tensor out2 = zeros({n});
  const cpu::Arg args[] = {x, y, out2, n};
  k.launch([&](const Meta& m) { return Grid(cdiv(n, m.find("BLOCK")->to_int())); }, args);
  expect_same(out2, x + y, "vector_add (grid from meta)");
}

// bench/gpu_tile.cc's cross entropy kernel (an online max and sum per chunk of a row) against
// the mean loss in double: rows whose max is in the first chunk, rises chunk by chunk, or sits
// in the masked last chunk (1000 columns in chunks of 256).
TEST(TileCpu, TheBenchCrossEntropyKernelMatchesTheLossInDouble) {
  const int64_t rows = 3, cols = 1000;
  std::vector<double> xs(size_t(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    xs[size_t(c)] = std::sin(0.37 * double(c)) * 2.0 + (c == 5 ? 9.0 : 0.0);
    xs[size_t(cols + c)] = 0.01 * double(c) + std::cos(0.11 * double(c));
    xs[size_t(2 * cols + c)] = std::sin(0.05 * double(c)) + (c == 990 ? 7.5 : 0.0);
  }
  const Tensor x = tensor(xs, {rows, cols}).to(kBFloat16), target = tensor(std::vector<double>{999, 3, 500}, {rows}, kInt64);
  const std::vector<double> xb = x.to_vector<double>();  // the bf16 values the kernels read
  double want = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, xb[size_t(r * cols + c)]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(xb[size_t(r * cols + c)] - mx);
    want += (std::log(sum) + mx - xb[size_t(r * cols + int64_t(target.to_vector<double>()[size_t(r)]))]) / double(rows);
  }
  Tensor loss = zeros({1});
  cpu::compile(gpu_bench::cross_entropy(cols, rows, 256, 8))(Grid(rows), x, target, loss);
  EXPECT_NEAR(loss.to_vector<double>()[0], want, 1e-5 * std::abs(want));
}

// bench/gpu_tile.cc's pointwise kernel (gelu(x * a + b) * sigmoid(x), a and b along the rows)
// against the same formula in double on the bf16 inputs, rounded to bf16 at the end.
TEST(TileCpu, TheBenchPointwiseKernelMatchesItsFormulaInDouble) {
  const int64_t rows = 3, cols = 1024;
  const Tensor x = randn({rows, cols}).to(kBFloat16), a = randn({cols}).to(kBFloat16), b = randn({cols}).to(kBFloat16);
  Tensor out = zeros({rows, cols}, kBFloat16);
  cpu::compile(gpu_bench::pointwise(cols, 256))(Grid(rows * cols / 256), x, a, b, out);
  const std::vector<double> xs = x.to_vector<double>(), as = a.to_vector<double>(), bs = b.to_vector<double>();
  const std::vector<double> got = out.to_vector<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double v = xs[size_t(r * cols + c)], h = v * as[size_t(c)] + bs[size_t(c)];
      const double want = 0.5 * h * (1 + std::erf(h / std::sqrt(2.0))) / (1 + std::exp(-v));
      ASSERT_NEAR(got[size_t(r * cols + c)], want, 8e-3 * std::max(1.0, std::abs(want))) << r << ", " << c;
    }
}

TEST(TileCpu, MaskedRowSoftmax) {
  cpu::Kernel k = cpu::compile(test::softmax(512));
  const int64_t rows = 37, cols = 300;
  Tensor x = randn({rows, cols}) * 3.0;
  Tensor out = zeros({rows, cols});
  k(Grid(rows), x, out, cols, cols);
  expect_close(out, softmax(x, 1), 1e-6, "softmax");
  // A strided input: every other column of a wider tensor (the row stride is the kernel's).
  Tensor wide = randn({rows, 2 * cols});
  Tensor strided_out = zeros({rows, 2 * cols});
  k(Grid(rows), wide, strided_out, cols, 2 * cols);
  expect_close(strided_out.slice(1, 0, cols), softmax(wide.slice(1, 0, cols), 1), 1e-6, "softmax (row stride)");
}

TEST(TileCpu, TiledMatmulWithAKLoop) {
  cpu::Kernel k = cpu::compile(test::matmul(32, 32, 16));
  const int64_t M = 70, N = 45, K = 100;  // none a multiple of its block
  Tensor a = randn({M, K}), b = randn({K, N});
  Tensor c = zeros({M, N});
  k(Grid(cdiv(M, 32), cdiv(N, 32)), a, b, c, M, N, K, K, N, N);
  expect_close(c, matmul(a, b), 1e-5, "matmul");
}

// out[r, :] = scan(x[r, :]) for one row per program, or the whole [R, C] block at once along axis 0.
Program scan_kernel(ScanKind kind, int64_t axis, int64_t rows, int64_t cols) {
  Builder b(std::string("scan_") + scan_name(kind) + std::to_string(axis));
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32);
  auto offs = b.arange(0, rows).expand_dims(1) * cols + b.arange(0, cols).expand_dims(0);
  b.store(out + offs, b.scan(kind, b.load(x + offs), axis));
  return b.finish();
}

TEST(TileCpu, ScansAlongEitherAxis) {
  const int64_t R = 6, C = 40;
  Tensor x = randn({R, C});
  std::vector<Program> ps;
  for (int64_t axis : {0, 1}) {
    ps.push_back(scan_kernel(ScanKind::Cumsum, axis, R, C));
    ps.push_back(scan_kernel(ScanKind::Cumprod, axis, R, C));
    ps.push_back(scan_kernel(ScanKind::Cummax, axis, R, C));
    ps.push_back(scan_kernel(ScanKind::Cummin, axis, R, C));
  }
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(ps));
  for (int64_t axis : {0, 1}) {
    Tensor outs[4] = {zeros({R, C}), zeros({R, C}), zeros({R, C}), zeros({R, C})};
    for (int i = 0; i < 4; ++i) ks[size_t(axis * 4 + i)](Grid(1), x, outs[i]);
    expect_close(outs[0], cumsum(x, axis), 1e-6, "cumsum");
    expect_close(outs[1], cumprod(x, axis), 1e-5, "cumprod");
    expect_same(outs[2], std::get<0>(cummax(x, axis)), "cummax");
    expect_same(outs[3], std::get<0>(cummin(x, axis)), "cummin");
  }
}

TEST(TileCpu, ReductionsAlongEitherAxis) {
  const int64_t R = 5, C = 33;
  Tensor x = randn({R, C});
  x.data<float>()[7] = NAN;  // max/min propagate NaN; argmax/argmin take it as the extreme
  std::vector<Program> ps;
  const ReduceKind kinds[] = {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min, ReduceKind::Argmax, ReduceKind::Argmin};
  for (int64_t axis : {0, 1})
    for (ReduceKind kind : kinds) {
      Builder b(std::string("reduce_") + reduce_name(kind) + std::to_string(axis));
      const bool arg = kind == ReduceKind::Argmax || kind == ReduceKind::Argmin;
      auto xp = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", arg ? kInt32 : kFloat32);
      auto offs = b.arange(0, R).expand_dims(1) * C + b.arange(0, C).expand_dims(0);
      b.store(out + b.arange(0, axis == 0 ? C : R), b.reduce(kind, b.load(xp + offs), axis));
      ps.push_back(b.finish());
    }
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(ps));
  for (int64_t axis : {0, 1}) {
    const int64_t n = axis == 0 ? C : R;
    auto run = [&](size_t i, DType d) {
      Tensor out = zeros({n}, d);
      ks[size_t(axis) * 6 + i](Grid(1), x, out);
      return out;
    };
    expect_close(run(0, kFloat32), sum(x, {axis}), 1e-6, "sum");
    expect_close(run(1, kFloat32), prod(x, axis), 1e-5, "prod");
    expect_same(run(2, kFloat32), amax(x, {axis}), "max");
    expect_same(run(3, kFloat32), amin(x, {axis}), "min");
    expect_same(run(4, kInt32), argmax(x, axis).to(kInt32), "argmax");
    expect_same(run(5, kInt32), argmin(x, axis).to(kInt32), "argmin");
  }
}

TEST(TileCpu, AtomicAddAcrossPrograms) {
  // Every program adds its block into 8 bins: out[j] = sum over i of x[i] for i % 8 == j.
  std::vector<Program> ps;
  for (DType d : {kInt32, kFloat32, kFloat64}) {
    Builder b(std::string("histogram_") + short_name(d));
    auto x = b.arg_ptr("x", d), out = b.arg_ptr("out", d), old = b.arg_ptr("old", d);
    auto n = b.arg_int("n");
    auto offs = b.program_id(0) * 64 + b.arange(0, 64);
    auto m = offs < n;
    auto prev = b.atomic_add(out + offs % 8, b.load(x + offs, m), m);
    b.store(old + offs, prev, m);
    ps.push_back(b.finish());
  }
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(ps));
  const int64_t n = 1000;
  for (size_t i = 0; i < ks.size(); ++i) {
    const DType d = std::vector<DType>{kInt32, kFloat32, kFloat64}[i];
    // Small integers: every order of additions gives the same sums.
    Tensor x = randint(-50, 50, {n}).to(d);
    Tensor out = zeros({8}, d), old = zeros({n}, d);
    ks[i](Grid(cdiv(n, 64)), x, out, old, n);
    std::vector<double> xs = x.to_vector<double>(), bins(8, 0.0);
    for (int64_t j = 0; j < n; ++j) bins[size_t(j % 8)] += xs[size_t(j)];
    expect_same(out.to(kFloat64), tensor(bins, {8}, kFloat64), std::string("atomic_add ") + name(d));
    // The old values returned are the bins' partial sums: each one a sum of some of its inputs.
    std::vector<double> olds = old.to_vector<double>();
    for (int64_t j = 0; j < n; ++j) EXPECT_LE(std::abs(olds[size_t(j)]), 50.0 * double(n)) << j;
  }
}

TEST(TileCpu, SixteenBitLoadsAndStores) {
  std::vector<Program> ps;
  for (DType d : {kFloat16, kBFloat16}) {
    Builder b(std::string("affine_") + short_name(d));
    auto x = b.arg_ptr("x", d), out = b.arg_ptr("out", d), f = b.arg_ptr("f", kFloat32), back = b.arg_ptr("back", d);
    auto offs = b.arange(0, 128);
    auto v = b.load(x + offs);
    b.store(out + offs, v * 2.5 + 1.0);          // f16 math: each op rounded, as eager
    b.store(f + offs, v.to(kFloat32) / 3.0);     // widened, computed in f32
    b.store(back + offs, b.load(f + offs));      // a store casts f32 to the pointer's dtype
    ps.push_back(b.finish());
  }
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(ps));
  int i = 0;
  for (DType d : {kFloat16, kBFloat16}) {
    Tensor x = (randn({128}) * 10.0).to(d);
    Tensor out = zeros({128}, d), f = zeros({128}), back = zeros({128}, d);
    ks[size_t(i++)](Grid(1), x, out, f, back);
    expect_same(out, x * 2.5 + 1.0, std::string("f16 math on ") + name(d));
    // (a division by a constant multiplies by its reciprocal: within 1 ulp)
    expect_close(f, x.to(kFloat32) / 3.0, 2.4e-7, std::string("widened on ") + name(d));
    expect_same(back, f.to(d), std::string("narrowing store to ") + name(d));
  }
}

TEST(TileCpu, LoopsAndBranches) {
  // out[pid] = sum_{i < n} i (a carried scalar), then doubled on even programs (an if).
  Builder b("loop_if");
  auto out = b.arg_ptr("out", kInt64);
  auto n = b.arg_int("n", kInt64);
  auto pid = b.program_id(0);
  auto total = b.for_loop(0, n, 1, {b.constant(Scalar(int64_t(0)), kInt64)}, [&](Val i, const std::vector<Val>& c) {
    return std::vector<Val>{c[0] + i};
  })[0];
  auto r = b.if_else(pid % 2 == 0, [&] { return std::vector<Val>{total * 2}; }, [&] { return std::vector<Val>{total + pid}; });
  b.store(out + pid, r[0]);
  cpu::Kernel k = cpu::compile(b.finish());
  Tensor out_t = zeros({5}, kInt64);
  k(Grid(5), out_t, int64_t(10));
  EXPECT_EQ(out_t.to_vector<int64_t>(), (std::vector<int64_t>{90, 46, 90, 48, 90}));
}

TEST(TileCpu, CarriedValuesThatReadEachOther) {
  // A swap of two carried blocks, and a block computed from a carried scalar that the same yield
  // replaces: every yielded value is computed from the values before the yield.
  Builder b("swap");
  auto out = b.arg_ptr("out", kFloat32), outi = b.arg_ptr("outi", kInt32);
  auto n = b.arg_int("n");
  auto offs = b.arange(0, 4);
  auto r = b.for_loop(0, n, 1, {b.full({4}, 1.0, kFloat32), b.full({4}, 2.0, kFloat32), b.constant(Scalar(int64_t(0))), offs},
                      [&](Val, const std::vector<Val>& c) {
                        return std::vector<Val>{c[1], c[0], c[2] + 1, offs + c[2]};
                      });
  b.store(out + offs, r[0]);
  b.store(out + 4 + offs, r[1]);
  b.store(outi + offs, r[3]);
  b.store(outi + 4, r[2]);
  cpu::Kernel k = cpu::compile(b.finish());
  Tensor o = zeros({8}), oi = zeros({5}, kInt32);
  k(Grid(1), o, oi, 3);
  EXPECT_EQ(o.to_vector<float>(), (std::vector<float>{2, 2, 2, 2, 1, 1, 1, 1}));
  EXPECT_EQ(oi.to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 4, 5, 3}));
}

TEST(TileCpu, PassesDoNotChangeResults) {
  // Constants folded at compile time (with the scalar header on the host) give what the
  // generated code computes at run time.
  auto kernel = [] {
    Builder b("folded");
    auto out = b.arg_ptr("out", kFloat32), outi = b.arg_ptr("outi", kInt8);
    auto offs = b.arange(0, 16);
    auto c = b.full({16}, Scalar(0.7), kFloat32);
    b.store(out + offs, b.exp(c) * b.sigmoid(c - 3.0) + b.atan2(c, -1.0) + offs);
    b.store(outi + offs, b.full({16}, Scalar(int64_t(100)), kInt8) + b.full({16}, Scalar(int64_t(100)), kInt8));
    return b.finish();
  };
  Program folded = kernel();
  run_passes(folded, "default");
  int pointwise = 0;
  walk(folded.body, [&](const Op& op) { pointwise += op.code == OpCode::Pointwise; });
  EXPECT_EQ(pointwise, 1) << print(folded);  // only the add of the arange is left
  cpu::Kernel with = cpu::compile(kernel()), without = cpu::compile(kernel(), "");
  Tensor a = zeros({16}), b = zeros({16}), ai = zeros({16}, kInt8), bi = zeros({16}, kInt8);
  with(Grid(1), a, ai);
  without(Grid(1), b, bi);
  expect_same(a, b, "folded vs computed");
  expect_same(ai, bi, "folded vs computed (i8 wraps)");
  EXPECT_EQ(ai.to_vector<int64_t>()[0], -56);
}

// --- every pointwise prim on every dtype eager runs it on, bit for bit

struct PrimCase {
  OpId op;
  Rounding rounding;
  std::vector<Tensor> inputs;  // x, y (and c for where)
  Tensor want;
};

TEST(TileCpu, EveryPointwisePrimMatchesEager) {
  const DType all[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  const int64_t N = 64;
  std::vector<Program> programs;
  std::vector<std::vector<PrimCase>> cases;
  std::vector<std::vector<DType>> outs;  // per kernel: the out dtypes, one pointer each
  for (DType d : all) {
    // Inputs with the edge cases: zeros of both signs, infinities, NaN, halves; integers near 0
    // (divisors nonzero: eager raises on integer division by zero).
    std::vector<double> xv = kiln::test::random_values(N, -4, 4), yv = kiln::test::random_values(N, -4, 4);
    const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0.5, -0.5, 2.5, 1e30, -1.0};
    for (int i = 0; i < 10; ++i) xv[size_t(i)] = special[i], yv[size_t(i + 10)] = special[i];
    if (!is_floating(d)) {
      for (double& v : xv) v = std::isfinite(v) ? std::round(v) : 3;
      for (double& v : yv) v = std::isfinite(v) ? std::round(v) : 2;
      for (double& v : yv) v = v == 0 ? 1 : v;
      if (d == kUInt8) for (double& v : xv) v = std::abs(v) * 30;
      if (d == kUInt8) for (double& v : yv) v = std::abs(v);
    }
    Tensor x = tensor(xv, {N}, kFloat64).to(d), y = tensor(yv, {N}, kFloat64).to(d);
    Tensor c = randn({N}) > 0.0;
    std::vector<PrimCase> here;
    for (int i = 0; i < ops::kNumOps; ++i) {
      const OpId op = OpId(i);
      if (!is_prim(op)) continue;
      const std::vector<Rounding> modes = op == OpId::div ? std::vector<Rounding>{Rounding::None, Rounding::Trunc, Rounding::Floor}
                                                          : std::vector<Rounding>{Rounding::None};
      for (Rounding r : modes) {
        std::vector<Tensor> in = prim_arity(op) == 1 ? std::vector<Tensor>{x}
                                 : prim_arity(op) == 2 ? std::vector<Tensor>{x, y}
                                                       : std::vector<Tensor>{c, x, y};
        std::vector<ops::Arg> args(in.begin(), in.end());
        if (op == OpId::div) args.push_back(r == Rounding::None ? ops::Arg() : ops::Arg(std::string(r == Rounding::Trunc ? "trunc" : "floor")));
        Tensor want;
        try {
          want = ops::call(op, args).at(0);
        } catch (const Error&) {
          continue;  // eager does not run it on this dtype (prims_test checks tile agrees)
        }
        here.push_back({op, r, in, want});
      }
    }
    // One kernel per input dtype: every prim's result stored in its slot of an output per dtype.
    Builder b(std::string("prims_") + short_name(d));
    auto xp = b.arg_ptr("x", d), yp = b.arg_ptr("y", d), cp = b.arg_ptr("c", kBool);
    std::vector<DType> out_dtypes;
    for (const PrimCase& pc : here)
      if (std::find(out_dtypes.begin(), out_dtypes.end(), pc.want.dtype()) == out_dtypes.end()) out_dtypes.push_back(pc.want.dtype());
    std::vector<Val> out_ptrs;
    for (DType od : out_dtypes) out_ptrs.push_back(b.arg_ptr(std::string("out_") + short_name(od), od));
    auto offs = b.arange(0, N);
    auto vx = b.load(xp + offs), vy = b.load(yp + offs), vc = b.load(cp + offs);
    std::map<DType, int64_t> slot;
    for (const PrimCase& pc : here) {
      std::vector<Operand> args = prim_arity(pc.op) == 1 ? std::vector<Operand>{vx}
                                  : prim_arity(pc.op) == 2 ? std::vector<Operand>{vx, vy}
                                                           : std::vector<Operand>{vc, vx, vy};
      Val r = b.call(pc.op, args, pc.rounding);
      ASSERT_EQ(r.dtype(), pc.want.dtype()) << ops::op_info(pc.op).name << " on " << name(d) << ": the builder's dtype differs from eager's";
      const size_t k = size_t(std::find(out_dtypes.begin(), out_dtypes.end(), r.dtype()) - out_dtypes.begin());
      b.store(out_ptrs[k] + slot[r.dtype()]++ * N + offs, r);
    }
    programs.push_back(b.finish());
    cases.push_back(std::move(here));
    outs.push_back(out_dtypes);
  }
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(programs));
  int checked = 0;
  for (size_t kd = 0; kd < ks.size(); ++kd) {
    const std::vector<PrimCase>& here = cases[kd];
    std::map<DType, int64_t> count;
    for (const PrimCase& pc : here) ++count[pc.want.dtype()];
    std::vector<Tensor> buffers;
    for (DType od : outs[kd]) buffers.push_back(full({count[od], N}, 0, od));
    // x, y, c (from the cases of this dtype), then the outputs.
    Tensor x, y, c;
    for (const PrimCase& pc : here) {
      if (pc.inputs.size() == 3) c = pc.inputs[0], x = pc.inputs[1], y = pc.inputs[2];
      if (pc.inputs.size() == 2) x = pc.inputs[0], y = pc.inputs[1];
    }
    std::vector<cpu::Arg> args = {x, y, c};
    for (const Tensor& t : buffers) args.push_back(t);
    ks[kd].launch(Grid(1), std::span<const cpu::Arg>(args));
    std::map<DType, int64_t> slot;
    for (const PrimCase& pc : here) {
      const DType od = pc.want.dtype();
      const size_t k = size_t(std::find(outs[kd].begin(), outs[kd].end(), od) - outs[kd].begin());
      const int64_t s = slot[od]++;
      std::string what = std::string(ops::op_info(pc.op).name) + (pc.rounding == Rounding::Trunc ? "(trunc)" : pc.rounding == Rounding::Floor ? "(floor)" : "") +
                         " on " + name(x.dtype());
      // Generated CPU code computes these in float with inline_math.h's polynomials (within 3
      // ulp of eager's libm, then rounded to the output's dtype); the rest are eager's bits.
      const bool inline_math = (pc.op == OpId::exp || pc.op == OpId::log || pc.op == OpId::erf || pc.op == OpId::tanh ||
                                pc.op == OpId::sigmoid) && od != kFloat64;
      if (inline_math) expect_close(buffers[k].select(0, s).contiguous(), pc.want, od == kFloat16 ? 1e-3 : od == kBFloat16 ? 8e-3 : 5e-7, what);
      else expect_same(buffers[k].select(0, s).contiguous(), pc.want, what);
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

// --- errors

TEST(TileCpu, LaunchChecksItsArguments) {
  cpu::Kernel k = cpu::compile(test::vector_add(64));
  Tensor x = randn({10}), y = randn({10}), out = zeros({10});
  auto msg = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(msg([&] { k(Grid(1), x, y, out); }).find("takes 4 argument(s), got 3"), std::string::npos);
  EXPECT_NE(msg([&] { k(Grid(1), x, y.to(kFloat64), out, 10); }).find("argument 1 (y) is a float64 tensor, the kernel takes ptr<f32>"), std::string::npos);
  EXPECT_NE(msg([&] { k(Grid(1), x, y, 3, 10); }).find("argument 2 (out) must be a tensor"), std::string::npos);
  EXPECT_NE(msg([&] { k(Grid(1), x, y, out, int64_t(1) << 40); }).find("does not fit in i32"), std::string::npos);
  EXPECT_NE(msg([&] { k(Grid(-1), x, y, out, 10); }).find("grid dim 0 is -1"), std::string::npos);
  EXPECT_NE(msg([&] { k(Grid(1), x, y, Tensor(), 10); }).find("undefined tensor"), std::string::npos);
  k(Grid(0), x, y, out, 10);  // an empty grid runs nothing
  expect_same(out, zeros({10}), "empty grid");
}

TEST(TileCpu, ACompileErrorNamesTheSourceAndTheCompilersMessage) {
  try {
    cpu::compile_source("this is not C++;\n", "broken");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.op(), "tile.compile");
    EXPECT_NE(what.find("broken-"), std::string::npos) << what;
    EXPECT_NE(what.find(".cc did not compile"), std::string::npos) << what;
    EXPECT_NE(what.find("error"), std::string::npos) << what;  // the compiler's own message
    const size_t at = what.find(cpu::work_dir());
    ASSERT_NE(at, std::string::npos) << what;
    const std::string path = what.substr(at, what.find(".cc", at) + 3 - at);
    EXPECT_TRUE(std::filesystem::exists(path)) << path;  // kept for a look
    std::filesystem::remove(path);
  }
}

TEST(TileCpu, AGroupIsOneTranslationUnit) {
  std::vector<Program> ps;
  ps.push_back(test::vector_add(128));
  ps.push_back(test::softmax(128));
  std::vector<cpu::Kernel> ks = cpu::compile_group(std::move(ps));
  EXPECT_EQ(&ks[0].library(), &ks[1].library());
  EXPECT_NE(ks[0].source().find("kiln_tile_softmax"), std::string::npos);
  Tensor x = randn({100}), y = randn({100}), out = zeros({100});
  ks[0](Grid(1), x, y, out, 100);
  expect_same(out, x + y, "vector_add in a group");
  // The same kernel compiled again in this process is the library already loaded.
  cpu::Kernel again = cpu::compile(test::vector_add(128));
  EXPECT_EQ(again.library().key(), cpu::compile(test::vector_add(128)).library().key());
  EXPECT_EQ(again.library().key().size(), 32u);  // runtime::cache::hash: 128 bits in hex
}

}  // namespace
}  // namespace kiln::tile
