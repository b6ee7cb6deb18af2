// Linear, Embedding, Dropout and the activation modules.
#pragma once
#include <kiln/nn/module.h>

#include <optional>
#include <string>

namespace kiln::nn {

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
};
// y = x W^T + b. weight (out, in): kaiming_uniform(a=sqrt(5)); bias U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true)
      : LinearImpl(LinearOptions{in_features, out_features, bias}) {}
  void reset_parameters();
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  LinearOptions options;
  Tensor& weight;
  Tensor& bias;  // undefined when options.bias is false
};
KILN_MODULE(Linear);

struct EmbeddingOptions {
  int64_t num_embeddings = 0;
  int64_t embedding_dim = 0;
  std::optional<int64_t> padding_idx = std::nullopt;  // negative counts from the end; that row starts at 0 and gets no gradient
};
// A lookup table (num_embeddings, embedding_dim), initialized N(0, 1).
class EmbeddingImpl : public Module {
 public:
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions{num_embeddings, embedding_dim, std::nullopt}) {}
  void reset_parameters();
  Tensor forward(const Tensor& indices);
  std::string extra_repr() const override;
  EmbeddingOptions options;
  Tensor& weight;
};
KILN_MODULE(Embedding);

struct DropoutOptions {
  double p = 0.5;
};
// Zeroes elements with probability p and scales the rest by 1/(1-p) in training mode; identity in eval.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  explicit DropoutImpl(double p) : DropoutImpl(DropoutOptions{p}) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  DropoutOptions options;
};
KILN_MODULE(Dropout);

struct GELUOptions {
  std::string approximate = "none";  // or "tanh"
};
class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {});
  explicit GELUImpl(std::string approximate) : GELUImpl(GELUOptions{std::move(approximate)}) {}
  Tensor forward(const Tensor& input);
  std::string extra_repr() const override;
  GELUOptions options;
};
KILN_MODULE(GELU);

class ReLUImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
KILN_MODULE(ReLU);

class SiLUImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
KILN_MODULE(SiLU);

class TanhImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
KILN_MODULE(Tanh);

class SigmoidImpl : public Module {
 public:
  Tensor forward(const Tensor& input);
};
KILN_MODULE(Sigmoid);

class IdentityImpl : public Module {
 public:
  Tensor forward(const Tensor& input) { return input; }
};
KILN_MODULE(Identity);

}  // namespace kiln::nn
