// RNN, LSTM, GRU and their cells (torch.nn's): multi-layer, dropout between layers, batch_first,
// bidirectional; torch's parameter names (weight_ih_l{k}[_reverse], weight_hh_..., bias_ih_...,
// bias_hh_...), shapes and initialization U(-1/sqrt(hidden), 1/sqrt(hidden)), so state_dicts carry
// over. The gates, as torch's formulas:
//   RNN:  h' = tanh(W_ih x + b_ih + W_hh h + b_hh)                (or relu)
//   LSTM: i, f, g, o = gates;  c' = sigmoid(f) c + sigmoid(i) tanh(g);  h' = sigmoid(o) tanh(c')
//   GRU:  r, z from gates;  n = tanh(W_in x + b_in + r (W_hn h + b_hn));  h' = (1 - z) n + z h
#pragma once
#include <kiln/nn/module.h>

#include <string>
#include <vector>

namespace kiln::nn {

struct RNNOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  std::string nonlinearity = "tanh";  // or "relu" (RNN only)
  bool bias = true;
  bool batch_first = false;  // input and output (batch, seq, feature) instead of (seq, batch, feature)
  double dropout = 0.0;      // on each layer's output but the last, in training mode
  bool bidirectional = false;
};

// What a recurrent layer returns: every step's output of the last layer (both directions
// concatenated), and the final hidden state of every layer and direction (num_layers * dirs,
// batch, hidden); c_n is LSTM's final cell state (undefined for RNN and GRU).
struct RNNResult {
  Tensor output;
  Tensor h_n;
  Tensor c_n;
};

// The layers' shared machinery; `gates` is 1 (RNN), 4 (LSTM) or 3 (GRU).
class RNNImplBase : public Module {
 public:
  void reset_parameters();
  std::string extra_repr() const override;
  RNNOptions options;

 protected:
  RNNImplBase(const char* mode, int gates, const RNNOptions& options);
  // input (L, N, H_in) (batch_first: (N, L, H_in)) or unbatched (L, H_in); h0/c0 (layers * dirs,
  // N, H) or (layers * dirs, H) unbatched, zeros when undefined.
  RNNResult run(const Tensor& input, const Tensor& h0, const Tensor& c0);

 private:
  std::string mode_;
  std::vector<std::string> names_;  // weight_ih_l0, weight_hh_l0, ... in torch's order
};

class RNNImpl : public RNNImplBase {
 public:
  explicit RNNImpl(const RNNOptions& options);
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions{input_size, hidden_size}) {}
  RNNResult forward(const Tensor& input, const Tensor& h0 = {}) { return run(input, h0, {}); }
};
KILN_MODULE(RNN);

class LSTMImpl : public RNNImplBase {
 public:
  explicit LSTMImpl(const RNNOptions& options);
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(RNNOptions{input_size, hidden_size}) {}
  RNNResult forward(const Tensor& input, const Tensor& h0 = {}, const Tensor& c0 = {}) { return run(input, h0, c0); }
};
KILN_MODULE(LSTM);

class GRUImpl : public RNNImplBase {
 public:
  explicit GRUImpl(const RNNOptions& options);
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(RNNOptions{input_size, hidden_size}) {}
  RNNResult forward(const Tensor& input, const Tensor& h0 = {}) { return run(input, h0, {}); }
};
KILN_MODULE(GRU);

struct RNNCellOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  bool bias = true;
  std::string nonlinearity = "tanh";  // or "relu" (RNNCell only)
};

// One time step: weight_ih, weight_hh, bias_ih, bias_hh. input (N, H_in) or (H_in); h (and LSTM's
// c) zeros when undefined. RNNCell/GRUCell return h'; LSTMCell returns {h', c'} in RNNResult's
// h_n and c_n.
class RNNCellImplBase : public Module {
 public:
  void reset_parameters();
  std::string extra_repr() const override;
  RNNCellOptions options;
  Tensor& weight_ih;
  Tensor& weight_hh;
  Tensor& bias_ih;  // undefined without bias
  Tensor& bias_hh;

 protected:
  RNNCellImplBase(const char* mode, int gates, const RNNCellOptions& options);
  RNNResult run(const Tensor& input, const Tensor& h, const Tensor& c);

 private:
  std::string mode_;
};

class RNNCellImpl : public RNNCellImplBase {
 public:
  explicit RNNCellImpl(const RNNCellOptions& options);
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions{input_size, hidden_size}) {}
  Tensor forward(const Tensor& input, const Tensor& h = {}) { return run(input, h, {}).h_n; }
};
KILN_MODULE(RNNCell);

class LSTMCellImpl : public RNNCellImplBase {
 public:
  explicit LSTMCellImpl(const RNNCellOptions& options);
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(RNNCellOptions{input_size, hidden_size}) {}
  RNNResult forward(const Tensor& input, const Tensor& h = {}, const Tensor& c = {}) { return run(input, h, c); }
};
KILN_MODULE(LSTMCell);

class GRUCellImpl : public RNNCellImplBase {
 public:
  explicit GRUCellImpl(const RNNCellOptions& options);
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(RNNCellOptions{input_size, hidden_size}) {}
  Tensor forward(const Tensor& input, const Tensor& h = {}) { return run(input, h, {}).h_n; }
};
KILN_MODULE(GRUCell);

}  // namespace kiln::nn
