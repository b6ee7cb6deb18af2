// Activation composites (relu ... hardswish) vs float64 references, and their gradients.
#include <kiln/autograd.h>

#include <functional>
#include <limits>

#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<DType> kFloats = {kFloat32, kFloat64, kBFloat16, kFloat16};
const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};
const double kSeluAlpha = 1.6732632423543772848170429916717, kSeluScale = 1.0507009873554804934193349852946;

struct Act {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
};

double softplus_ref(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}
double hardsigmoid_ref(double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }

std::vector<Act> activations() {
  return {
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0; }},
      {"relu6", [](const Tensor& x) { return relu6(x); }, [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }, [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"leaky_relu0.2", [](const Tensor& x) { return leaky_relu(x, 0.2); }, [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"elu", [](const Tensor& x) { return elu(x); }, [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"elu0.5", [](const Tensor& x) { return elu(x, 0.5); }, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }},
      {"selu", [](const Tensor& x) { return selu(x); },
       [](double x) { return kSeluScale * (x > 0 ? x : kSeluAlpha * std::expm1(x)); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }},
      {"mish", [](const Tensor& x) { return mish(x); }, [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double x) { return softplus_ref(x, 1, 20); }},
      {"softplus_b2_t3", [](const Tensor& x) { return softplus(x, 2, 3); }, [](double x) { return softplus_ref(x, 2, 3); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x); }, [](double x) { return std::min(std::max(x, -1.0), 1.0); }},
      {"hardtanh_-0.5_2", [](const Tensor& x) { return hardtanh(x, -0.5, 2); },
       [](double x) { return std::min(std::max(x, -0.5), 2.0); }},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, hardsigmoid_ref},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }, [](double x) { return x * hardsigmoid_ref(x); }},
  };
}

}  // namespace

TEST(Activation, ValuesDtypesLayouts) {
  for (const Act& f : activations()) {
    for (DType dt : kFloats) {
      for (const std::string& layout : kLayouts) {
        std::vector<double> xv;
        Tensor x = random_tensor({4, 5}, dt, &xv, layout, -7, 7);
        Tensor y = f.op(x);
        EXPECT_EQ(y.dtype(), dt) << f.name;
        EXPECT_EQ(y.sizes(), (Shape{4, 5})) << f.name;
        std::vector<double> ref;
        for (double v : xv) ref.push_back(f.ref(v));
        const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 2 * tolerance(dt);
        expect_close(y, ref, tol, tol, f.name + " " + name(dt) + " " + layout);
      }
    }
    // zero-size and 0-d
    EXPECT_EQ(f.op(zeros({0, 3})).sizes(), (Shape{0, 3})) << f.name;
    expect_close(f.op(scalar_tensor(0.75, kFloat64)), {f.ref(0.75)}, 1e-12, 1e-12, f.name + " 0-d");
  }
}

TEST(Activation, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor<double>({nan, inf, -inf, 0.0, 1000.0, -1000.0});
  expect_close(relu(x), {nan, inf, 0, 0, 1000, 0}, 0, 0, "relu");
  expect_close(hardtanh(x), {nan, 1, -1, 0, 1, -1}, 0, 0, "hardtanh");
  expect_close(softplus(x), {nan, inf, 0, std::log(2.0), 1000, 0}, 1e-15, 0, "softplus");
  expect_close(silu(x.slice(0, 3)), {0, 1000, 0}, 0, 0, "silu");
  expect_close(gelu(x.slice(0, 3)), {0, 1000, 0}, 0, 0, "gelu");
  expect_close(mish(x.slice(0, 3)), {0, 1000, 0}, 1e-15, 0, "mish");
  expect_close(elu(tensor<double>({-1000.0})), {-1}, 0, 0, "elu saturates");
  // float32 does not overflow inside softplus/mish for large inputs
  expect_close(softplus(tensor<float>({100.0f, -100.0f})), {100, std::log1p(std::exp(-100.0))}, 1e-6, 1e-30);
  expect_close(mish(tensor<float>({100.0f})), {100}, 1e-6, 0);
  // integer tensors: relu keeps the dtype
  Tensor i = tensor<int64_t>({-3, 0, 5});
  EXPECT_EQ(relu(i).dtype(), kInt64);
  EXPECT_EQ(relu(i).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 5}));
  EXPECT_EQ(relu6(tensor<int32_t>({-3, 4, 9})).to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 6}));
  EXPECT_THROW(gelu(x, "exact"), Error);
  EXPECT_THROW(hardtanh(x, 2, 1), Error);
  EXPECT_THROW(elu(i), Error);
}

TEST(Activation, InplaceRelu) {
  Tensor x = tensor<float>({-1, 2, -3, 4}, {2, 2});
  Tensor alias = x.view({4});
  x.relu_();
  expect_close(alias, {0, 2, 0, 4}, 0, 0);
  Tensor y = tensor<float>({-1, 2, -3, 4}).relu();
  expect_close(y, {0, 2, 0, 4}, 0, 0);
}

TEST(Activation, Gradients) {
  for (const Act& f : activations()) {
    Tensor x = grad_input({3, 4}, -5, 5);
    expect_gradcheck([&](const TensorList& t) { return TensorList{f.op(t[0])}; }, {x}, f.name + " contiguous");
    expect_gradcheck([&](const TensorList& t) { return TensorList{f.op(t[0].transpose(0, 1))}; }, {x},
                     f.name + " transposed");
    Tensor v = grad_input({4}, -5, 5);
    expect_gradcheck([&](const TensorList& t) { return TensorList{f.op(t[0].expand({3, 4}))}; }, {v},
                     f.name + " expanded");
  }
}

TEST(Activation, GradientConventionsAtKinks) {
  // PyTorch: relu'(0) = 0, hardtanh' is 0 on the bounds, leaky_relu'(0) = slope, elu'(0) = alpha.
  auto g = [](const std::function<Tensor(const Tensor&)>& f, std::vector<double> xs) {
    Tensor x = tensor<double>(xs);
    x.requires_grad_();
    return grad({sum(f(x))}, {x})[0];
  };
  expect_close(g([](const Tensor& x) { return relu(x); }, {0.0, 1.0, -1.0}), {0, 1, 0}, 0, 0, "relu");
  expect_close(g([](const Tensor& x) { return hardtanh(x); }, {-1.0, 1.0, 0.5}), {0, 0, 1}, 0, 0, "hardtanh");
  expect_close(g([](const Tensor& x) { return relu6(x); }, {0.0, 6.0, 3.0}), {0, 0, 1}, 0, 0, "relu6");
  expect_close(g([](const Tensor& x) { return leaky_relu(x, 0.2); }, {0.0}), {0.2}, 1e-15, 0, "leaky_relu");
  expect_close(g([](const Tensor& x) { return elu(x, 0.5); }, {0.0}), {0.5}, 1e-15, 0, "elu");
  // no NaN from the discarded branch of softplus for huge inputs
  expect_close(g([](const Tensor& x) { return softplus(x); }, {1000.0, -1000.0}), {1, 0}, 1e-15, 0, "softplus");
  expect_close(g([](const Tensor& x) { return mish(x); }, {1000.0}), {1}, 1e-15, 0, "mish");
  // elu/selu: the exp of the unused branch stays finite (no inf * 0 = NaN for huge x); for x << 0
  // the gradient is alpha * exp(x), not 1 + expm1(x) rounded to 0 (expm1's derivative is exp(x)).
  expect_close(g([](const Tensor& x) { return elu(x, 1.0); }, {1000.0, -100.0}), {1, std::exp(-100.0)}, 0, 1e-12, "elu");
  expect_close(g([](const Tensor& x) { return selu(x); }, {1e4}), {1.0507009873554804934}, 0, 1e-12, "selu");
  expect_close(g([](const Tensor& x) { return expm1(x); }, {-100.0, 0.5}), {std::exp(-100.0), std::exp(0.5)}, 0, 1e-12,
               "expm1");
}

TEST(Activation, SecondOrder) {
  // gradcheck of x -> d/dx sum(v * f(x)) built with create_graph (smooth activations only)
  for (const Act& f : activations()) {
    if (f.name.rfind("relu", 0) == 0 || f.name.rfind("hard", 0) == 0 || f.name.rfind("leaky", 0) == 0) continue;
    Tensor x = grad_input({2, 3}, -3, 3);
    Tensor v = random_tensor({2, 3}, kFloat64);
    expect_gradcheck([&](const TensorList& t) {
          EnableGradGuard enable;
          return grad({sum(mul(f.op(t[0]), v))}, {t[0]}, {}, true, true);
        },
        {x}, f.name + " second order");
  }
}
