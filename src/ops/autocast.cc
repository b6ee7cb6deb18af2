// Autocast policy: which ops run in the low-precision dtype and which in float32. The lists follow
// PyTorch's documented CUDA autocast op lists for the ops kiln has.
#include <kiln/autocast.h>
#include <kiln/ops.h>

#include "ops/dispatch.h"

namespace kiln {
namespace {
thread_local std::optional<DType> t_autocast;
}  // namespace

std::optional<DType> autocast_dtype() { return t_autocast; }

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : prev_(t_autocast) {
  KILN_CHECK_HINT(dtype == kBFloat16 || dtype == kFloat16, "use kBFloat16 or kFloat16",
                  "autocast to ", name(dtype), " is not supported");
  t_autocast = enabled ? std::optional<DType>(dtype) : std::nullopt;
}
AutocastGuard::~AutocastGuard() { t_autocast = prev_; }

namespace ops {
namespace {

enum class Policy : uint8_t { None, Lower, Float32 };

std::vector<Policy> make_policies() {
  std::vector<Policy> p(kNumOps, Policy::None);
  for (OpId op : {OpId::matmul, OpId::mm, OpId::bmm, OpId::addmm, OpId::baddbmm, OpId::linear, OpId::convolution,
                  OpId::conv1d, OpId::conv2d, OpId::conv3d, OpId::conv_transpose2d, OpId::scaled_dot_product_attention,
                  OpId::outer, OpId::dot, OpId::vdot})
    p[size_t(op)] = Policy::Lower;
  for (OpId op : {OpId::exp, OpId::expm1, OpId::log, OpId::log2, OpId::log1p, OpId::pow, OpId::reciprocal,
                  OpId::rsqrt, OpId::erfinv, OpId::acos, OpId::asin, OpId::cosh, OpId::sinh, OpId::tan, OpId::sum,
                  OpId::prod, OpId::mean, OpId::cumsum, OpId::cumprod, OpId::var, OpId::std, OpId::var_mean,
                  OpId::norm, OpId::logsumexp, OpId::softmax, OpId::log_softmax, OpId::layer_norm, OpId::rms_norm,
                  OpId::group_norm, OpId::batch_norm, OpId::instance_norm, OpId::normalize, OpId::cosine_similarity,
                  OpId::pairwise_distance, OpId::softplus, OpId::cross_entropy, OpId::nll_loss, OpId::mse_loss,
                  OpId::l1_loss, OpId::smooth_l1_loss, OpId::huber_loss, OpId::binary_cross_entropy_with_logits,
                  OpId::kl_div, OpId::embedding_bag})
    p[size_t(op)] = Policy::Float32;
  return p;
}

Tensor cast_if_float(const Tensor& t, DType to) {
  if (!t.defined() || !is_floating(t.dtype()) || t.dtype() == to || t.dtype() == kFloat64) return t;
  return convert_element_type(t, to);
}

}  // namespace

// Rewrites the floating tensor arguments of `a` per the op's policy. float64 is left alone, as
// PyTorch's autocast does.
void apply_autocast(Args& a) {
  static const std::vector<Policy> policies = make_policies();
  const Policy p = policies[size_t(a.op)];
  if (p == Policy::None) return;
  const DType to = p == Policy::Lower ? *t_autocast : kFloat32;
  std::optional<DType> saved = t_autocast;
  t_autocast.reset();  // the casts themselves run without autocast
  for (Arg& x : a.v) {
    if (auto* t = std::get_if<Tensor>(&x)) *t = cast_if_float(*t, to);
    else if (auto* l = std::get_if<TensorList>(&x))
      for (Tensor& e : *l) e = cast_if_float(e, to);
  }
  t_autocast = saved;
}

}  // namespace ops
}  // namespace kiln
