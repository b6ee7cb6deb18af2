// kiln::nn: module registration and views, state dicts, dtype moves, every layer against an
// independent float64 reference, initializer distributions, gradients reaching all parameters.
#include <kiln/nn.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "support/test_util.h"

namespace kiln::test {
namespace {

using namespace kiln::nn;

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

// ------------------------------------------------------------------ a small GPT-like model
class BlockImpl : public Module {
 public:
  BlockImpl(int64_t d, int64_t h)
      : ln1(register_module("ln1", LayerNorm(d))),
        attn(register_module("attn", MultiheadAttention(MultiheadAttentionOptions{
                                         .embed_dim = d, .num_heads = h, .batch_first = true}))),
        ln2(register_module("ln2", LayerNorm(d))),
        mlp(register_module("mlp", Sequential(Linear(d, 4 * d), GELU("tanh"), Linear(4 * d, d)))) {}
  Tensor forward(const Tensor& x) {
    Tensor y = ln1(x);
    Tensor a = attn->forward(y, y, y, {}, {}, /*is_causal=*/true);
    Tensor z = x + a;
    return z + mlp(ln2(z));
  }
  LayerNorm ln1;
  MultiheadAttention attn;
  LayerNorm ln2;
  Sequential mlp;
};
KILN_MODULE(Block);

class TinyGPTImpl : public Module {
 public:
  TinyGPTImpl(int64_t vocab, int64_t ctx, int64_t d, int64_t h, int64_t layers) {
    wte = register_module("wte", Embedding(vocab, d));
    wpe = register_module("wpe", Embedding(ctx, d));
    blocks = register_module("blocks", ModuleList());
    for (int64_t i = 0; i < layers; ++i) blocks->push_back(Block(d, h));
    lnf = register_module("lnf", LayerNorm(d));
    head = register_module("head", Linear(LinearOptions{.in_features = d, .out_features = vocab, .bias = false}));
    head->weight = wte->weight;  // tied
  }
  Tensor forward(const Tensor& idx) {
    const int64_t T = idx.size(1);
    Tensor x = wte(idx) + wpe(arange(0, T, 1, kInt64));
    for (auto& b : *blocks) x = b->as<BlockImpl>()->forward(x);
    return head(lnf(x));
  }
  Embedding wte{nullptr}, wpe{nullptr};
  ModuleList blocks;
  LayerNorm lnf{nullptr};
  Linear head{nullptr};
};
KILN_MODULE(TinyGPT);

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (auto& [n, t] : v) out.push_back(n);
  return out;
}

TEST(NnModule, RegistrationAndDottedNames) {
  TinyGPT m(11, 8, 8, 2, 2);
  std::vector<std::string> expected{"wte.weight", "wpe.weight"};
  for (std::string b : {"blocks.0.", "blocks.1."}) {
    for (std::string n : {"ln1.weight", "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias",
                          "attn.out_proj.weight", "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight",
                          "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"})
      expected.push_back(b + n);
  }
  expected.push_back("lnf.weight");
  expected.push_back("lnf.bias");
  // head.weight is wte.weight: listed once, under its first name.
  EXPECT_EQ(names_of(m->named_parameters()), expected);
  EXPECT_EQ(m->parameters().size(), expected.size());
  for (auto& [n, p] : m->named_parameters()) {
    EXPECT_TRUE(p.is_leaf()) << n;
    EXPECT_TRUE(p.requires_grad()) << n;
  }
  EXPECT_TRUE(m->parameter("blocks.1.attn.out_proj.weight").is_same(
      m->blocks->at<Block>(1)->attn->out_proj->weight));
  EXPECT_TRUE(m->parameter("head.weight").is_same(m->wte->weight));
  EXPECT_EQ(names_of(m->named_parameters(/*recurse=*/false)), std::vector<std::string>{});
  EXPECT_EQ(names_of(m->blocks->at<BlockImpl>(0)->ln1->named_parameters(false)),
            (std::vector<std::string>{"weight", "bias"}));

  std::vector<std::string> mods;
  for (auto& [n, mod] : m->named_modules()) mods.push_back(n);
  EXPECT_EQ(mods.front(), "");
  EXPECT_EQ(mods[1], "wte");
  EXPECT_EQ(mods[3], "blocks");
  EXPECT_EQ(mods[4], "blocks.0");
  EXPECT_EQ(mods[5], "blocks.0.ln1");
  EXPECT_EQ(mods[7], "blocks.0.attn.out_proj");
  EXPECT_EQ(mods.size(), 1u + 2 + 1 + 2 * (1 + 5 + 3) + 2);
  EXPECT_EQ(m->named_children().size(), 5u);
  EXPECT_TRUE(m->submodule("blocks.1.mlp.0") == m->blocks->at<BlockImpl>(1)->mlp[0]);

  // Buffers: BatchNorm2d's running statistics, with dotted names.
  auto seq = Sequential(Conv2d(2, 3, 3), BatchNorm2d(3));
  EXPECT_EQ(names_of(seq->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(seq->buffers().size(), 3u);
  EXPECT_FALSE(seq->buffer("1.running_var").requires_grad());
}

TEST(NnModule, RegistrationErrors) {
  auto m = std::make_shared<Module>();
  m->register_parameter("w", zeros({2}));
  EXPECT_THROW(m->register_buffer("w", zeros({2})), kiln::Error);
  EXPECT_THROW(m->register_module("w", Linear(2, 2)), kiln::Error);
  EXPECT_THROW(m->register_parameter("a.b", zeros({2})), kiln::Error);
  EXPECT_THROW(m->register_parameter("", zeros({2})), kiln::Error);
  EXPECT_THROW(m->register_parameter("i", zeros({2}, kInt64)), kiln::Error);
  EXPECT_NO_THROW(m->register_parameter("i", zeros({2}, kInt64), /*requires_grad=*/false));
  EXPECT_THROW(m->register_module("null", Linear(nullptr)), kiln::Error);
  EXPECT_THROW(m->parameter("nope"), kiln::Error);
  EXPECT_THROW(m->submodule("a.b"), kiln::Error);
  EXPECT_THROW(m->as<LinearImpl>(), kiln::Error);
  LinearImpl on_stack(2, 2);
  EXPECT_THROW(on_stack.as<LinearImpl>(), kiln::Error);
  EXPECT_EQ(on_stack.named_modules().size(), 1u);
  Linear empty_holder(nullptr);
  EXPECT_THROW(empty_holder->forward(zeros({1, 2})), kiln::Error);
  // Re-registering a parameter replaces it (and a tensor with history becomes a detached leaf).
  Tensor x = zeros({2});
  x.requires_grad_();
  Tensor& slot = m->register_parameter("w", x * 2);
  EXPECT_TRUE(slot.is_leaf());
  EXPECT_TRUE(slot.requires_grad());
  EXPECT_TRUE(m->parameter("w").is_same(slot));
  EXPECT_EQ(m->parameters().size(), 2u);  // w and i
  // Option checks.
  EXPECT_THROW(Linear(-1, 2), kiln::Error);
  EXPECT_THROW(Conv2d(Conv2dOptions{.in_channels = 3, .out_channels = 4, .kernel_size = 3, .groups = 2}), kiln::Error);
  EXPECT_THROW(MultiheadAttention(10, 3), kiln::Error);
  EXPECT_THROW(Dropout(1.5), kiln::Error);
  EXPECT_THROW(GELU("fast"), kiln::Error);
  EXPECT_THROW(Embedding(EmbeddingOptions{.num_embeddings = 4, .embedding_dim = 2, .padding_idx = 4}), kiln::Error);
  EXPECT_THROW(MSELoss(ReductionOptions{.reduction = "avg"}), kiln::Error);
}

TEST(NnModule, TrainEvalPropagates) {
  TinyGPT m(11, 8, 8, 2, 2);
  for (auto& mod : m->modules()) EXPECT_TRUE(mod->is_training());
  m->eval();
  for (auto& [n, mod] : m->named_modules()) EXPECT_FALSE(mod->is_training()) << n;
  m->train();
  for (auto& [n, mod] : m->named_modules()) EXPECT_TRUE(mod->is_training()) << n;
  m->blocks->train(false);
  EXPECT_TRUE(m->is_training());
  EXPECT_FALSE(m->blocks->at<BlockImpl>(1)->mlp[2]->is_training());
}

TEST(NnModule, StateDictRoundTrip) {
  manual_seed(1);
  TinyGPT a(11, 8, 8, 2, 2);
  manual_seed(2);
  TinyGPT b(11, 8, 8, 2, 2);
  auto sd = a->state_dict();
  EXPECT_EQ(sd.size(), a->parameters().size() + 1);  // + head.weight, tied to wte.weight
  EXPECT_TRUE(sd.count("head.weight") && sd.count("blocks.1.mlp.2.bias"));
  EXPECT_NE(vals(a->parameter("blocks.0.mlp.0.weight")), vals(b->parameter("blocks.0.mlp.0.weight")));
  Tensor b_w = b->parameter("blocks.0.mlp.0.weight");  // the same tensor keeps receiving the values
  b->load_state_dict(sd);
  for (auto& [n, p] : a->named_parameters()) EXPECT_EQ(vals(p), vals(b->parameter(n))) << n;
  EXPECT_TRUE(b_w.is_same(b->parameter("blocks.0.mlp.0.weight")));
  EXPECT_TRUE(b_w.requires_grad() && b_w.is_leaf());
  Tensor idx = tensor<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(vals(a(idx)), vals(b(idx)));

  // BatchNorm buffers travel too.
  BatchNorm2d bn1(2), bn2(2);
  bn1(random_tensor({3, 2, 2, 2}, kFloat32));
  bn2->load_state_dict(bn1->state_dict());
  EXPECT_EQ(vals(bn2->running_mean), vals(bn1->running_mean));
  EXPECT_EQ(bn2->num_batches_tracked.item<int64_t>(), 1);
}

TEST(NnModule, StateDictErrors) {
  Linear a(3, 2), b(3, 2);
  const auto before = vals(b->weight);
  auto sd = a->state_dict();
  auto missing = sd;
  missing.erase("bias");
  EXPECT_THROW(b->load_state_dict(missing), kiln::Error);
  auto extra = sd;
  extra["extra"] = zeros({1});
  EXPECT_THROW(b->load_state_dict(extra), kiln::Error);
  auto shape = sd;
  shape["weight"] = zeros({2, 4});
  EXPECT_THROW(b->load_state_dict(shape, /*strict=*/false), kiln::Error);
  auto dtype = sd;
  dtype["weight"] = zeros({2, 3}, kFloat64);
  EXPECT_THROW(b->load_state_dict(dtype), kiln::Error);
  EXPECT_EQ(vals(b->weight), before);  // nothing copied when anything is wrong
  try {
    b->load_state_dict(extra);
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected keys: extra"), std::string::npos) << e.what();
  }
  try {
    b->load_state_dict(missing);
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing keys: bias"), std::string::npos) << e.what();
  }
  // Non-strict: loads what matches, ignores the rest.
  b->load_state_dict(missing, /*strict=*/false);
  EXPECT_EQ(vals(b->weight), vals(a->weight));
  extra.erase("bias");
  b->load_state_dict(extra, /*strict=*/false);
}

TEST(NnModule, ToDTypeKeepsLeavesTiesAndGrads) {
  TinyGPT m(11, 8, 8, 2, 1);
  Tensor idx = tensor<int64_t>({1, 2, 3}, {1, 3});
  m(idx).sum().backward();
  Tensor w = m->parameter("blocks.0.mlp.0.weight");
  const auto w32 = vals(w), g32 = vals(w.grad());
  m->to(kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);  // the handle taken before the move sees the new dtype
  EXPECT_EQ(vals(w), w32);
  EXPECT_EQ(w.grad().dtype(), kFloat64);
  EXPECT_EQ(vals(w.grad()), g32);
  for (auto& [n, p] : m->named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << n;
    EXPECT_TRUE(p.is_leaf() && p.requires_grad()) << n;
  }
  EXPECT_TRUE(m->head->weight.is_same(m->wte->weight));
  EXPECT_EQ(m(idx).dtype(), kFloat64);
  m->to(kBFloat16);
  EXPECT_EQ(m(idx).dtype(), kBFloat16);

  BatchNorm2d bn(3);
  bn->to(kFloat16);
  EXPECT_EQ(bn->running_var.dtype(), kFloat16);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);  // integer buffers stay
  Tensor user_w = ones({3});
  CrossEntropyLoss ce(CrossEntropyLossOptions{.weight = user_w});
  ce->to(kFloat64);
  EXPECT_EQ(ce->weight.dtype(), kFloat64);
  EXPECT_EQ(user_w.dtype(), kFloat32);  // buffers are replaced, the caller's tensor stays
  EXPECT_THROW(bn->to(kInt32), kiln::Error);
  EXPECT_THROW(bn->to(Device("cuda")), kiln::Error);
  EXPECT_NO_THROW(bn->to(kCPU));
}

TEST(NnModule, ZeroGradAndApply) {
  Sequential m(Linear(3, 4), ReLU(), Linear(4, 1));
  m(random_tensor({5, 3}, kFloat32)).sum().backward();
  for (auto& p : m->parameters()) EXPECT_TRUE(p.grad().defined());
  m->zero_grad();
  for (auto& p : m->parameters()) EXPECT_FALSE(p.grad().defined());
  int linears = 0;
  m->apply([&](Module& mod) { linears += mod.type_name() == "Linear"; });
  EXPECT_EQ(linears, 2);
}

TEST(NnModule, Print) {
  Sequential m(Linear(4, 8), GELU(), Dropout(0.1), Linear(LinearOptions{.in_features = 8, .out_features = 2, .bias = false}));
  EXPECT_EQ(m->str(),
            "Sequential(\n"
            "  (0): Linear(in_features=4, out_features=8, bias=true)\n"
            "  (1): GELU(approximate='none')\n"
            "  (2): Dropout(p=0.1)\n"
            "  (3): Linear(in_features=8, out_features=2, bias=false)\n"
            ")");
  Block b(8, 2);
  const std::string s = b->str();
  EXPECT_EQ(s.rfind("Block(\n  (ln1): LayerNorm((8,), eps=1e-05, elementwise_affine=true)\n", 0), 0u) << s;
  EXPECT_NE(s.find("  (attn): MultiheadAttention(\n    embed_dim=8, num_heads=2, dropout=0, batch_first=true\n"
                   "    (out_proj): Linear(in_features=8, out_features=8, bias=true)\n  )\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  (mlp): Sequential(\n    (0): Linear(in_features=8, out_features=32, bias=true)\n"),
            std::string::npos)
      << s;
  std::ostringstream os;
  os << Conv2d(Conv2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = {3, 5}, .stride = 2, .padding = 1});
  EXPECT_EQ(os.str(), "Conv2d(2, 4, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1))");
}

TEST(NnModule, ModuleDictAndList) {
  ModuleDict d;
  d->insert("enc", Linear(2, 3));
  d->insert("act", ReLU());
  EXPECT_TRUE(d->contains("enc"));
  EXPECT_FALSE(d->contains("dec"));
  EXPECT_EQ(d->keys(), (std::vector<std::string>{"enc", "act"}));
  EXPECT_EQ(d->at<Linear>("enc")->options.out_features, 3);
  EXPECT_THROW(d->ptr("dec"), kiln::Error);
  EXPECT_THROW(d->at<Linear>("act"), kiln::Error);
  EXPECT_EQ(names_of(d->named_parameters()), (std::vector<std::string>{"enc.weight", "enc.bias"}));
  ModuleList l(Linear(2, 2), Linear(2, 2));
  EXPECT_EQ(l->size(), 2u);
  EXPECT_THROW(l->ptr(2), kiln::Error);
}

// ------------------------------------------------------------------ layers vs float64 references

// y[r, o] = sum_i x[r, i] w[o, i] + b[o]
std::vector<double> linear_ref(const std::vector<double>& x, int64_t rows, const std::vector<double>& w,
                               const std::vector<double>& b, int64_t in, int64_t out) {
  std::vector<double> y(size_t(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[o];
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

TEST(NnLayers, Linear) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (bool bias : {true, false}) {
      Linear fc(LinearOptions{.in_features = 5, .out_features = 3, .bias = bias});
      fc->to(dt);
      std::vector<double> xv;
      Tensor x = random_tensor({2, 4, 5}, dt, &xv, "transposed");
      Tensor y = fc(x);
      EXPECT_EQ(y.sizes(), (Shape{2, 4, 3}));
      expect_close(y, linear_ref(xv, 8, vals(fc->weight), bias ? vals(fc->bias) : std::vector<double>{}, 5, 3),
                   tolerance(dt) * 4, tolerance(dt) * 4, "linear");
      EXPECT_EQ(bias, fc->bias.defined());
    }
  }
  EXPECT_THROW(Linear(5, 3)(zeros({2, 4})), kiln::Error);
}

TEST(NnLayers, EmbeddingPaddingIdx) {
  Embedding e(EmbeddingOptions{.num_embeddings = 6, .embedding_dim = 3, .padding_idx = -2});
  EXPECT_EQ(*e->options.padding_idx, 4);
  auto w = vals(e->weight);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(w[4 * 3 + j], 0.0);
  Tensor idx = tensor<int64_t>({0, 4, 5, 4, 2, 0}, {2, 3});
  Tensor y = e(idx);
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 3}));
  std::vector<double> ref;
  for (int64_t i : {0, 4, 5, 4, 2, 0})
    for (int j = 0; j < 3; ++j) ref.push_back(w[i * 3 + j]);
  expect_close(y, ref, 0, 0, "embedding");
  y.sum().backward();
  auto g = vals(e->weight.grad());
  const double count[6] = {2, 0, 1, 0, 0, 1};  // row 4 is padding: no gradient
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(g[i * 3 + j], count[i]) << i;
  EXPECT_THROW(e(tensor<int64_t>({6})), kiln::Error);
}

TEST(NnLayers, LayerNormAndRMSNorm) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    LayerNorm ln(LayerNormOptions{.normalized_shape = {2, 3}, .eps = 1e-3});
    init::normal_(ln->weight);
    init::normal_(ln->bias);
    RMSNorm rms(RMSNormOptions{.normalized_shape = {2, 3}, .eps = 1e-4});
    init::normal_(rms->weight);
    ln->to(dt);
    rms->to(dt);
    std::vector<double> xv;
    Tensor x = random_tensor({4, 2, 3}, dt, &xv, "strided");
    auto w = vals(ln->weight), b = vals(ln->bias), rw = vals(rms->weight);
    std::vector<double> ref(xv.size()), rref(xv.size());
    for (int r = 0; r < 4; ++r) {
      double mu = 0, var = 0, ms = 0;
      for (int i = 0; i < 6; ++i) mu += xv[r * 6 + i] / 6;
      for (int i = 0; i < 6; ++i) var += (xv[r * 6 + i] - mu) * (xv[r * 6 + i] - mu) / 6;
      for (int i = 0; i < 6; ++i) ms += xv[r * 6 + i] * xv[r * 6 + i] / 6;
      for (int i = 0; i < 6; ++i) {
        ref[r * 6 + i] = (xv[r * 6 + i] - mu) / std::sqrt(var + 1e-3) * w[i] + b[i];
        rref[r * 6 + i] = xv[r * 6 + i] / std::sqrt(ms + 1e-4) * rw[i];
      }
    }
    const double tol = dt == kBFloat16 ? 3e-2 : tolerance(dt) * 10;
    expect_close(ln(x), ref, tol, tol, "layer_norm");
    expect_close(rms(x), rref, tol, tol, "rms_norm");
  }
  LayerNorm plain(LayerNormOptions{.normalized_shape = {4}, .elementwise_affine = false});
  EXPECT_TRUE(plain->parameters().empty());
  LayerNorm nobias(LayerNormOptions{.normalized_shape = {4}, .bias = false});
  EXPECT_EQ(names_of(nobias->named_parameters()), std::vector<std::string>{"weight"});
  EXPECT_EQ(vals(LayerNorm(4)->weight), std::vector<double>(4, 1.0));
  EXPECT_EQ(vals(LayerNorm(4)->bias), std::vector<double>(4, 0.0));
  EXPECT_THROW(LayerNorm(4)(zeros({2, 5})), kiln::Error);
}

TEST(NnLayers, DropoutTrainEval) {
  Dropout d(0.25);
  Tensor x = ones({200, 100});
  auto y = vals(d(x));
  int64_t zeros_n = 0;
  for (double v : y) {
    if (v == 0) ++zeros_n;
    else EXPECT_NEAR(v, 1 / 0.75, 1e-6);
  }
  EXPECT_NEAR(double(zeros_n) / 20000, 0.25, 0.02);
  d->eval();
  EXPECT_EQ(vals(d(x)), vals(x));
  EXPECT_EQ(vals(Dropout(0.0)(x)), vals(x));
}

TEST(NnLayers, Activations) {
  for (DType dt : {kFloat32, kFloat64}) {
    std::vector<double> xv;
    Tensor x = random_tensor({3, 7}, dt, &xv, "transposed", -4, 4);
    std::vector<double> g, gt, r, s, th, sg;
    for (double v : xv) {
      g.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
      gt.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
      r.push_back(v > 0 ? v : 0);
      s.push_back(v / (1 + std::exp(-v)));
      th.push_back(std::tanh(v));
      sg.push_back(1 / (1 + std::exp(-v)));
    }
    const double tol = tolerance(dt) * 10;
    expect_close(GELU()(x), g, tol, tol, "gelu");
    expect_close(GELU(GELUOptions{.approximate = "tanh"})(x), gt, tol, tol, "gelu tanh");
    expect_close(ReLU()(x), r, tol, tol, "relu");
    expect_close(SiLU()(x), s, tol, tol, "silu");
    expect_close(Tanh()(x), th, tol, tol, "tanh");
    expect_close(Sigmoid()(x), sg, tol, tol, "sigmoid");
    EXPECT_TRUE(Identity()(x).is_same(x));
  }
}

// Direct convolution over (N, C, H, W) with zero padding.
std::vector<double> conv_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                             const Shape& ws, const std::vector<double>& b, const Conv2dOptions& o, Shape* out) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = (H + 2 * o.padding.h - o.dilation.h * (KH - 1) - 1) / o.stride.h + 1;
  const int64_t OW = (W + 2 * o.padding.w - o.dilation.w * (KW - 1) - 1) / o.stride.w + 1;
  *out = {N, O, OH, OW};
  std::vector<double> y(size_t(N * O * OH * OW));
  const int64_t og = O / o.groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = b.empty() ? 0 : b[oc];
          const int64_t g = oc / og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t iy = oy * o.stride.h - o.padding.h + ky * o.dilation.h;
                const int64_t ix = ox * o.stride.w - o.padding.w + kx * o.dilation.w;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                s += x[((n * C + g * Cg + c) * H + iy) * W + ix] * w[((oc * Cg + c) * KH + ky) * KW + kx];
              }
          y[((n * O + oc) * OH + oy) * OW + ox] = s;
        }
  (void)C;
  return y;
}

TEST(NnLayers, Conv2d) {
  const Conv2dOptions cases[] = {
      {.in_channels = 3, .out_channels = 4, .kernel_size = 3},
      {.in_channels = 4, .out_channels = 6, .kernel_size = {3, 2}, .stride = {2, 1}, .padding = {1, 2},
       .dilation = {1, 2}, .groups = 2, .bias = false},
  };
  for (const auto& o : cases) {
    for (DType dt : {kFloat32, kFloat64}) {
      Conv2d conv(o);
      conv->to(dt);
      EXPECT_EQ(conv->weight.sizes(), (Shape{o.out_channels, o.in_channels / o.groups, o.kernel_size.h, o.kernel_size.w}));
      std::vector<double> xv;
      Tensor x = random_tensor({2, o.in_channels, 7, 6}, dt, &xv, "transposed");
      Shape out;
      auto ref = conv_ref(xv, x.sizes(), vals(conv->weight), conv->weight.sizes(),
                          o.bias ? vals(conv->bias) : std::vector<double>{}, o, &out);
      Tensor y = conv(x);
      EXPECT_EQ(y.sizes(), out);
      expect_close(y, ref, tolerance(dt) * 20, tolerance(dt) * 20, "conv2d");
    }
  }
  EXPECT_THROW(Conv2d(3, 4, 3)(zeros({1, 2, 5, 5})), kiln::Error);
}

TEST(NnLayers, Pooling) {
  std::vector<double> xv;
  Tensor x = random_tensor({2, 3, 7, 6}, kFloat64, &xv);
  MaxPool2d mp(MaxPool2dOptions{.kernel_size = 3, .stride = 2, .padding = 1});
  AvgPool2d ap(AvgPool2dOptions{.kernel_size = {2, 3}, .count_include_pad = false});
  AvgPool2d ap2(2);
  // max: out 4x3 with padding 1 (-inf), avg: kernel == stride (2, 3), no padding: 3x2.
  std::vector<double> mref, aref, a2ref;
  for (int nc = 0; nc < 6; ++nc) {
    const double* p = xv.data() + nc * 42;
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        double m = -INFINITY;
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
            if (iy >= 0 && iy < 7 && ix >= 0 && ix < 6) m = std::max(m, p[iy * 6 + ix]);
          }
        mref.push_back(m);
      }
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 2; ++ox) {
        double s = 0;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 3; ++kx) s += p[(oy * 2 + ky) * 6 + ox * 3 + kx];
        aref.push_back(s / 6);
      }
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 3; ++ox) {
        double s = 0;
        for (int ky = 0; ky < 2; ++ky)
          for (int kx = 0; kx < 2; ++kx) s += p[(oy * 2 + ky) * 6 + ox * 2 + kx];
        a2ref.push_back(s / 4);
      }
  }
  Tensor my = mp(x), ay = ap(x), a2y = ap2(x);
  EXPECT_EQ(my.sizes(), (Shape{2, 3, 4, 3}));
  EXPECT_EQ(ay.sizes(), (Shape{2, 3, 3, 2}));
  EXPECT_EQ(a2y.sizes(), (Shape{2, 3, 3, 3}));
  expect_close(my, mref, 0, 0, "max_pool2d");
  expect_close(ay, aref, 1e-12, 1e-12, "avg_pool2d");
  expect_close(a2y, a2ref, 1e-12, 1e-12, "avg_pool2d 2");
}

TEST(NnLayers, BatchNorm2dRunningStats) {
  const int64_t N = 3, C = 2, HW = 4;
  for (std::optional<double> momentum : {std::optional<double>(0.3), std::optional<double>()}) {
    BatchNorm2d bn(BatchNorm2dOptions{.num_features = C, .eps = 1e-3, .momentum = momentum});
    bn->to(kFloat64);
    init::normal_(bn->weight);
    init::normal_(bn->bias);
    auto w = vals(bn->weight), b = vals(bn->bias);
    std::vector<double> rm(C, 0.0), rv(C, 1.0);
    for (int step = 1; step <= 3; ++step) {
      std::vector<double> xv;
      Tensor x = random_tensor({N, C, 2, 2}, kFloat64, &xv, step == 2 ? "transposed" : "contiguous");
      Tensor y = bn(x);
      std::vector<double> ref(xv.size());
      const double f = momentum ? *momentum : 1.0 / step;
      for (int c = 0; c < C; ++c) {
        double mu = 0, var = 0;
        for (int n = 0; n < N; ++n)
          for (int i = 0; i < HW; ++i) mu += xv[(n * C + c) * HW + i] / (N * HW);
        for (int n = 0; n < N; ++n)
          for (int i = 0; i < HW; ++i) var += std::pow(xv[(n * C + c) * HW + i] - mu, 2) / (N * HW);
        for (int n = 0; n < N; ++n)
          for (int i = 0; i < HW; ++i)
            ref[(n * C + c) * HW + i] = (xv[(n * C + c) * HW + i] - mu) / std::sqrt(var + 1e-3) * w[c] + b[c];
        rm[c] = (1 - f) * rm[c] + f * mu;
        rv[c] = (1 - f) * rv[c] + f * var * (N * HW) / (N * HW - 1.0);
      }
      expect_close(y, ref, 1e-10, 1e-10, "batch_norm train");
      expect_close(bn->running_mean, rm, 1e-12, 1e-12, "running_mean");
      expect_close(bn->running_var, rv, 1e-12, 1e-12, "running_var");
      EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), step);
    }
    // Eval: the running statistics, which stay put.
    bn->eval();
    std::vector<double> xv;
    Tensor x = random_tensor({2, C, 2, 2}, kFloat64, &xv);
    std::vector<double> ref(xv.size());
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < C; ++c)
        for (int i = 0; i < HW; ++i)
          ref[(n * C + c) * HW + i] = (xv[(n * C + c) * HW + i] - rm[c]) / std::sqrt(rv[c] + 1e-3) * w[c] + b[c];
    expect_close(bn(x), ref, 1e-10, 1e-10, "batch_norm eval");
    expect_close(bn->running_mean, rm, 1e-12, 1e-12, "running_mean after eval");
    EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 3);
  }
  // Without running statistics: batch statistics in both modes, no buffers.
  BatchNorm2d nb(BatchNorm2dOptions{.num_features = 2, .affine = false, .track_running_stats = false});
  EXPECT_TRUE(nb->buffers().empty());
  EXPECT_TRUE(nb->parameters().empty());
  nb->eval();
  std::vector<double> xv;
  Tensor x = random_tensor({2, 2, 1, 3}, kFloat64, &xv);
  std::vector<double> ref(xv.size());
  for (int c = 0; c < 2; ++c) {
    double mu = 0, var = 0;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) mu += xv[(n * 2 + c) * 3 + i] / 6;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) var += std::pow(xv[(n * 2 + c) * 3 + i] - mu, 2) / 6;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) ref[(n * 2 + c) * 3 + i] = (xv[(n * 2 + c) * 3 + i] - mu) / std::sqrt(var + 1e-5);
  }
  expect_close(nb(x), ref, 1e-10, 1e-10, "batch_norm no running stats");
  EXPECT_THROW(BatchNorm2d(3)(zeros({2, 3, 4})), kiln::Error);
  EXPECT_THROW(BatchNorm2d(3)(zeros({2, 2, 4, 4})), kiln::Error);
}

// nn.MultiheadAttention in float64 loops; x* are (N, len, E) batch-first; blocked(n, h, l, s) says
// whether a position is masked out; fmask adds to the scores.
std::vector<double> mha_ref(const std::vector<double>& xq, const std::vector<double>& xk,
                            const std::vector<double>& xv, int64_t N, int64_t L, int64_t S, int64_t E, int64_t H,
                            const std::vector<double>& W, const std::vector<double>& B, const std::vector<double>& Wo,
                            const std::vector<double>& Bo, const std::function<double(int64_t, int64_t, int64_t, int64_t)>& add_mask) {
  const int64_t D = E / H;
  auto proj = [&](const std::vector<double>& x, int64_t len, int64_t part) {
    std::vector<double> w(W.begin() + part * E * E, W.begin() + (part + 1) * E * E);
    std::vector<double> b(B.begin() + part * E, B.begin() + (part + 1) * E);
    return linear_ref(x, N * len, w, b, E, E);
  };
  auto q = proj(xq, L, 0), k = proj(xk, S, 1), v = proj(xv, S, 2);
  std::vector<double> o(size_t(N * L * E));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> sc(S);
        double mx = -INFINITY;
        for (int64_t s = 0; s < S; ++s) {
          double d = 0;
          for (int64_t j = 0; j < D; ++j) d += q[(n * L + l) * E + h * D + j] * k[(n * S + s) * E + h * D + j];
          sc[s] = d / std::sqrt(double(D)) + add_mask(n, h, l, s);
          mx = std::max(mx, sc[s]);
        }
        double z = 0;
        for (double& x : sc) z += (x = std::exp(x - mx));
        for (int64_t j = 0; j < D; ++j) {
          double acc = 0;
          for (int64_t s = 0; s < S; ++s) acc += sc[s] / z * v[(n * S + s) * E + h * D + j];
          o[(n * L + l) * E + h * D + j] = acc;
        }
      }
  return linear_ref(o, N * L, Wo, Bo, E, E);
}

// (N, len, E) values -> (len, N, E) order
std::vector<double> seq_first(const std::vector<double>& x, int64_t N, int64_t len, int64_t E) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t l = 0; l < len; ++l)
      for (int64_t e = 0; e < E; ++e) y[(l * N + n) * E + e] = x[(n * len + l) * E + e];
  return y;
}

TEST(NnLayers, MultiheadAttention) {
  const int64_t N = 2, L = 3, S = 4, E = 6, H = 2;
  const double inf = std::numeric_limits<double>::infinity();
  for (bool batch_first : {true, false}) {
    MultiheadAttention mha(MultiheadAttentionOptions{.embed_dim = E, .num_heads = H, .batch_first = batch_first});
    mha->to(kFloat64);
    EXPECT_EQ(vals(mha->in_proj_bias), std::vector<double>(3 * E, 0.0));
    EXPECT_EQ(vals(mha->out_proj->bias), std::vector<double>(E, 0.0));
    init::normal_(mha->in_proj_bias);
    init::normal_(mha->out_proj->bias);
    auto W = vals(mha->in_proj_weight), B = vals(mha->in_proj_bias), Wo = vals(mha->out_proj->weight),
         Bo = vals(mha->out_proj->bias);
    std::vector<double> q, k, v;  // batch-first values
    Tensor tq = random_tensor({N, L, E}, kFloat64, &q), tk = random_tensor({N, S, E}, kFloat64, &k),
           tv = random_tensor({N, S, E}, kFloat64, &v);
    auto layout = [&](const Tensor& t) { return batch_first ? t : t.transpose(0, 1); };
    auto unlayout = [&](const std::vector<double>& r, int64_t len) { return batch_first ? r : seq_first(r, N, len, E); };

    auto none = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };
    expect_close(mha->forward(layout(tq), layout(tk), layout(tv)),
                 unlayout(mha_ref(q, k, v, N, L, S, E, H, W, B, Wo, Bo, none), L), 1e-10, 1e-10, "mha");
    // Masks: bool attn_mask (true = blocked), key padding, float mask, causal.
    Tensor am = tensor<int64_t>({0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0}, {L, S}, kBool);
    Tensor kpm = tensor<int64_t>({0, 0, 0, 1, 0, 1, 0, 0}, {N, S}, kBool);
    auto amv = vals(am), kpv = vals(kpm);
    auto masked = [&](int64_t n, int64_t, int64_t l, int64_t s) {
      return (amv[l * S + s] != 0 || kpv[n * S + s] != 0) ? -inf : 0.0;
    };
    expect_close(mha->forward(layout(tq), layout(tk), layout(tv), am, kpm),
                 unlayout(mha_ref(q, k, v, N, L, S, E, H, W, B, Wo, Bo, masked), L), 1e-10, 1e-10, "mha masks");
    std::vector<double> fm;
    Tensor fmask = random_tensor({N * H, L, S}, kFloat64, &fm);
    auto fadd = [&](int64_t n, int64_t h, int64_t l, int64_t s) { return fm[((n * H + h) * L + l) * S + s]; };
    expect_close(mha->forward(layout(tq), layout(tk), layout(tv), fmask),
                 unlayout(mha_ref(q, k, v, N, L, S, E, H, W, B, Wo, Bo, fadd), L), 1e-10, 1e-10, "mha float mask");
    // Causal self-attention, alone (sdpa's path) and combined with a key padding mask.
    std::vector<double> xs;
    Tensor tx = random_tensor({N, L, E}, kFloat64, &xs);
    Tensor x = layout(tx);
    auto causal = [&](int64_t, int64_t, int64_t l, int64_t s) { return s > l ? -inf : 0.0; };
    expect_close(mha->forward(x, x, x, {}, {}, true),
                 unlayout(mha_ref(xs, xs, xs, N, L, L, E, H, W, B, Wo, Bo, causal), L), 1e-10, 1e-10, "mha causal");
    Tensor kpm3 = tensor<int64_t>({0, 0, 1, 0, 0, 0}, {N, L}, kBool);
    auto causal_kpm = [&](int64_t n, int64_t h, int64_t l, int64_t s) {
      return n == 0 && s == 2 ? -inf : causal(n, h, l, s);
    };
    expect_close(mha->forward(x, x, x, {}, kpm3, true),
                 unlayout(mha_ref(xs, xs, xs, N, L, L, E, H, W, B, Wo, Bo, causal_kpm), L), 1e-10, 1e-10,
                 "mha causal + padding");
    EXPECT_THROW(mha->forward(layout(tq), layout(tk), layout(tv), zeros({L, L}, kBool)), kiln::Error);
  }
  // Unbatched (L, E) input is one batch of a batch-first call.
  MultiheadAttention mha(E, H);
  std::vector<double> xs;
  Tensor x = random_tensor({L, E}, kFloat32, &xs);
  Tensor y = mha(x);
  EXPECT_EQ(y.sizes(), (Shape{L, E}));
  auto none = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };
  expect_close(y, mha_ref(xs, xs, xs, 1, L, L, E, H, vals(mha->in_proj_weight), vals(mha->in_proj_bias),
                          vals(mha->out_proj->weight), vals(mha->out_proj->bias), none),
               1e-5, 1e-5, "mha unbatched");
  EXPECT_THROW(mha(zeros({2, 3, 5})), kiln::Error);
  // Gradient check with respect to the input (float64 parameters).
  mha->to(kFloat64);
  expect_gradcheck([&](const TensorList& in) { return TensorList{mha(in[0].transpose(0, 1))}; },
                   {grad_input({2, L, E})}, "mha (batch-first data, non-contiguous seq-first view)");
}

TEST(NnLayers, Losses) {
  const int64_t N = 5, C = 4;
  std::vector<double> xv, wv;
  Tensor x = random_tensor({N, C}, kFloat64, &xv);
  Tensor w = random_tensor({C}, kFloat64, &wv, "contiguous", 0.5, 2);
  std::vector<int64_t> tv{0, 3, -100, 1, 3};
  Tensor t = tensor<int64_t>(tv, {N});
  // Cross entropy with class weights, ignore_index and label smoothing (PyTorch's formula:
  // (1 - eps) * weighted nll + eps * smoothing term, both divided by the total target weight).
  const double eps = 0.2;
  double num = 0, den = 0, smooth = 0;
  std::vector<double> nll_none;
  for (int64_t i = 0; i < N; ++i) {
    double mx = -INFINITY, z = 0;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xv[i * C + c]);
    for (int64_t c = 0; c < C; ++c) z += std::exp(xv[i * C + c] - mx);
    auto logp = [&](int64_t c) { return xv[i * C + c] - mx - std::log(z); };
    if (tv[i] == -100) {
      nll_none.push_back(0);
      continue;
    }
    num += -wv[tv[i]] * logp(tv[i]);
    den += wv[tv[i]];
    for (int64_t c = 0; c < C; ++c) smooth += -wv[c] * logp(c) / C;
    nll_none.push_back(-wv[tv[i]] * logp(tv[i]));
  }
  CrossEntropyLoss ce(CrossEntropyLossOptions{.weight = w, .label_smoothing = eps});
  expect_close(ce(x, t), {(1 - eps) * num / den + eps * smooth / den}, 1e-10, 1e-10, "cross_entropy");
  EXPECT_EQ(names_of(ce->named_buffers()), std::vector<std::string>{"weight"});
  CrossEntropyLoss ce_none(CrossEntropyLossOptions{.weight = w, .reduction = "none"});
  expect_close(ce_none(x, t), nll_none, 1e-10, 1e-10, "cross_entropy none");
  // nll_loss on the log-probabilities gives the same numbers.
  Tensor logp = log_softmax(x, 1);
  NLLLoss nll(NLLLossOptions{.weight = w, .reduction = "sum"});
  expect_close(nll(logp, t), {num}, 1e-10, 1e-10, "nll_loss");
  EXPECT_TRUE(CrossEntropyLoss()->buffers().empty());

  std::vector<double> yv;
  Tensor y = random_tensor({N, C}, kFloat64, &yv);
  double mse = 0, l1 = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    mse += (xv[i] - yv[i]) * (xv[i] - yv[i]) / xv.size();
    l1 += std::abs(xv[i] - yv[i]);
  }
  expect_close(MSELoss()(x, y), {mse}, 1e-12, 1e-12, "mse");
  expect_close(L1Loss(ReductionOptions{.reduction = "sum"})(x, y), {l1}, 1e-12, 1e-12, "l1");

  std::vector<double> pv, bwv;
  Tensor tgt = random_tensor({N, C}, kFloat64, &yv, "contiguous", 0, 1);
  Tensor pw = random_tensor({C}, kFloat64, &pv, "contiguous", 0.5, 3);
  Tensor bw = random_tensor({N, 1}, kFloat64, &bwv, "contiguous", 0.5, 2);
  BCEWithLogitsLoss bce(BCEWithLogitsLossOptions{.weight = bw, .pos_weight = pw, .reduction = "none"});
  std::vector<double> ref;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c) {
      const double z = xv[i * C + c], yy = yv[i * C + c];
      const double ls = -std::log1p(std::exp(-z)), lns = -std::log1p(std::exp(z));  // log sigmoid(z), log(1 - sigmoid)
      ref.push_back(-bwv[i] * (pv[c] * yy * ls + (1 - yy) * lns));
    }
  expect_close(bce(x, tgt), ref, 1e-10, 1e-10, "bce_with_logits");
  EXPECT_THROW(CrossEntropyLoss()(x, tensor<int64_t>({0, 1})), kiln::Error);
}

// ------------------------------------------------------------------ init

struct Moments {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
};
Moments moments(const Tensor& t) {
  auto v = vals(t);
  Moments m;
  for (double x : v) {
    m.mean += x / v.size();
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  for (double x : v) m.std += (x - m.mean) * (x - m.mean) / (v.size() - 1);
  m.std = std::sqrt(m.std);
  return m;
}

TEST(NnInit, Distributions) {
  manual_seed(7);
  Tensor t = empty({256, 512});  // fan_in 512, fan_out 256
  auto check = [](const Moments& m, double mean, double std, double lo, double hi, const char* what) {
    EXPECT_NEAR(m.mean, mean, 0.01 * std::max(std, 1.0) + 4 * std / std::sqrt(131072.0)) << what;
    EXPECT_NEAR(m.std, std, 0.01 * std) << what;
    EXPECT_GE(m.min, lo) << what;
    EXPECT_LE(m.max, hi) << what;
  };
  init::uniform_(t, -1, 3);
  check(moments(t), 1, 4 / std::sqrt(12.0), -1, 3, "uniform");
  init::normal_(t, 2, 0.5);
  check(moments(t), 2, 0.5, -INFINITY, INFINITY, "normal");
  const double xb = std::sqrt(6.0 / 768);
  init::xavier_uniform_(t);
  check(moments(t), 0, xb / std::sqrt(3.0), -xb, xb, "xavier_uniform");
  init::xavier_normal_(t, 2.0);
  check(moments(t), 0, 2 * std::sqrt(2.0 / 768), -INFINITY, INFINITY, "xavier_normal");
  const double kb = std::sqrt(2.0) * std::sqrt(3.0 / 512);
  init::kaiming_uniform_(t, 0, "fan_in", "relu");
  check(moments(t), 0, kb / std::sqrt(3.0), -kb, kb, "kaiming_uniform");
  init::kaiming_normal_(t, 0, "fan_out", "relu");
  check(moments(t), 0, std::sqrt(2.0 / 256), -INFINITY, INFINITY, "kaiming_normal fan_out");
  // Truncated N(0.5, 1) to [-1, 1]: the std of the truncated distribution, computed by quadrature.
  init::trunc_normal_(t, 0.5, 1.0, -1.0, 1.0);
  double z = 0, m1 = 0, m2 = 0;
  for (int i = 0; i < 20000; ++i) {
    const double x = -1 + 2 * (i + 0.5) / 20000, p = std::exp(-0.5 * (x - 0.5) * (x - 0.5));
    z += p, m1 += p * x, m2 += p * x * x;
  }
  m1 /= z, m2 /= z;
  check(moments(t), m1, std::sqrt(m2 - m1 * m1), -1, 1, "trunc_normal");
  init::constant_(t, 0.25);
  EXPECT_EQ(moments(t).min, 0.25);
  EXPECT_EQ(moments(t).max, 0.25);
  init::zeros_(t);
  EXPECT_EQ(moments(t).max, 0.0);
  init::ones_(t);
  EXPECT_EQ(moments(t).min, 1.0);
  // 16-bit tensors get samples too; init never records history.
  Tensor h = empty({64, 64}, kBFloat16);
  h.requires_grad_();
  init::normal_(h);
  EXPECT_TRUE(h.is_leaf());
  EXPECT_NEAR(moments(h).std, 1.0, 0.05);

  EXPECT_NEAR(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2 / 1.04), 1e-12);
  EXPECT_NEAR(init::calculate_gain("tanh"), 5.0 / 3, 1e-12);
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({4, 3, 2, 5})), (std::pair<int64_t, int64_t>{30, 40}));
  EXPECT_THROW(init::xavier_uniform_(empty({5})), kiln::Error);
  EXPECT_THROW(init::kaiming_normal_(t, 0, "fan_avg"), kiln::Error);
  EXPECT_THROW(init::calculate_gain("swish"), kiln::Error);
  EXPECT_THROW(init::normal_(empty({3}, kInt64)), kiln::Error);
}

TEST(NnInit, LayerDefaultsAndSeeding) {
  manual_seed(3);
  Linear a(400, 300);
  Embedding e(300, 400);
  Conv2d c(Conv2dOptions{.in_channels = 16, .out_channels = 64, .kernel_size = 5, .groups = 2});
  manual_seed(3);
  Linear b(400, 300);
  EXPECT_EQ(vals(a->weight), vals(b->weight));
  EXPECT_EQ(vals(a->bias), vals(b->bias));
  // Linear: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias.
  const double bound = 1 / std::sqrt(400.0);
  auto mw = moments(a->weight);
  EXPECT_GE(mw.min, -bound);
  EXPECT_LE(mw.max, bound);
  EXPECT_NEAR(mw.std, bound / std::sqrt(3.0), 0.01 * bound);
  auto mb = moments(a->bias);
  EXPECT_GE(mb.min, -bound);
  EXPECT_LE(mb.max, bound);
  auto me = moments(e->weight);
  EXPECT_NEAR(me.mean, 0, 0.01);
  EXPECT_NEAR(me.std, 1, 0.01);
  const double cb = 1 / std::sqrt(8.0 * 25);  // fan_in = in_channels / groups * kh * kw
  auto mc = moments(c->weight);
  EXPECT_GE(mc.min, -cb);
  EXPECT_LE(mc.max, cb);
  EXPECT_NEAR(mc.std, cb / std::sqrt(3.0), 0.02 * cb);
  EXPECT_LE(moments(c->bias).max, cb);
}

// ------------------------------------------------------------------ gradients reach every parameter

class EverythingImpl : public Module {
 public:
  EverythingImpl() {
    conv = register_module("conv", Conv2d(Conv2dOptions{.in_channels = 2, .out_channels = 4, .kernel_size = 3,
                                                        .padding = 1}));
    bn = register_module("bn", BatchNorm2d(4));
    pool = register_module("pool", MaxPool2d(2));
    apool = register_module("apool", AvgPool2d(AvgPool2dOptions{.kernel_size = 1}));
    emb = register_module("emb", Embedding(10, 8));
    mha = register_module("mha", MultiheadAttention(8, 2));
    head = register_module("head", Sequential(LayerNorm(8), Linear(8, 8), SiLU(), RMSNorm(8), Dropout(0.1),
                                              Linear(8, 3), ReLU(), Linear(3, 3)));
  }
  Tensor forward(const Tensor& img, const Tensor& idx) {
    Tensor f = apool(pool(bn(conv(img))));                          // (N, 4, 2, 2)
    Tensor tokens = emb(idx) + f.reshape({f.size(0), 2, 8});          // (N, 2, 8)
    Tensor a = mha(tokens.transpose(0, 1)).transpose(0, 1);          // seq-first layout
    return head(a).sum({1});
  }
  Conv2d conv{nullptr};
  BatchNorm2d bn{nullptr};
  MaxPool2d pool{nullptr};
  AvgPool2d apool{nullptr};
  Embedding emb{nullptr};
  MultiheadAttention mha{nullptr};
  Sequential head{nullptr};
};
KILN_MODULE(Everything);

TEST(NnModule, GradientsReachEveryParameter) {
  Everything m;
  Tensor img = random_tensor({3, 2, 4, 4}, kFloat32);
  Tensor idx = tensor<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor logits = m(img, idx);
  EXPECT_EQ(logits.sizes(), (Shape{3, 3}));
  CrossEntropyLoss()(logits, tensor<int64_t>({0, 2, 1})).backward();
  for (auto& [n, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
    EXPECT_EQ(p.grad().sizes(), p.sizes()) << n;
    EXPECT_EQ(p.grad().dtype(), p.dtype()) << n;
  }
  EXPECT_EQ(m->parameters().size(), 18u);
  // The tiny GPT: tied weight gets one gradient holding both uses.
  TinyGPT g(11, 8, 8, 2, 2);
  CrossEntropyLoss()(g(tensor<int64_t>({1, 2, 3, 4}, {1, 4})).reshape({4, 11}), tensor<int64_t>({2, 3, 4, 5}))
      .backward();
  for (auto& [n, p] : g->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
    EXPECT_EQ(p.grad().sizes(), p.sizes()) << n;
  }
}

TEST(NnModule, SequentialGradcheck) {
  Sequential m(Linear(3, 4), GELU("tanh"), LayerNorm(4), Linear(4, 2));
  m->to(kFloat64);
  expect_gradcheck([&](const TensorList& in) { return TensorList{m(in[0])}; }, {grad_input({5, 3})}, "sequential");
  // Non-contiguous input.
  expect_gradcheck([&](const TensorList& in) { return TensorList{m(in[0].transpose(0, 1))}; }, {grad_input({3, 5})},
                   "sequential transposed");
}

}  // namespace
}  // namespace kiln::test
