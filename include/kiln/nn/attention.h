// MultiheadAttention over scaled_dot_product_attention.
#pragma once
#include <kiln/nn/linear.h>

namespace kiln::nn {

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0;
  int64_t num_heads = 1;
  double dropout = 0.0;  // on the attention weights, in training mode
  bool bias = true;
  bool batch_first = false;  // inputs (batch, seq, embed) instead of (seq, batch, embed)
};
// PyTorch's layout and initialization: in_proj_weight (3E, E) xavier_uniform, in_proj_bias zeros,
// out_proj a Linear(E, E) with its bias zeroed. forward returns the attention output only
// (need_weights=False). Masks follow nn.MultiheadAttention: a bool attn_mask / key_padding_mask
// is true where attention is NOT allowed; a floating mask is added to the scores.
class MultiheadAttentionImpl : public Module {
 public:
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions{embed_dim, num_heads}) {}
  void reset_parameters();
  // query (L, N, E) / key, value (S, N, E) (batch_first: (N, L, E)), or unbatched (L, E).
  // attn_mask: (L, S) or (N * num_heads, L, S); key_padding_mask: (N, S); is_causal: mask j > i.
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = {},
                 const Tensor& key_padding_mask = {}, bool is_causal = false);
  // Self-attention: query = key = value.
  Tensor forward(const Tensor& x) { return forward(x, x, x); }
  std::string extra_repr() const override;
  MultiheadAttentionOptions options;
  Tensor& in_proj_weight;
  Tensor& in_proj_bias;
  Linear out_proj;
};
KILN_MODULE(MultiheadAttention);

}  // namespace kiln::nn
