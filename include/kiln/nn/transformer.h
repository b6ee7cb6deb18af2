// TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and
// Transformer (torch.nn's): post-norm or pre-norm (norm_first) blocks of MultiheadAttention and a
// feed-forward Linear-activation-Linear, with torch's submodule names (self_attn, multihead_attn,
// linear1, linear2, norm1..3, dropout, dropout1..3), so state_dicts carry over. Masks follow
// MultiheadAttention (bool: true = blocked; floating: added to the scores).
#pragma once
#include <kiln/nn/attention.h>
#include <kiln/nn/container.h>
#include <kiln/nn/linear.h>
#include <kiln/nn/norm.h>

#include <string>

namespace kiln::nn {

struct TransformerLayerOptions {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;  // (batch, seq, feature) instead of (seq, batch, feature)
  bool norm_first = false;   // pre-norm: x + f(norm(x)) instead of norm(x + f(x))
  bool bias = true;
};

// x = norm1(x + sa(x)); x = norm2(x + ff(x))  (norm_first: x += sa(norm1(x)); x += ff(norm2(x))).
class TransformerEncoderLayerImpl : public Module {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerLayerOptions& options);
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerLayerOptions{d_model, nhead}) {}
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  TransformerLayerOptions options;
  MultiheadAttention self_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2;
  Dropout dropout, dropout1, dropout2;
};
KILN_MODULE(TransformerEncoderLayer);

// The decoder block adds cross-attention over the encoder's output (memory) between the two:
// x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x)) (or pre-norm).
class TransformerDecoderLayerImpl : public Module {
 public:
  explicit TransformerDecoderLayerImpl(const TransformerLayerOptions& options);
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerLayerOptions{d_model, nhead}) {}
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  TransformerLayerOptions options;
  MultiheadAttention self_attn, multihead_attn;
  Linear linear1, linear2;
  LayerNorm norm1, norm2, norm3;
  Dropout dropout, dropout1, dropout2, dropout3;
};
KILN_MODULE(TransformerDecoderLayer);

// num_layers copies of one layer (layers.0 ...; every copy starts with the weights of the first,
// as torch's deep copies do), then an optional final LayerNorm (norm).
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerLayerOptions& layer, int64_t num_layers, bool final_norm = false);
  Tensor forward(const Tensor& src, const Tensor& mask = {}, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  ModuleList layers;
  LayerNorm norm{nullptr};  // empty without final_norm
};
KILN_MODULE(TransformerEncoder);

class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(const TransformerLayerOptions& layer, int64_t num_layers, bool final_norm = false);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  ModuleList layers;
  LayerNorm norm{nullptr};
};
KILN_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerLayerOptions layer = {512, 8};
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
};

// encoder (with its final norm) over src, decoder (with its final norm) over tgt and the encoding;
// parameters initialized xavier_uniform (every matrix), as torch's.
class TransformerImpl : public Module {
 public:
  explicit TransformerImpl(const TransformerOptions& options);
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  // A float (sz, sz) mask: 0 on and below the diagonal, -inf above (no attention to later positions).
  static Tensor generate_square_subsequent_mask(int64_t sz);
  TransformerOptions options;
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
};
KILN_MODULE(Transformer);

}  // namespace kiln::nn
