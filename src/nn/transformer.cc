// The Transformer layers: attention and feed-forward blocks with residuals, post- or pre-norm.
#include <kiln/nn/init.h>
#include <kiln/nn/transformer.h>

#include <limits>

namespace kiln::nn {
namespace {

const TransformerLayerOptions& checked(const TransformerLayerOptions& o, const char* who) {
  KILN_CHECK(o.d_model > 0 && o.nhead > 0 && o.dim_feedforward > 0, who,
             ": d_model, nhead and dim_feedforward must be positive, got ", o.d_model, ", ", o.nhead, " and ",
             o.dim_feedforward);
  KILN_CHECK_HINT(o.activation == "relu" || o.activation == "gelu", "use \"relu\" or \"gelu\"", who,
                  ": activation should be relu or gelu, not '", o.activation, "'");
  return o;
}

MultiheadAttention attention(const TransformerLayerOptions& o) {
  return MultiheadAttention(MultiheadAttentionOptions{o.d_model, o.nhead, o.dropout, o.bias, o.batch_first});
}
LayerNorm layer_norm_of(const TransformerLayerOptions& o) {
  return LayerNorm(LayerNormOptions{{o.d_model}, o.layer_norm_eps, true, o.bias});
}

// linear2(dropout(activation(linear1(x)))).
Tensor feed_forward(const TransformerLayerOptions& o, Linear& linear1, Dropout& dropout, Linear& linear2,
                    const Tensor& x) {
  Tensor h = linear1(x);
  h = o.activation == "gelu" ? gelu(h) : relu(h);
  return linear2(dropout(h));
}

// x + block(norm(x)) (norm_first) or norm(x + block(x)).
template <class F>
Tensor residual(bool norm_first, LayerNorm& norm, const Tensor& x, F&& block) {
  return norm_first ? add(x, block(norm(x))) : norm(add(x, block(x)));
}

// num_layers layers made by make(), every one loaded with the first one's weights (torch copies one).
template <class Layer>
ModuleList copies(const TransformerLayerOptions& o, int64_t num_layers, const char* who) {
  KILN_CHECK(num_layers > 0, who, ": num_layers must be positive, got ", num_layers);
  ModuleList layers;
  Layer first(o);
  layers->push_back(first);
  for (int64_t i = 1; i < num_layers; ++i) {
    Layer next(o);
    next->load_state_dict(first->state_dict());
    layers->push_back(next);
  }
  return layers;
}

}  // namespace

// ------------------------------------------------------------------------------------ encoder
TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerLayerOptions& o)
    : options(checked(o, "TransformerEncoderLayer")),
      self_attn(register_module("self_attn", attention(o))),
      linear1(register_module("linear1", Linear(LinearOptions{o.d_model, o.dim_feedforward, o.bias}))),
      linear2(register_module("linear2", Linear(LinearOptions{o.dim_feedforward, o.d_model, o.bias}))),
      norm1(register_module("norm1", layer_norm_of(o))),
      norm2(register_module("norm2", layer_norm_of(o))),
      dropout(register_module("dropout", Dropout(o.dropout))),
      dropout1(register_module("dropout1", Dropout(o.dropout))),
      dropout2(register_module("dropout2", Dropout(o.dropout))) {}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = residual(options.norm_first, norm1, src, [&](const Tensor& h) {
    return dropout1(self_attn->forward(h, h, h, src_mask, src_key_padding_mask, is_causal));
  });
  return residual(options.norm_first, norm2, x, [&](const Tensor& h) {
    return dropout2(feed_forward(options, linear1, dropout, linear2, h));
  });
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerLayerOptions& layer, int64_t num_layers,
                                               bool final_norm)
    : layers(register_module("layers", copies<TransformerEncoderLayer>(layer, num_layers, "TransformerEncoder"))) {
  if (final_norm) norm = register_module("norm", layer_norm_of(layer));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerEncoderLayer>(i)->forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm(x) : x;
}

// ------------------------------------------------------------------------------------ decoder
TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerLayerOptions& o)
    : options(checked(o, "TransformerDecoderLayer")),
      self_attn(register_module("self_attn", attention(o))),
      multihead_attn(register_module("multihead_attn", attention(o))),
      linear1(register_module("linear1", Linear(LinearOptions{o.d_model, o.dim_feedforward, o.bias}))),
      linear2(register_module("linear2", Linear(LinearOptions{o.dim_feedforward, o.d_model, o.bias}))),
      norm1(register_module("norm1", layer_norm_of(o))),
      norm2(register_module("norm2", layer_norm_of(o))),
      norm3(register_module("norm3", layer_norm_of(o))),
      dropout(register_module("dropout", Dropout(o.dropout))),
      dropout1(register_module("dropout1", Dropout(o.dropout))),
      dropout2(register_module("dropout2", Dropout(o.dropout))),
      dropout3(register_module("dropout3", Dropout(o.dropout))) {}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                            bool memory_is_causal) {
  Tensor x = residual(options.norm_first, norm1, tgt, [&](const Tensor& h) {
    return dropout1(self_attn->forward(h, h, h, tgt_mask, tgt_key_padding_mask, tgt_is_causal));
  });
  x = residual(options.norm_first, norm2, x, [&](const Tensor& h) {
    return dropout2(multihead_attn->forward(h, memory, memory, memory_mask, memory_key_padding_mask, memory_is_causal));
  });
  return residual(options.norm_first, norm3, x, [&](const Tensor& h) {
    return dropout3(feed_forward(options, linear1, dropout, linear2, h));
  });
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerLayerOptions& layer, int64_t num_layers,
                                               bool final_norm)
    : layers(register_module("layers", copies<TransformerDecoderLayer>(layer, num_layers, "TransformerDecoder"))) {
  if (final_norm) norm = register_module("norm", layer_norm_of(layer));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    x = layers->at<TransformerDecoderLayer>(i)->forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                        memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  return norm ? norm(x) : x;
}

// -------------------------------------------------------------------------------- Transformer
TransformerImpl::TransformerImpl(const TransformerOptions& o)
    : options(o),
      encoder(register_module("encoder", TransformerEncoder(o.layer, o.num_encoder_layers, true))),
      decoder(register_module("decoder", TransformerDecoder(o.layer, o.num_decoder_layers, true))) {
  for (Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask) {
  const int64_t batch_dim = options.layer.batch_first ? 0 : 1;
  KILN_CHECK(src.dim() != 3 || src.size(batch_dim) == tgt.size(batch_dim),
             "Transformer: the batch number of src and tgt must be equal, got ", src.size(batch_dim), " and ",
             tgt.size(batch_dim));
  Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  return triu(full({sz, sz}, -std::numeric_limits<double>::infinity()), 1);
}

}  // namespace kiln::nn
