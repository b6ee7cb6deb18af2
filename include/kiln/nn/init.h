// kiln::nn::init: in-place initializers (no autograd history), as torch.nn.init documents them.
// They draw from kiln's generator, so manual_seed() makes them reproducible.
#pragma once
#include <kiln/tensor.h>

#include <string>
#include <utility>

namespace kiln::nn::init {

// The recommended gain for a nonlinearity: "linear", "conv1d", "conv2d", "conv3d", "sigmoid",
// "tanh", "relu", "leaky_relu" (param = negative slope, default 0.01), "selu".
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
// (fan_in, fan_out) of a weight of at least 2 dims: (size(1), size(0)) times the receptive field.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(const Tensor& t, double a = 0.0, double b = 1.0);
Tensor normal_(const Tensor& t, double mean = 0.0, double std = 1.0);
Tensor constant_(const Tensor& t, Scalar value);
Tensor zeros_(const Tensor& t);
Tensor ones_(const Tensor& t);
Tensor xavier_uniform_(const Tensor& t, double gain = 1.0);
Tensor xavier_normal_(const Tensor& t, double gain = 1.0);
// mode: "fan_in" or "fan_out"; a: the negative slope for "leaky_relu".
Tensor kaiming_uniform_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
// N(mean, std) restricted to [a, b] (inverse-CDF sampling, then clamped).
Tensor trunc_normal_(const Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0);

}  // namespace kiln::nn::init
