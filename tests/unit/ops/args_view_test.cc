// The generated argument views (ops/args_gen.h) against ops.def's schemas: every view's argument
// names, types and output count are the schema's as the C++ schema parser (ops/schema.h) reads
// it, while tools/codegen/gen_ops.py parses it on its own; each schema type's accessor returns
// the C++ type it stands for; and arguments boxed by the public API read back by name.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "ops/family.h"
#include "ops/schema.h"

using namespace kiln;
using namespace kiln::ops;

namespace {

template <class T, class U>
constexpr bool is = std::is_same_v<T, U>;
template <class V>
const V& a_view();  // for decltype only

// One accessor of each schema type.
static_assert(is<decltype(a_view<args::sum>().self()), const Tensor&>);                  // Tensor
static_assert(is<decltype(a_view<args::linear>().bias()), Tensor>);                      // Tensor?
static_assert(is<decltype(a_view<args::cat>().tensors()), const TensorList&>);           // Tensor[]
static_assert(is<decltype(a_view<args::index>().indices()), const TensorList&>);         // Tensor?[]
static_assert(is<decltype(a_view<args::full>().fill_value()), Scalar>);                  // Scalar
static_assert(is<decltype(a_view<args::clamp>().min()), std::optional<Scalar>>);         // Scalar?
static_assert(is<decltype(a_view<args::gather>().dim()), int64_t>);                      // int
static_assert(is<decltype(a_view<args::argmax>().dim()), std::optional<int64_t>>);       // int?
static_assert(is<decltype(a_view<args::permute>().dims()), const std::vector<int64_t>&>);  // int[]
static_assert(is<decltype(a_view<args::sum>().dim()), std::optional<std::vector<int64_t>>>);  // int[]?
static_assert(is<decltype(a_view<args::narrow>().start()), SymInt>);                     // SymInt
static_assert(is<decltype(a_view<args::slice>().start()), std::optional<SymInt>>);       // SymInt?
static_assert(is<decltype(a_view<args::view>().size()), const SymShape&>);               // SymInt[]
static_assert(is<decltype(a_view<args::interpolate>().size()), std::optional<SymShape>>);  // SymInt[]?
static_assert(is<decltype(a_view<args::layer_norm>().eps()), double>);                   // float
static_assert(is<decltype(a_view<args::var>().correction()), std::optional<double>>);    // float?
static_assert(is<decltype(a_view<args::interpolate>().scale_factor()), std::optional<std::vector<double>>>);  // float[]?
static_assert(is<decltype(a_view<args::sum>().keepdim()), bool>);                        // bool
static_assert(is<decltype(a_view<args::interpolate>().align_corners()), std::optional<bool>>);  // bool?
static_assert(is<decltype(a_view<args::convert_element_type>().dtype()), DType>);        // ScalarType
static_assert(is<decltype(a_view<args::sum>().dtype()), std::optional<DType>>);          // ScalarType?
static_assert(is<decltype(a_view<args::full>().device()), std::optional<Device>>);       // Device?
static_assert(is<decltype(a_view<args::scatter_reduce>().reduce()), const std::string&>);  // str
static_assert(is<decltype(a_view<args::div>().rounding_mode()), std::optional<std::string>>);  // str?
// An argument named like its op gets a trailing underscore.
static_assert(is<decltype(a_view<args::pad>().pad_()), const SymShape&>);
// The view of an op by id, and what it knows of the schema.
static_assert(is<args::of<OpId::max_dim>, args::max_dim> && args::max_dim::kOp == OpId::max_dim);
static_assert(args::max_dim::kNumOutputs == 2 && args::split::kNumOutputs == -1 && args::sum::kNumOutputs == 1);
static_assert(args_prefix<args::scatter, args::scatter_reduce>() && !args_prefix<args::scatter_reduce, args::scatter>());
static_assert(args_prefix<args::sum, args::prod>() && !args_prefix<args::sum, args::amax>());

template <class V>
void expect_view_matches_schema() {
  const Schema& s = op_schema(V::kOp);
  const char* op = op_info(V::kOp).name;
  EXPECT_EQ(V::kNumOutputs, s.num_outputs) << op;
  ASSERT_EQ(V::kArgNames.size(), s.args.size()) << op;
  for (size_t i = 0; i < s.args.size(); ++i) {
    EXPECT_EQ(std::string(V::kArgNames[i]), s.args[i].name) << op << " argument " << i;
    EXPECT_EQ(arg_type_name(V::kArgTypes[i]), s.args[i].type_text) << op << " argument " << i;
  }
}

TEST(ArgsView, EveryViewMatchesItsSchema) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (expect_view_matches_schema<args::of<OpId(I)>>(), ...);
  }(std::make_index_sequence<size_t(kNumOps)>{});
}

// Records the boxed arguments of the first op called and returns placeholders (nothing runs).
struct Capture : DispatchMode {
  std::optional<Args> args;
  Tensor result = zeros({1});
  std::optional<std::vector<Tensor>> intercept(const Args& a) override {
    if (!args) args = a;
    return std::vector<Tensor>(size_t(std::max(op_schema(a.op).num_outputs, 1)), result);
  }
};

template <class F>
Args capture(F call) {
  Capture c;
  DispatchMode* prev = set_dispatch_mode(&c);
  call();
  set_dispatch_mode(prev);
  EXPECT_TRUE(c.args.has_value());
  return *c.args;
}

TEST(ArgsView, ReadsWhatThePublicApiBoxed) {
  const Tensor x = zeros({2, 3}), w = zeros({4, 3});
  {
    const Args a = capture([&] { sum(x, {1}, true, kFloat64); });
    const args::sum s{a};
    EXPECT_EQ(s.self().impl(), x.impl());
    EXPECT_EQ(s.dim(), std::vector<int64_t>{1});
    EXPECT_TRUE(s.keepdim());
    EXPECT_EQ(s.dtype(), kFloat64);
  }
  {
    const Args a = capture([&] { topk(x, 2, 0, false); });
    const args::topk t{a};
    EXPECT_EQ(t.k(), 2);
    EXPECT_EQ(t.dim(), 0);
    EXPECT_FALSE(t.largest());
    EXPECT_TRUE(t.sorted());  // the schema's default
  }
  {
    const Args a = capture([&] { linear(x, w); });
    EXPECT_FALSE(args::linear{a}.bias().defined());
    EXPECT_EQ(args::linear{a}.weight().impl(), w.impl());
  }
  {
    const Args a = capture([&] { clamp(x, std::nullopt, 1.5); });
    EXPECT_FALSE(args::clamp{a}.min().has_value());
    EXPECT_EQ(args::clamp{a}.max()->to_double(), 1.5);
  }
  {
    const Args a = capture([&] { div(x, x, std::string("floor")); });
    EXPECT_EQ(args::div{a}.rounding_mode(), "floor");
  }
  {
    const Tensor image = zeros({1, 1, 2, 2});
    const Args a = capture([&] { interpolate(image, SymIntList{4, 4}, std::nullopt, "bilinear", false); });
    const args::interpolate v{a};
    EXPECT_EQ(v.size(), (SymShape{4, 4}));
    EXPECT_FALSE(v.scale_factor().has_value());
    EXPECT_EQ(v.mode(), "bilinear");
    EXPECT_EQ(v.align_corners(), false);
  }
  {
    const Args a = capture([&] { narrow(x, 1, 1, 2); });
    EXPECT_EQ(args::narrow{a}.start().value(), 1);
    EXPECT_EQ(args::narrow{a}.length().value(), 2);
  }
}

}  // namespace
