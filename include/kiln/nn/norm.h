// LayerNorm, RMSNorm, BatchNorm2d.
#pragma once
#include <kiln/nn/module.h>

#include <optional>
#include <vector>

namespace kiln::nn {

struct LayerNormOptions {
  std::vector<int64_t> normalized_shape = {};
  double eps = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;  // only with elementwise_affine
};
// Normalizes over the trailing normalized_shape dims; weight ones, bias zeros.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  explicit LayerNormImpl(int64_t dim) : LayerNormImpl(LayerNormOptions{{dim}}) {}
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape)
      : LayerNormImpl(LayerNormOptions{std::move(normalized_shape)}) {}
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  LayerNormOptions options;
  Tensor& weight;  // undefined without elementwise_affine
  Tensor& bias;    // undefined without elementwise_affine or bias
};
KILN_MODULE(LayerNorm);

struct RMSNormOptions {
  std::vector<int64_t> normalized_shape = {};
  std::optional<double> eps = std::nullopt;  // default: the input dtype's machine epsilon
  bool elementwise_affine = true;
};
class RMSNormImpl : public Module {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  explicit RMSNormImpl(int64_t dim) : RMSNormImpl(RMSNormOptions{{dim}}) {}
  explicit RMSNormImpl(std::vector<int64_t> normalized_shape)
      : RMSNormImpl(RMSNormOptions{std::move(normalized_shape)}) {}
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  RMSNormOptions options;
  Tensor& weight;  // undefined without elementwise_affine
};
KILN_MODULE(RMSNorm);

struct BatchNorm2dOptions {
  int64_t num_features = 0;
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;  // nullopt: cumulative average (1 / num_batches_tracked)
  bool affine = true;
  bool track_running_stats = true;
};
// Per-channel normalization of (N, C, H, W). Training: batch statistics, and the running_mean /
// running_var buffers move toward them (running_var with the unbiased variance). Eval: the
// running statistics (or batch statistics without track_running_stats).
class BatchNorm2dImpl : public Module {
 public:
  explicit BatchNorm2dImpl(const BatchNorm2dOptions& options);
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNorm2dOptions{num_features}) {}
  void reset_running_stats();
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  BatchNorm2dOptions options;
  Tensor& weight;
  Tensor& bias;
  Tensor& running_mean;
  Tensor& running_var;
  Tensor& num_batches_tracked;  // int64 scalar
};
KILN_MODULE(BatchNorm2d);

}  // namespace kiln::nn
