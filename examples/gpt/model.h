// The GPT-2-style model of the benchmark workloads (../shared/bench/workloads.md): pre-norm
// blocks of causal self-attention and a tanh-GELU MLP, learned position embeddings, and an output
// head tied to the token embedding. The same layers, shapes and dtypes as the peer's model code.
#pragma once
#include <kiln/kiln.h>
#include <kiln/nn.h>

namespace gpt {

using namespace kiln;

struct Config {
  int64_t vocab = 50304;
  int64_t ctx = 1024;
  int64_t d = 768;
  int64_t heads = 12;
  int64_t layers = 12;
  double dropout = 0.0;
};

class BlockImpl : public nn::Module {
 public:
  explicit BlockImpl(const Config& c)
      : heads(c.heads),
        ln1(register_module("ln1", nn::LayerNorm(c.d))),
        ln2(register_module("ln2", nn::LayerNorm(c.d))),
        qkv(register_module("qkv", nn::Linear(c.d, 3 * c.d))),
        proj(register_module("proj", nn::Linear(c.d, c.d))),
        fc(register_module("fc", nn::Linear(c.d, 4 * c.d))),
        fc2(register_module("fc2", nn::Linear(4 * c.d, c.d))) {}

  Tensor forward(const Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
    TensorList parts = qkv(ln1(x)).split(C, 2);
    for (Tensor& t : parts) t = t.view({B, T, heads, C / heads}).transpose(1, 2);
    Tensor y = scaled_dot_product_attention(parts[0], parts[1], parts[2], {}, 0.0, /*is_causal=*/true);
    Tensor h = x + proj(y.transpose(1, 2).reshape({B, T, C}));
    return h + fc2(gelu(fc(ln2(h)), "tanh"));
  }

  int64_t heads;
  nn::LayerNorm ln1, ln2;
  nn::Linear qkv, proj, fc, fc2;
};
KILN_MODULE(Block);

class GPTImpl : public nn::Module {
 public:
  explicit GPTImpl(const Config& c)
      : config(c),
        wte(register_module("wte", nn::Embedding(c.vocab, c.d))),
        wpe(register_module("wpe", nn::Embedding(c.ctx, c.d))),
        blocks(register_module("blocks", nn::ModuleList())),
        lnf(register_module("lnf", nn::LayerNorm(c.d))),
        head(register_module("head", nn::Linear(nn::LinearOptions{.in_features = c.d, .out_features = c.vocab, .bias = false}))) {
    for (int64_t i = 0; i < c.layers; ++i) blocks->push_back(Block(c));
    head->weight = wte->weight;  // tied: one parameter
  }

  // GPT-2's initialization: N(0, 0.02) weights for linear layers and embeddings, zero biases, and
  // the residual projections scaled down by sqrt(2 * layers). (PyTorch's defaults give the tied
  // head N(0, 1) logits with a loss far above log(vocab) at the start.)
  void init_gpt2_weights() {
    for (auto& [name, p] : named_parameters()) {
      const bool residual = name.ends_with("proj.weight") || name.ends_with("fc2.weight");
      if (name.ends_with(".bias") && !name.starts_with("ln") && name.find(".ln") == std::string::npos)
        nn::init::zeros_(p);
      else if (name.ends_with("weight") && p.dim() == 2)
        nn::init::normal_(p, 0.0, residual ? 0.02 / std::sqrt(2.0 * double(config.layers)) : 0.02);
    }
  }

  // Logits [B, T, vocab] for token ids [B, T].
  Tensor forward(const Tensor& idx) {
    const int64_t T = idx.size(1);
    KILN_CHECK_HINT(T <= config.ctx, "crop the input to the context length", "GPT: sequence of ", T,
                    " tokens is longer than the context (", config.ctx, ")");
    Tensor x = wte(idx) + wpe(arange(0, T, 1, kInt64, idx.device()));
    for (size_t i = 0; i < blocks->size(); ++i) x = blocks->at<Block>(i)(x);
    return head(lnf(x));
  }

  // Mean cross entropy of the next-token predictions, computed in float32.
  Tensor loss(const Tensor& idx, const Tensor& targets) {
    Tensor logits = forward(idx);
    return cross_entropy(logits.to(kFloat32).view({-1, logits.size(-1)}), targets.view({-1}));
  }

  Config config;
  nn::Embedding wte, wpe;
  nn::ModuleList blocks;
  nn::LayerNorm lnf;
  nn::Linear head;
};
KILN_MODULE(GPT);

}  // namespace gpt
