// LayerNorm, RMSNorm, BatchNorm2d.
#include <kiln/nn/init.h>
#include <kiln/nn/norm.h>

namespace kiln::nn {
namespace {

std::string shape_repr(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> checked_shape(const char* who, const std::vector<int64_t>& s) {
  KILN_CHECK(!s.empty(), who, ": normalized_shape must not be empty");
  for (int64_t d : s) KILN_CHECK(d >= 0, who, ": negative size in normalized_shape ", shape_repr(s));
  return s;
}

}  // namespace

LayerNormImpl::LayerNormImpl(const LayerNormOptions& o)
    : options(o),
      weight(register_parameter("weight",
                                o.elementwise_affine ? kiln::empty(checked_shape("LayerNorm", o.normalized_shape)) : Tensor())),
      bias(register_parameter("bias", o.elementwise_affine && o.bias ? kiln::empty(o.normalized_shape) : Tensor())) {
  checked_shape("LayerNorm", o.normalized_shape);
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return layer_norm(input, options.normalized_shape, weight, bias, options.eps);
}

std::string LayerNormImpl::extra_repr() const {
  return shape_repr(options.normalized_shape) + ", eps=" + detail::cat(options.eps) +
         ", elementwise_affine=" + (options.elementwise_affine ? "true" : "false");
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& o)
    : options(o),
      weight(register_parameter("weight",
                                o.elementwise_affine ? kiln::empty(checked_shape("RMSNorm", o.normalized_shape)) : Tensor())) {
  checked_shape("RMSNorm", o.normalized_shape);
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& input) { return rms_norm(input, options.normalized_shape, weight, options.eps); }

std::string RMSNormImpl::extra_repr() const {
  return shape_repr(options.normalized_shape) + ", eps=" + (options.eps ? detail::cat(*options.eps) : "None") +
         ", elementwise_affine=" + (options.elementwise_affine ? "true" : "false");
}

static BatchNorm2dOptions checked(const BatchNorm2dOptions& o) {
  KILN_CHECK(o.num_features > 0, "BatchNorm2d: expected num_features > 0, got ", o.num_features);
  return o;
}

BatchNorm2dImpl::BatchNorm2dImpl(const BatchNorm2dOptions& o)
    : options(checked(o)),
      weight(register_parameter("weight", o.affine ? kiln::empty({o.num_features}) : Tensor())),
      bias(register_parameter("bias", o.affine ? kiln::empty({o.num_features}) : Tensor())),
      running_mean(register_buffer("running_mean", o.track_running_stats ? zeros({o.num_features}) : Tensor())),
      running_var(register_buffer("running_var", o.track_running_stats ? ones({o.num_features}) : Tensor())),
      num_batches_tracked(register_buffer("num_batches_tracked",
                                          o.track_running_stats ? zeros({}, DType::Int64) : Tensor())) {
  reset_parameters();
}

void BatchNorm2dImpl::reset_running_stats() {
  if (!options.track_running_stats) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNorm2dImpl::reset_parameters() {
  reset_running_stats();
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor BatchNorm2dImpl::forward(const Tensor& input) {
  KILN_CHECK(input.dim() == 4, "BatchNorm2d: expected a 4-d input (N, C, H, W), got ", input.dim(), " dims");
  KILN_CHECK(input.size(1) == options.num_features, "BatchNorm2d: expected ", options.num_features,
             " channels, got input with ", input.size(1));
  double factor = options.momentum.value_or(0.0);
  if (is_training() && options.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);  // an op, so compiled code counts too
    if (!options.momentum) factor = 1.0 / double(num_batches_tracked.item<int64_t>());  // cumulative average
  }
  // Batch statistics in training, or when there are no running statistics to use.
  const bool use_batch = is_training() || !running_mean.defined();
  const bool update = !is_training() || options.track_running_stats;
  return batch_norm(input, update ? running_mean : Tensor(), update ? running_var : Tensor(), weight, bias, use_batch,
                    factor, options.eps);
}

std::string BatchNorm2dImpl::extra_repr() const {
  return std::to_string(options.num_features) + ", eps=" + detail::cat(options.eps) +
         ", momentum=" + (options.momentum ? detail::cat(*options.momentum) : "None") +
         ", affine=" + (options.affine ? "true" : "false") +
         ", track_running_stats=" + (options.track_running_stats ? "true" : "false");
}

}  // namespace kiln::nn
