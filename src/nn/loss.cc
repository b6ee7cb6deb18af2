// Loss modules over the functional losses.
#include <kiln/nn/loss.h>

namespace kiln::nn {
namespace {
const std::string& checked_reduction(const std::string& r) {
  KILN_CHECK(r == "mean" || r == "sum" || r == "none", "reduction must be \"mean\", \"sum\" or \"none\", got \"", r,
             "\"");
  return r;
}
std::string reduction_repr(const std::string& r) { return "reduction='" + r + "'"; }
}  // namespace

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& o)
    : options(o), weight(register_buffer("weight", o.weight)) {
  checked_reduction(o.reduction);
  KILN_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1,
             "CrossEntropyLoss: label_smoothing must be in [0, 1], got ", o.label_smoothing);
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, weight, options.reduction, options.ignore_index, options.label_smoothing);
}

std::string CrossEntropyLossImpl::extra_repr() const {
  return reduction_repr(options.reduction) + ", ignore_index=" + std::to_string(options.ignore_index) +
         ", label_smoothing=" + detail::cat(options.label_smoothing);
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& o) : options(o), weight(register_buffer("weight", o.weight)) {
  checked_reduction(o.reduction);
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, weight, options.reduction, options.ignore_index);
}

std::string NLLLossImpl::extra_repr() const {
  return reduction_repr(options.reduction) + ", ignore_index=" + std::to_string(options.ignore_index);
}

MSELossImpl::MSELossImpl(const ReductionOptions& o) : options(o) { checked_reduction(o.reduction); }
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, options.reduction);
}
std::string MSELossImpl::extra_repr() const { return reduction_repr(options.reduction); }

L1LossImpl::L1LossImpl(const ReductionOptions& o) : options(o) { checked_reduction(o.reduction); }
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) { return l1_loss(input, target, options.reduction); }
std::string L1LossImpl::extra_repr() const { return reduction_repr(options.reduction); }

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& o)
    : options(o), weight(register_buffer("weight", o.weight)), pos_weight(register_buffer("pos_weight", o.pos_weight)) {
  checked_reduction(o.reduction);
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, weight, pos_weight, options.reduction);
}

std::string BCEWithLogitsLossImpl::extra_repr() const { return reduction_repr(options.reduction); }

}  // namespace kiln::nn
