// nn::init: fills tensors in place from kiln's generator (no autograd history).
#include <kiln/autograd.h>
#include <kiln/nn/init.h>
#include <kiln/ops.h>

#include <cmath>

namespace kiln::nn::init {
namespace {

// Draws in float32 (float64 for float64 tensors) and casts into t, so 16-bit tensors get
// correctly rounded samples of the same stream.
DType draw_dtype(const Tensor& t) { return t.dtype() == DType::Float64 ? DType::Float64 : DType::Float32; }

void check_floating(const Tensor& t, const char* fn) {
  KILN_CHECK(t.defined(), "nn::init::", fn, ": the tensor is undefined");
  KILN_CHECK(is_floating(t.dtype()), "nn::init::", fn, ": expected a floating point tensor, got ", name(t.dtype()));
}

Tensor write(const Tensor& t, const Tensor& v) {
  NoGradGuard no_grad;
  Tensor dst = t;
  dst.copy_from(v);
  return t;
}

int64_t fan(const Tensor& t, const std::string& mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  KILN_CHECK(mode == "fan_in" || mode == "fan_out", "nn::init: mode must be \"fan_in\" or \"fan_out\", got \"", mode,
             "\"");
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(const std::string& nl, std::optional<double> param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "sigmoid" ||
      nl == "conv_transpose1d" || nl == "conv_transpose2d" || nl == "conv_transpose3d")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nl == "selu") return 3.0 / 4.0;
  detail::fail("nn::init::calculate_gain: unsupported nonlinearity \"" + nl + "\"",
               "use linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  KILN_CHECK(t.defined() && t.dim() >= 2,
             "nn::init: fan in and fan out need a tensor with at least 2 dims, got ", t.defined() ? t.dim() : 0);
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(const Tensor& t, double a, double b) {
  check_floating(t, "uniform_");
  KILN_CHECK(a <= b, "nn::init::uniform_: expected a <= b, got a=", a, ", b=", b);
  NoGradGuard no_grad;
  return write(t, add(mul(rand(t.sizes(), draw_dtype(t)), Scalar(b - a)), Scalar(a)));
}

Tensor normal_(const Tensor& t, double mean, double std) {
  check_floating(t, "normal_");
  KILN_CHECK(std >= 0, "nn::init::normal_: expected std >= 0, got ", std);
  NoGradGuard no_grad;
  return write(t, add(mul(randn(t.sizes(), draw_dtype(t)), Scalar(std)), Scalar(mean)));
}

Tensor constant_(const Tensor& t, Scalar value) {
  KILN_CHECK(t.defined(), "nn::init::constant_: the tensor is undefined");
  NoGradGuard no_grad;
  Tensor dst = t;
  dst.fill_(value);
  return t;
}

Tensor zeros_(const Tensor& t) { return constant_(t, 0); }
Tensor ones_(const Tensor& t) { return constant_(t, 1); }

Tensor xavier_uniform_(const Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double std = gain * std::sqrt(2.0 / double(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(t, -bound, bound);
}

Tensor xavier_normal_(const Tensor& t, double gain) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / double(fan_in + fan_out)));
}

Tensor kaiming_uniform_(const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  const int64_t f = fan(t, mode);
  if (f == 0) return t;  // PyTorch warns and leaves a zero-element tensor alone
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(double(f));
  return uniform_(t, -bound, bound);
}

Tensor kaiming_normal_(const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  const int64_t f = fan(t, mode);
  if (f == 0) return t;
  return normal_(t, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(double(f)));
}

Tensor trunc_normal_(const Tensor& t, double mean, double std, double a, double b) {
  check_floating(t, "trunc_normal_");
  KILN_CHECK(a < b && std > 0, "nn::init::trunc_normal_: expected a < b and std > 0, got a=", a, ", b=", b,
             ", std=", std);
  // Uniform over the CDF range of [a, b], mapped back through the inverse normal CDF (erfinv).
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  NoGradGuard no_grad;
  const DType dt = DType::Float64;  // erfinv near +-1 needs the precision
  Tensor u = add(mul(rand(t.sizes(), dt), Scalar(2 * hi - 2 * lo)), Scalar(2 * lo - 1));
  Tensor x = add(mul(erfinv(u), Scalar(std * std::sqrt(2.0))), Scalar(mean));
  return write(t, clamp(x, Scalar(a), Scalar(b)));
}

}  // namespace kiln::nn::init
