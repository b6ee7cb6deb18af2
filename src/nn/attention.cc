// MultiheadAttention: input projections, per-head scaled_dot_product_attention, output projection.
#include <kiln/nn/attention.h>
#include <kiln/nn/init.h>

#include <limits>

namespace kiln::nn {
namespace {

MultiheadAttentionOptions checked(const MultiheadAttentionOptions& o) {
  KILN_CHECK(o.embed_dim > 0 && o.num_heads > 0, "MultiheadAttention: expected positive embed_dim and num_heads, got ",
             o.embed_dim, " and ", o.num_heads);
  KILN_CHECK(o.embed_dim % o.num_heads == 0, "MultiheadAttention: embed_dim (", o.embed_dim,
             ") must be divisible by num_heads (", o.num_heads, ")");
  KILN_CHECK(o.dropout >= 0 && o.dropout <= 1, "MultiheadAttention: dropout must be in [0, 1], got ", o.dropout);
  return o;
}

// A mask in nn.MultiheadAttention's convention (bool: true = blocked) as an additive float mask.
Tensor additive(const Tensor& m, DType dt, const char* what) {
  if (m.dtype() == DType::Bool)
    return masked_fill(zeros(m.sizes(), dt), m, Scalar(-std::numeric_limits<double>::infinity()));
  KILN_CHECK(is_floating(m.dtype()), "MultiheadAttention: ", what, " must be bool or floating point, got ",
             name(m.dtype()));
  return m.to(dt);
}

}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& o)
    : options(checked(o)),
      in_proj_weight(register_parameter("in_proj_weight", kiln::empty({3 * o.embed_dim, o.embed_dim}))),
      in_proj_bias(register_parameter("in_proj_bias", o.bias ? kiln::empty({3 * o.embed_dim}) : Tensor())),
      out_proj(register_module("out_proj", Linear(LinearOptions{o.embed_dim, o.embed_dim, o.bias}))) {
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

Tensor MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const Tensor& attn_mask, const Tensor& key_padding_mask, bool is_causal) {
  const int64_t E = options.embed_dim, H = options.num_heads, D = E / H;
  const bool batched = query.dim() == 3;
  KILN_CHECK(query.dim() == 3 || query.dim() == 2, "MultiheadAttention: expected a 2-d (unbatched) or 3-d query, got ",
             query.dim(), " dims");
  KILN_CHECK(key.dim() == query.dim() && value.dim() == query.dim(),
             "MultiheadAttention: query, key and value must have the same number of dims, got ", query.dim(), ", ",
             key.dim(), " and ", value.dim());
  // To (N, L, E).
  auto to_nle = [&](const Tensor& t) {
    if (!batched) return unsqueeze(t, 0);
    return options.batch_first ? t : transpose(t, 0, 1);
  };
  Tensor q_in = to_nle(query), k_in = to_nle(key), v_in = to_nle(value);
  KILN_CHECK(q_in.size(2) == E && k_in.size(2) == E && v_in.size(2) == E, "MultiheadAttention: expected embed_dim ", E,
             " in the last dim of query, key and value, got ", q_in.size(2), ", ", k_in.size(2), " and ",
             v_in.size(2));
  KILN_CHECK(k_in.size(0) == q_in.size(0) && v_in.size(0) == q_in.size(0) && k_in.size(1) == v_in.size(1),
             "MultiheadAttention: query, key and value disagree on the batch size or key and value on the length");
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);

  Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {  // self-attention: one projection
    auto qkv = chunk(linear(q_in, in_proj_weight, in_proj_bias), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    auto w = chunk(in_proj_weight, 3, 0);
    TensorList bs = in_proj_bias.defined() ? chunk(in_proj_bias, 3, 0) : TensorList(3);
    q = linear(q_in, w[0], bs[0]), k = linear(k_in, w[1], bs[1]), v = linear(v_in, w[2], bs[2]);
  }
  auto heads = [&](const Tensor& t, int64_t len) { return transpose(reshape(t, {N, len, H, D}), 1, 2); };
  q = heads(q, L), k = heads(k, S), v = heads(v, S);

  // One additive (N or 1, H or 1, L, S) mask from attn_mask, key_padding_mask and is_causal.
  Tensor mask;
  const DType dt = q.dtype();
  if (attn_mask.defined()) {
    Tensor m = additive(attn_mask, dt, "attn_mask");
    if (m.dim() == 3) {
      KILN_CHECK(m.size(0) == N * H && m.size(1) == L && m.size(2) == S, "MultiheadAttention: a 3-d attn_mask must be (",
                 N * H, ", ", L, ", ", S, "), got ", shape_str(m.sizes()));
      m = reshape(m, {N, H, L, S});
    } else {
      KILN_CHECK(m.dim() == 2 && m.size(0) == L && m.size(1) == S, "MultiheadAttention: a 2-d attn_mask must be (", L,
                 ", ", S, "), got ", shape_str(m.sizes()));
    }
    mask = m;
  }
  if (key_padding_mask.defined()) {
    Tensor m = additive(batched ? key_padding_mask : unsqueeze(key_padding_mask, 0), dt, "key_padding_mask");
    KILN_CHECK(m.dim() == 2 && m.size(0) == N && m.size(1) == S, "MultiheadAttention: key_padding_mask must be (", N,
               ", ", S, "), got ", shape_str(key_padding_mask.sizes()));
    m = reshape(m, {N, 1, 1, S});
    mask = mask.defined() ? add(mask, m) : m;
  }
  bool causal = false;
  if (is_causal && !mask.defined()) {
    causal = true;  // sdpa's own causal path
  } else if (is_causal) {
    mask = add(mask, triu(full({L, S}, Scalar(-std::numeric_limits<double>::infinity()), dt), 1));
  }
  const double p = is_training() ? options.dropout : 0.0;
  Tensor y = scaled_dot_product_attention(q, k, v, mask, p, causal);
  y = out_proj(reshape(transpose(y, 1, 2), {N, L, E}));
  if (!batched) return squeeze(y, 0);
  return options.batch_first ? y : transpose(y, 0, 1);
}

std::string MultiheadAttentionImpl::extra_repr() const {
  return "embed_dim=" + std::to_string(options.embed_dim) + ", num_heads=" + std::to_string(options.num_heads) +
         ", dropout=" + detail::cat(options.dropout) + ", batch_first=" + (options.batch_first ? "true" : "false");
}

}  // namespace kiln::nn
