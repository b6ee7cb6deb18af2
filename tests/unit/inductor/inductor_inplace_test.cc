// In-place write-backs (memory_plan.cc, in_place_writes): a copy_ of a kernel's output into a
// graph input becomes that kernel's store into the input, where nothing reads the old contents
// after the kernel and the kernel reads them only at the element it overwrites. Each case checks
// the decision and that the compiled graph leaves the input (and returns) what eager computes.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "core/tensor_impl.h"
#include "inductor/inductor.h"
#include "inductor/memory_plan.h"

namespace kiln::inductor {
namespace {

std::shared_ptr<graph::Graph> parsed(const std::string& text) {
  return std::make_shared<graph::Graph>(graph::parse(text));
}

int in_place_count(const std::shared_ptr<graph::Graph>& g) {
  Program p = lower_and_schedule(g);
  return in_place_writes(p).count;
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5) << "compiled:\n" << got << "\neager:\n" << want;
}

// x <- x * y + y, the update an optimizer's moment makes (exp_avg.mul_(b).add_(g)).
TEST(InductorInPlace, ElementwiseUpdateIsStoredIntoTheInput) {
  auto g = parsed(
      "graph(%x: f32[64, 32], %y: f32[64, 32]):\n"
      "  %0: f32[64, 32] = mul(%x, %y)\n"
      "  %1: f32[64, 32] = add(%0, %y)\n"
      "  %2: f32[64, 32] = copy_(%x, %1)\n"
      "  return (%2)\n");
  EXPECT_EQ(in_place_count(g), 1);
  Tensor x = randn({64, 32}), y = randn({64, 32});
  const Tensor want = x * y + y;
  const uint64_t version = x.impl()->storage->version;
  std::vector<Tensor> out = compile_graph(g)({x, y});
  expect_close(x, want);  // (written by the graph)
  expect_close(out.at(0), want);
  EXPECT_EQ(out.at(0).data_ptr(), x.data_ptr());  // copy_ returns its destination
  EXPECT_EQ(x.impl()->storage->version, version + 1);  // as copy_ counts the write (autograd checks it)
}

// Several inputs updated by one horizontally fused kernel (parameter and moment, as AdamW), the
// parameter's update reading the moment's old value.
TEST(InductorInPlace, SiblingUpdatesOfTwoInputs) {
  auto g = parsed(
      "graph(%p: f32[256], %m: f32[256], %g: f32[256]):\n"
      "  %0: f32[256] = add(%m, %g)\n"
      "  %1: f32[256] = mul(%m, %p)\n"
      "  %2: f32[256] = sub(%p, %1)\n"
      "  %3: f32[256] = copy_(%p, %2)\n"
      "  %4: f32[256] = copy_(%m, %0)\n"
      "  return ()\n");
  EXPECT_EQ(in_place_count(g), 2);
  Tensor p = randn({256}), m = randn({256}), gr = randn({256});
  const Tensor want_p = p - m * p, want_m = m + gr;
  compile_graph(g)({p, m, gr});
  expect_close(p, want_p);
  expect_close(m, want_m);
}

// A later kernel recomputes the new moment from the old one (vertical fusion inlined m + g into
// the parameter's update, which an extern's result keeps from joining the moment's kernel): it
// loads the moment's kernel output instead, so both write-backs are stores.
TEST(InductorInPlace, KernelRecomputingTheNewValueLoadsItInstead) {
  auto g = parsed(
      "graph(%p: f32[16, 16], %m: f32[16, 16], %g: f32[16, 16], %w: f32[16, 16]):\n"
      "  %0: f32[16, 16] = add(%m, %g)\n"
      "  %1: f32[16, 16] = sub(%p, %0)\n"
      "  %2: f32[16, 16] = matmul(%0, %w)\n"
      "  %3: f32[16, 16] = add(%1, %2)\n"
      "  %4: f32[16, 16] = copy_(%p, %3)\n"
      "  %5: f32[16, 16] = copy_(%m, %0)\n"
      "  return ()\n");
  EXPECT_EQ(in_place_count(g), 2);
  Tensor p = randn({16, 16}), m = randn({16, 16}), gr = randn({16, 16}), w = randn({16, 16});
  const Tensor want_m = m + gr, want_p = p - want_m + want_m.matmul(w);
  compile_graph(g)({p, m, gr, w});
  expect_close(m, want_m);
  expect_close(p, want_p);
}

// The new value reads the old one at another element (x + x^T): a store into x would be read back
// by another element's load, so the copy stays.
TEST(InductorInPlace, ReadAtAnotherElementKeepsTheCopy) {
  auto g = parsed(
      "graph(%x: f32[48, 48]):\n"
      "  %0: f32[48, 48]{strides=[1, 48]} = permute(%x, [1, 0])\n"
      "  %1: f32[48, 48] = add(%x, %0)\n"
      "  %2: f32[48, 48] = copy_(%x, %1)\n"
      "  return (%2)\n");
  EXPECT_EQ(in_place_count(g), 0);
  Tensor x = randn({48, 48});
  const Tensor want = x + x.t();
  compile_graph(g)({x});
  expect_close(x, want);
}

// An extern between the kernel and the copy reads the old contents (matmul(2x, x)): the copy stays.
TEST(InductorInPlace, ReaderOfTheOldValueAfterTheKernelKeepsTheCopy) {
  auto g = parsed(
      "graph(%x: f32[16, 16]):\n"
      "  %0: f32[16, 16] = add(%x, %x)\n"
      "  %1: f32[16, 16] = matmul(%0, %x)\n"
      "  %2: f32[16, 16] = copy_(%x, %0)\n"
      "  return (%1)\n");
  EXPECT_EQ(in_place_count(g), 0);
  Tensor x = randn({16, 16});
  const Tensor want_x = x + x, want_mm = (x + x).matmul(x);
  std::vector<Tensor> out = compile_graph(g)({x});
  expect_close(x, want_x);
  expect_close(out.at(0), want_mm);
}

// The copied value is also a graph output: it must stay a tensor of its own.
TEST(InductorInPlace, CopiedValueReturnedKeepsTheCopy) {
  auto g = parsed(
      "graph(%x: f32[8], %y: f32[8]):\n"
      "  %0: f32[8] = add(%x, %y)\n"
      "  %1: f32[8] = copy_(%x, %0)\n"
      "  return (%0)\n");
  EXPECT_EQ(in_place_count(g), 0);
  Tensor x = randn({8}), y = randn({8});
  const Tensor want = x + y;
  std::vector<Tensor> out = compile_graph(g)({x, y});
  expect_close(x, want);
  expect_close(out.at(0), want);
  EXPECT_NE(out.at(0).data_ptr(), x.data_ptr());
}

}  // namespace
}  // namespace kiln::inductor
