// Linear, Embedding, Dropout and activation modules.
#include <kiln/nn/init.h>
#include <kiln/nn/linear.h>

#include <cmath>

namespace kiln::nn {
namespace {
std::string b(bool v) { return v ? "true" : "false"; }
}  // namespace

static LinearOptions checked(const LinearOptions& o) {
  KILN_CHECK(o.in_features >= 0 && o.out_features >= 0, "Linear: expected non-negative in_features and out_features, got ",
             o.in_features, " and ", o.out_features);
  return o;
}

LinearImpl::LinearImpl(const LinearOptions& o)
    : options(checked(o)),
      weight(register_parameter("weight", kiln::empty({o.out_features, o.in_features}))),
      bias(register_parameter("bias", o.bias ? kiln::empty({o.out_features}) : Tensor())) {
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = weight.size(1);
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) { return linear(input, weight, bias); }

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features) + ", out_features=" +
         std::to_string(options.out_features) + ", bias=" + b(bias.defined());
}

static EmbeddingOptions checked(EmbeddingOptions o) {
  KILN_CHECK(o.num_embeddings >= 0 && o.embedding_dim >= 0,
             "Embedding: expected non-negative num_embeddings and embedding_dim, got ", o.num_embeddings, " and ",
             o.embedding_dim);
  if (o.padding_idx) {
    KILN_CHECK(*o.padding_idx < o.num_embeddings && *o.padding_idx >= -o.num_embeddings,
               "Embedding: padding_idx ", *o.padding_idx, " is out of range for ", o.num_embeddings, " embeddings");
    if (*o.padding_idx < 0) *o.padding_idx += o.num_embeddings;
  }
  return o;
}

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o)
    : options(checked(o)), weight(register_parameter("weight", kiln::empty({o.num_embeddings, o.embedding_dim}))) {
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx) {
    NoGradGuard no_grad;
    select(weight, 0, *options.padding_idx).fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return embedding(indices, weight, options.padding_idx); }

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings) + ", " + std::to_string(options.embedding_dim);
  if (options.padding_idx) s += ", padding_idx=" + std::to_string(*options.padding_idx);
  return s;
}

DropoutImpl::DropoutImpl(const DropoutOptions& o) : options(o) {
  KILN_CHECK(o.p >= 0 && o.p <= 1, "Dropout: probability has to be between 0 and 1, got ", o.p);
}

Tensor DropoutImpl::forward(const Tensor& input) { return dropout(input, options.p, is_training()); }

std::string DropoutImpl::extra_repr() const { return "p=" + detail::cat(options.p); }

GELUImpl::GELUImpl(const GELUOptions& o) : options(o) {
  KILN_CHECK(o.approximate == "none" || o.approximate == "tanh",
             "GELU: approximate must be \"none\" or \"tanh\", got \"", o.approximate, "\"");
}

Tensor GELUImpl::forward(const Tensor& input) { return gelu(input, options.approximate); }

std::string GELUImpl::extra_repr() const { return "approximate='" + options.approximate + "'"; }

Tensor ReLUImpl::forward(const Tensor& input) { return relu(input); }
Tensor SiLUImpl::forward(const Tensor& input) { return silu(input); }
Tensor TanhImpl::forward(const Tensor& input) { return tanh(input); }
Tensor SigmoidImpl::forward(const Tensor& input) { return sigmoid(input); }

}  // namespace kiln::nn
