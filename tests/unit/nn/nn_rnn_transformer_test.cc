// RNN, LSTM, GRU, their cells and the Transformer layers against torch.nn: the same weights
// (parameter k, in torch's order, filled with 0.3 sin(0.37 j + 1.3 k)), the same inputs
// (cos(0.21 j)), and the numbers torch gives for them; two small language models train 5 steps
// with torch's losses (tests/python/test_nn_layers.py runs the Python layers against torch live).
// The numbers come from the same programs run in PyTorch (float32); each Sums entry is
// {sum, sum of squares, first element, last element} of one result.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <array>
#include <cmath>
#include <vector>

using namespace kiln;
using namespace kiln::nn;

namespace {

using Sums = std::array<double, 4>;

void fill(Module& m) {
  NoGradGuard no_grad;
  int64_t k = 0;
  for (Tensor& p : m.parameters()) {
    Tensor j = arange(0, p.numel(), 1, kFloat64);
    p.copy_from(reshape(mul(sin(add(mul(j, 0.37), 1.3 * double(k++))), 0.3), p.sizes()).to(kFloat32));
  }
}

Tensor input(const Shape& shape, double scale = 1.0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return mul(reshape(cos(mul(arange(0, n, 1, kFloat64), 0.21)), shape), scale).to(kFloat32);
}

void expect_sums(const Tensor& t, const Sums& want, const char* what) {
  std::vector<double> v = t.contiguous().to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) sum += x, sq += x * x;
  const Sums got = {sum, sq, v.front(), v.back()};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-4 * std::abs(want[i])) << what << " entry " << i;
}

TEST(RecurrentLayers, LstmTwoLayersBidirectionalBatchFirstWithGradients) {
  const std::vector<Sums> want = {
      {-8.7646475, 3.3444512, -0.12919596, -0.0010197591},
      {-1.3146048, 1.7690302, 0.14115614, 0.1748945},
      {-1.6057923, 7.5188084, 0.5172143, 0.28082865},
      {-0.37229118, 0.17673215, -0.00074299151, -0.047455415},
      {-0.32591689, 0.0098025352, 0.0050680945, 0.01401872}};
  LSTM lstm(RNNOptions{.input_size = 5, .hidden_size = 6, .num_layers = 2, .batch_first = true, .bidirectional = true});
  fill(*lstm);
  Tensor x = input({3, 4, 5});
  x.requires_grad_();
  RNNResult r = lstm->forward(x);
  sum(mul(r.output, r.output)).backward();
  expect_sums(r.output, want[0], "output");
  expect_sums(r.h_n, want[1], "h_n");
  expect_sums(r.c_n, want[2], "c_n");
  expect_sums(lstm->parameter("weight_ih_l0").grad(), want[3], "weight_ih_l0.grad");
  expect_sums(x.grad(), want[4], "input grad");
  EXPECT_EQ(lstm->state_dict().count("weight_hh_l1_reverse"), 1u);
}

TEST(RecurrentLayers, GruWithInitialStateAndReluRnnUnbatched) {
  const std::vector<Sums> gru_want = {
      {5.8947334, 5.5454106, -0.29003349, -0.20407659},
      {2.3256321, 1.3591233, 0.11324131, -0.20407659}};
  GRU gru(5, 6);
  fill(*gru);
  RNNResult g = gru->forward(input({4, 3, 5}), input({1, 3, 6}, 0.5));
  expect_sums(g.output, gru_want[0], "GRU output");
  expect_sums(g.h_n, gru_want[1], "GRU h_n");
  EXPECT_FALSE(g.c_n.defined());

  const std::vector<Sums> rnn_want = {{4.8560448, 2.417845, 0.20735556, 0}, {2.564868, 1.5331676, 0, 0}};
  RNN rnn(RNNOptions{.input_size = 5, .hidden_size = 6, .num_layers = 2, .nonlinearity = "relu"});
  fill(*rnn);
  RNNResult r = rnn->forward(input({4, 5}));
  EXPECT_EQ(r.output.sizes(), (Shape{4, 6}));
  EXPECT_EQ(r.h_n.sizes(), (Shape{2, 6}));
  expect_sums(r.output, rnn_want[0], "RNN output");
  expect_sums(r.h_n, rnn_want[1], "RNN h_n");
}

TEST(RecurrentLayers, Cells) {
  const std::vector<Sums> lstm_want = {
      {0.019142084, 0.17599826, -0.13790306, -0.23736559},
      {0.025769621, 1.0523858, -0.24436891, -0.4626821}};
  LSTMCell lstm(5, 6);
  fill(*lstm);
  RNNResult r = lstm->forward(input({3, 5}), input({3, 6}, 0.1), input({3, 6}, 0.2));
  expect_sums(r.h_n, lstm_want[0], "LSTMCell h");
  expect_sums(r.c_n, lstm_want[1], "LSTMCell c");
  const std::vector<Sums> gru_want = {{0.0058551282, 0.36650893, -0.35168225, 0.13936174}};
  GRUCell gru(5, 6);
  fill(*gru);
  Tensor h = gru->forward(input({5}));
  EXPECT_EQ(h.sizes(), (Shape{6}));
  expect_sums(h, gru_want[0], "GRUCell h");
}

TEST(RecurrentLayers, BadInputIsAClearError) {
  LSTM lstm(5, 6);
  EXPECT_THROW(lstm->forward(input({3, 4, 7})), Error);            // input_size
  EXPECT_THROW(lstm->forward(input({3, 4, 5}), input({2, 4, 6})), Error);  // h0 shape
  EXPECT_THROW(RNN(RNNOptions{.input_size = 5, .hidden_size = 6, .nonlinearity = "gelu"}), Error);
  EXPECT_THROW(GRU(RNNOptions{.input_size = 5, .hidden_size = 0}), Error);
}

TEST(TransformerLayers, PreNormEncoderWithCausalMask) {
  const std::vector<Sums> want = {{13.428951, 9.9212027, 0.27077091, -0.43400237}};
  TransformerEncoder enc(TransformerLayerOptions{.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0,
                                                 .activation = "gelu", .batch_first = true, .norm_first = true},
                         2, /*final_norm=*/true);
  fill(*enc);
  Tensor mask = TransformerImpl::generate_square_subsequent_mask(5);
  expect_sums(enc->forward(input({2, 5, 8}), mask, {}, true), want[0], "encoder output");
}

TEST(TransformerLayers, TransformerEncoderDecoder) {
  const std::vector<Sums> want = {{-12.447195, 7.2053194, 0.10418077, 0.18695463}};
  Transformer tr(TransformerOptions{.layer = {.d_model = 8, .nhead = 2, .dim_feedforward = 16, .dropout = 0.0},
                                    .num_encoder_layers = 1,
                                    .num_decoder_layers = 2});
  fill(*tr);
  Tensor causal = TransformerImpl::generate_square_subsequent_mask(4);
  Tensor out = tr->forward(input({5, 2, 8}), input({4, 2, 8}, 0.5), {}, causal);
  EXPECT_EQ(out.sizes(), (Shape{4, 2, 8}));
  expect_sums(out, want[0], "transformer output");
  EXPECT_EQ(tr->state_dict().count("decoder.layers.1.multihead_attn.in_proj_weight"), 1u);
  EXPECT_EQ(tr->state_dict().count("encoder.norm.weight"), 1u);
}

TEST(TransformerLayers, EncoderCopiesStartEqual) {
  TransformerEncoder enc(TransformerLayerOptions{.d_model = 8, .nhead = 2, .dim_feedforward = 16}, 3);
  auto sd = enc->state_dict();
  EXPECT_EQ(sd.at("layers.0.linear1.weight").to_vector<float>(), sd.at("layers.2.linear1.weight").to_vector<float>());
  EXPECT_THROW(TransformerEncoderLayer(TransformerLayerOptions{.d_model = 8, .nhead = 2, .activation = "tanh"}), Error);
}

// --------------------------------------------------------- language models train as torch's
constexpr int64_t kVocab = 11, kSeq = 6, kBatch = 3;

template <class Model, class Opt>
std::vector<double> train(Model& model, Opt& opt) {
  // Tokens (7 i) mod 11 in a (batch, seq + 1) grid; inputs the first seq, targets the last.
  Tensor data = remainder(mul(arange(0, kBatch * (kSeq + 1), 1, kInt64), 7), kVocab).reshape({kBatch, kSeq + 1});
  Tensor x = narrow(data, 1, 0, kSeq).contiguous(), y = narrow(data, 1, 1, kSeq).contiguous();
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {
    Tensor loss = cross_entropy(model.forward(x).reshape({-1, kVocab}), y.reshape({-1}));
    opt.zero_grad();
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

class LstmLmImpl : public Module {
 public:
  LstmLmImpl()
      : emb(register_module("emb", Embedding(kVocab, 8))),
        rnn(register_module("rnn", LSTM(RNNOptions{.input_size = 8, .hidden_size = 12, .num_layers = 2,
                                                   .batch_first = true}))),
        head(register_module("head", Linear(12, kVocab))) {}
  Tensor forward(const Tensor& idx) { return head(rnn->forward(emb(idx)).output); }
  Embedding emb;
  LSTM rnn;
  Linear head;
};

class TransformerLmImpl : public Module {
 public:
  TransformerLmImpl()
      : emb(register_module("emb", Embedding(kVocab, 8))),
        blocks(register_module("blocks", TransformerEncoder(TransformerLayerOptions{.d_model = 8, .nhead = 2,
                                                                                    .dim_feedforward = 16,
                                                                                    .dropout = 0.0,
                                                                                    .batch_first = true,
                                                                                    .norm_first = true},
                                                            2))),
        head(register_module("head", Linear(8, kVocab))) {}
  Tensor forward(const Tensor& idx) {
    Tensor mask = TransformerImpl::generate_square_subsequent_mask(idx.size(1));
    return head(blocks->forward(emb(idx), mask, {}, true));
  }
  Embedding emb;
  TransformerEncoder blocks;
  Linear head;
};

TEST(LanguageModels, LstmTrainsAsTorch) {
  const std::vector<double> want = {2.4231629, 2.4148476, 2.4075317, 2.4010615, 2.395314};
  auto model = std::make_shared<LstmLmImpl>();
  fill(*model);
  optim::SGD opt(model->parameters(), optim::SGDOptions{.lr = 0.5});
  std::vector<double> got = train(*model, opt);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-5) << "step " << i;
}

TEST(LanguageModels, TransformerTrainsAsTorch) {
  const std::vector<double> want = {2.9264872, 2.8466854, 2.7755651, 2.7133434, 2.6602459};
  auto model = std::make_shared<TransformerLmImpl>();
  fill(*model);
  optim::AdamW opt(model->parameters(), optim::AdamWOptions{.lr = 3e-3, .weight_decay = 0.1});
  std::vector<double> got = train(*model, opt);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-5) << "step " << i;
}

}  // namespace
