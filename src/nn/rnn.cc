// RNN, LSTM, GRU and their cells: one matmul projects a layer's whole input sequence (W_ih x +
// b_ih), then each time step adds the hidden state's projection and applies the gates.
#include <kiln/nn/init.h>
#include <kiln/nn/rnn.h>

#include <cmath>

namespace kiln::nn {
namespace {

// The recurrent state of one step: h, and LSTM's cell state c.
struct State {
  Tensor h, c;
};

// One time step of `mode` ("RNN_TANH", "RNN_RELU", "LSTM", "GRU"); gi = W_ih x + b_ih.
State step(const std::string& mode, const Tensor& gi, const State& s, const Tensor& w_hh, const Tensor& b_hh) {
  if (mode == "LSTM") {
    TensorList g = chunk(add(gi, linear(s.h, w_hh, b_hh)), 4, -1);  // i, f, g, o
    Tensor c = add(mul(sigmoid(g[0]), tanh(g[2])), mul(sigmoid(g[1]), s.c));
    return {mul(sigmoid(g[3]), tanh(c)), c};
  }
  if (mode == "GRU") {
    TensorList i = chunk(gi, 3, -1), h = chunk(linear(s.h, w_hh, b_hh), 3, -1);  // r, z, n
    Tensor r = sigmoid(add(i[0], h[0])), z = sigmoid(add(i[1], h[1]));
    Tensor n = tanh(add(i[2], mul(r, h[2])));
    return {add(n, mul(z, sub(s.h, n))), {}};
  }
  Tensor pre = add(gi, linear(s.h, w_hh, b_hh));
  return {mode == "RNN_TANH" ? tanh(pre) : relu(pre), {}};
}

std::string mode_of(const char* kind, const std::string& nonlinearity) {
  if (std::string(kind) != "RNN") return kind;
  KILN_CHECK_HINT(nonlinearity == "tanh" || nonlinearity == "relu", "use \"tanh\" or \"relu\"",
                  "RNN: unknown nonlinearity '", nonlinearity, "'");
  return nonlinearity == "tanh" ? "RNN_TANH" : "RNN_RELU";
}

void uniform_all(Module& m, int64_t hidden) {
  const double bound = hidden > 0 ? 1.0 / std::sqrt(double(hidden)) : 0.0;
  for (Tensor& p : m.parameters()) init::uniform_(p, -bound, bound);
}

// A given initial state checked against its expected shape, or zeros.
Tensor initial(const Tensor& given, bool batched, const Shape& shape, DType dt, const char* who, const char* what) {
  if (!given.defined()) return zeros(shape, dt);
  Tensor t = batched ? given : unsqueeze(given, 1);
  KILN_CHECK(t.sizes() == shape, who, ": expected ", what, " of shape ", shape_str(shape), ", got ",
             shape_str(given.sizes()));
  return t;
}

}  // namespace

// ---------------------------------------------------------------------------------- the layers
RNNImplBase::RNNImplBase(const char* kind, int gates, const RNNOptions& o)
    : options(o), mode_(mode_of(kind, o.nonlinearity)) {
  KILN_CHECK(o.input_size > 0 && o.hidden_size > 0 && o.num_layers > 0, kind,
             ": input_size, hidden_size and num_layers must be positive, got ", o.input_size, ", ", o.hidden_size,
             " and ", o.num_layers);
  KILN_CHECK(o.dropout >= 0 && o.dropout <= 1, kind, ": dropout must be in [0, 1], got ", o.dropout);
  const int64_t dirs = o.bidirectional ? 2 : 1, gate = gates * o.hidden_size;
  for (int64_t layer = 0; layer < o.num_layers; ++layer)
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string sfx = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      const int64_t in = layer == 0 ? o.input_size : o.hidden_size * dirs;
      std::vector<std::pair<std::string, Shape>> shapes = {{"weight_ih", {gate, in}},
                                                           {"weight_hh", {gate, o.hidden_size}}};
      if (o.bias) shapes.insert(shapes.end(), {{"bias_ih", {gate}}, {"bias_hh", {gate}}});
      for (const auto& [name, shape] : shapes) {
        register_parameter(name + sfx, kiln::empty(shape));
        names_.push_back(name + sfx);
      }
    }
  reset_parameters();
}

void RNNImplBase::reset_parameters() { uniform_all(*this, options.hidden_size); }

RNNResult RNNImplBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  const std::string who = type_name();
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, who, ": expected a 2-d (unbatched) or 3-d input, got ",
             input.dim(), " dims");
  const bool batched = input.dim() == 3, lstm = mode_ == "LSTM";
  Tensor x = batched ? (options.batch_first ? transpose(input, 0, 1) : input) : unsqueeze(input, 1);  // (L, N, in)
  KILN_CHECK(x.size(-1) == options.input_size, who, ": expected input_size ", options.input_size,
             " in the input's last dim, got ", x.size(-1));
  KILN_CHECK(x.size(0) > 0, who, ": the input sequence is empty");
  const int64_t dirs = options.bidirectional ? 2 : 1, L = x.size(0), N = x.size(1), H = options.hidden_size;
  const Shape state_shape = {options.num_layers * dirs, N, H};
  Tensor h_init = initial(h0, batched, state_shape, x.dtype(), who.c_str(), "h0");
  Tensor c_init = lstm ? initial(c0, batched, state_shape, x.dtype(), who.c_str(), "c0") : Tensor();
  const size_t per = names_.size() / size_t(options.num_layers * dirs);  // parameters of one layer direction
  TensorList h_n, c_n;
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    TensorList outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t k = size_t(layer * dirs + d);
      const Tensor& w_ih = parameter(names_[k * per]);
      const Tensor& w_hh = parameter(names_[k * per + 1]);
      const Tensor b_ih = options.bias ? parameter(names_[k * per + 2]) : Tensor();
      const Tensor b_hh = options.bias ? parameter(names_[k * per + 3]) : Tensor();
      Tensor gi = linear(x, w_ih, b_ih);
      State s{select(h_init, 0, int64_t(k)), lstm ? select(c_init, 0, int64_t(k)) : Tensor()};
      TensorList steps(static_cast<size_t>(L));
      for (int64_t i = 0; i < L; ++i) {
        const int64_t t = d ? L - 1 - i : i;  // the reverse direction runs from the last step
        s = step(mode_, select(gi, 0, t), s, w_hh, b_hh);
        steps[size_t(t)] = s.h;
      }
      outs.push_back(stack(steps, 0));
      h_n.push_back(s.h);
      if (lstm) c_n.push_back(s.c);
    }
    x = dirs == 1 ? outs[0] : cat(outs, -1);
    if (options.dropout > 0 && is_training() && layer < options.num_layers - 1) x = dropout(x, options.dropout, true);
  }
  RNNResult r{x, stack(h_n, 0), lstm ? stack(c_n, 0) : Tensor()};
  if (batched && options.batch_first) r.output = transpose(r.output, 0, 1);
  if (!batched) {
    r.output = squeeze(r.output, IntList{1});
    r.h_n = squeeze(r.h_n, IntList{1});
    if (lstm) r.c_n = squeeze(r.c_n, IntList{1});
  }
  return r;
}

std::string RNNImplBase::extra_repr() const {
  std::string s = std::to_string(options.input_size) + ", " + std::to_string(options.hidden_size);
  if (options.num_layers != 1) s += ", num_layers=" + std::to_string(options.num_layers);
  if (mode_ == "RNN_RELU") s += ", nonlinearity='relu'";
  if (!options.bias) s += ", bias=false";
  if (options.batch_first) s += ", batch_first=true";
  if (options.dropout != 0) s += ", dropout=" + std::to_string(options.dropout);
  if (options.bidirectional) s += ", bidirectional=true";
  return s;
}

RNNImpl::RNNImpl(const RNNOptions& o) : RNNImplBase("RNN", 1, o) {}
LSTMImpl::LSTMImpl(const RNNOptions& o) : RNNImplBase("LSTM", 4, o) {}
GRUImpl::GRUImpl(const RNNOptions& o) : RNNImplBase("GRU", 3, o) {}

// ----------------------------------------------------------------------------------- the cells
RNNCellImplBase::RNNCellImplBase(const char* kind, int gates, const RNNCellOptions& o)
    : options(o),
      weight_ih(register_parameter("weight_ih", kiln::empty({gates * o.hidden_size, o.input_size}))),
      weight_hh(register_parameter("weight_hh", kiln::empty({gates * o.hidden_size, o.hidden_size}))),
      bias_ih(register_parameter("bias_ih", o.bias ? kiln::empty({gates * o.hidden_size}) : Tensor())),
      bias_hh(register_parameter("bias_hh", o.bias ? kiln::empty({gates * o.hidden_size}) : Tensor())),
      mode_(mode_of(kind, o.nonlinearity)) {
  KILN_CHECK(o.input_size > 0 && o.hidden_size > 0, kind, "Cell: input_size and hidden_size must be positive, got ",
             o.input_size, " and ", o.hidden_size);
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() { uniform_all(*this, options.hidden_size); }

RNNResult RNNCellImplBase::run(const Tensor& input, const Tensor& h, const Tensor& c) {
  const std::string who = type_name();
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, who, ": expected a 1-d (unbatched) or 2-d input, got ",
             input.dim(), " dims");
  KILN_CHECK(input.size(-1) == options.input_size, who, ": expected input_size ", options.input_size,
             " in the input's last dim, got ", input.size(-1));
  const bool batched = input.dim() == 2, lstm = mode_ == "LSTM";
  Tensor x = batched ? input : unsqueeze(input, 0);
  const Shape shape = {x.size(0), options.hidden_size};
  auto given = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return zeros(shape, x.dtype());
    Tensor b = batched ? t : unsqueeze(t, 0);
    KILN_CHECK(b.sizes() == shape, who, ": expected ", what, " of shape ", shape_str(shape), ", got ",
               shape_str(t.sizes()));
    return b;
  };
  State s = step(mode_, linear(x, weight_ih, bias_ih), {given(h, "h"), lstm ? given(c, "c") : Tensor()}, weight_hh,
                 bias_hh);
  if (!batched) {
    s.h = squeeze(s.h, IntList{0});
    if (lstm) s.c = squeeze(s.c, IntList{0});
  }
  return {s.h, s.h, s.c};
}

std::string RNNCellImplBase::extra_repr() const {
  std::string s = std::to_string(options.input_size) + ", " + std::to_string(options.hidden_size);
  if (!options.bias) s += ", bias=false";
  if (mode_ == "RNN_RELU") s += ", nonlinearity='relu'";
  return s;
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& o) : RNNCellImplBase("RNN", 1, o) {}
LSTMCellImpl::LSTMCellImpl(const RNNCellOptions& o) : RNNCellImplBase("LSTM", 4, o) {}
GRUCellImpl::GRUCellImpl(const RNNCellOptions& o) : RNNCellImplBase("GRU", 3, o) {}

}  // namespace kiln::nn
