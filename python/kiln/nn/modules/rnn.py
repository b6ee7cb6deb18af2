"""RNN, LSTM, GRU and their cells with torch's parameter names, shapes and initialisation
(weight_ih_l{k}[_reverse], weight_hh_..., bias_ih_..., bias_hh_..., LSTM's weight_hr_... with
proj_size; every one from U(-1/sqrt(hidden), 1/sqrt(hidden))), so state_dicts load both ways.
The recurrence is written with kiln ops: one matmul projects the whole input sequence of a layer,
then each time step adds the hidden-state projection and applies the gates, as torch's formulas:

    RNN:  h' = tanh(W_ih x + b_ih + W_hh h + b_hh)            (or relu)
    LSTM: i, f, g, o = gates;  c' = f c + i g;  h' = o tanh(c')  (h' = W_hr h' with proj_size)
    GRU:  r, z from gates;  n = tanh(W_in x + b_in + r (W_hn h + b_hn));  h' = (1 - z) n + z h
"""
import math

from ... import _C
from .. import functional as F
from .. import _checks, init
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _padded_sorted

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, gi, state, w_hh, b_hh, w_hr=None):
    """One time step: gi is the input's projection W_ih x + b_ih; returns the new state (h, or
    (h, c) for LSTM)."""
    if mode == "LSTM":
        h, c = state
        i, f, g, o = (gi + F.linear(h, w_hh, b_hh)).chunk(4, -1)
        c = i.sigmoid() * g.tanh() + f.sigmoid() * c
        h = o.sigmoid() * c.tanh()
        return (F.linear(h, w_hr) if w_hr is not None else h), c
    if mode == "GRU":
        h = state
        i_r, i_z, i_n = gi.chunk(3, -1)
        h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
        r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return n + z * (h - n)
    pre = gi + F.linear(state, w_hh, b_hh)
    return pre.tanh() if mode == "RNN_TANH" else pre.relu()


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        _checks.sizes(name, ("hidden_size", "num_layers"), input_size=input_size, hidden_size=hidden_size,
                      num_layers=num_layers, proj_size=proj_size)
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size and proj_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size or hidden_size
        dt = dtype or _C.float32
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else real_hidden * dirs
                shapes = [("weight_ih", [gate, in_size]), ("weight_hh", [gate, real_hidden])]
                if bias:
                    shapes += [("bias_ih", [gate]), ("bias_hh", [gate])]
                if proj_size:
                    shapes.append(("weight_hr", [proj_size, hidden_size]))
                for pname, shape in shapes:
                    setattr(self, pname + sfx, Parameter(_C._ops.empty(shape, dtype=dt)))
                    self._flat_weights_names.append(pname + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -bound, bound)

    def flatten_parameters(self):
        """torch packs weights for cuDNN here; kiln's weights need no packing."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + per] for i in range(0, len(w), per)]

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _layer_direction(self, x, state, layer, d, masks=None):
        """Runs one direction of one layer over x (L, N, in); returns outputs (L, N, H) and the final
        state. masks[t] (N, 1) is 1 for the sequences still running at step t (packed input): the
        others keep their state, so a reversed pass starts at each sequence's own last step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
        gi = F.linear(x, w_ih, b_ih)
        steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
        outs = [None] * x.shape[0]
        for t in steps:
            new = _step(self.mode, gi[t], state, w_hh, b_hh, w_hr)
            if masks is not None:
                keep = lambda n, o: _C._ops.where(masks[t] > 0, n, o)  # noqa: E731
                new = (keep(new[0], state[0]), keep(new[1], state[1])) if self.mode == "LSTM" else keep(new, state)
            state = new
            outs[t] = state[0] if self.mode == "LSTM" else state
        if not outs:
            raise ValueError(f"{type(self).__name__}: the input sequence is empty")
        return _C._ops.stack(outs, 0), state

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward(input, hx)

    def _forward_packed(self, packed, hx):
        """Runs over the padded, length-sorted batch with per-step masks; returns a PackedSequence
        of the outputs and the final states in the caller's batch order, as torch."""
        x, lens = _padded_sorted(packed)
        order, inverse = packed.sorted_indices, packed.unsorted_indices
        if hx is not None and order is not None:
            hx = tuple(h.index_select(1, order) for h in hx) if self.mode == "LSTM" else hx.index_select(1, order)
        masks = [_C.tensor([[1.0] if t < n else [0.0] for n in lens], dtype=x.dtype) for t in range(x.shape[0])]
        out, state = self._forward(x, hx, masks, batch_first=False)
        data = _C._ops.cat([out[t, :b] for t, b in enumerate(packed.batch_sizes.tolist())], 0)
        if inverse is not None:
            state = tuple(h.index_select(1, inverse) for h in state) if self.mode == "LSTM" else \
                state.index_select(1, inverse)
        return PackedSequence(data, packed.batch_sizes, order, inverse), state

    def _forward(self, input, hx=None, masks=None, batch_first=None):
        name = type(self).__name__
        batch_first = self.batch_first if batch_first is None else batch_first
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if batched and batch_first:
            x = x.transpose(0, 1)
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        dirs = 2 if self.bidirectional else 1
        N = x.shape[1]
        h_size = self.proj_size or self.hidden_size
        h0, c0 = self._initial_state(hx, batched, dirs * self.num_layers, N, h_size, x.dtype)
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                i = layer * dirs + d
                state = (h0[i], c0[i]) if self.mode == "LSTM" else h0[i]
                out, state = self._layer_direction(x, state, layer, d, masks)
                outs.append(out)
                h_n.append(state[0] if self.mode == "LSTM" else state)
                if self.mode == "LSTM":
                    c_n.append(state[1])
            x = outs[0] if dirs == 1 else _C._ops.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = _C._ops.stack(h_n, 0)
        out = x
        if batched and batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
        if self.mode == "LSTM":
            c_n = _C._ops.stack(c_n, 0)
            return out, (h_n, c_n if batched else c_n.squeeze(1))
        return out, h_n

    def _initial_state(self, hx, batched, layers, N, h_size, dtype):
        name = type(self).__name__
        if hx is None:
            h0 = _C._ops.zeros([layers, N, h_size], dtype=dtype)
            c0 = _C._ops.zeros([layers, N, self.hidden_size], dtype=dtype) if self.mode == "LSTM" else None
            return h0, c0
        if self.mode == "LSTM":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"{name}: hx must be a tuple (h_0, c_0)")
            h0, c0 = hx
        else:
            if isinstance(hx, (tuple, list)):
                raise TypeError(f"{name}: hx must be a Tensor, not a tuple")
            h0, c0 = hx, None
        if not batched:
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        if tuple(h0.shape) != (layers, N, h_size):
            raise RuntimeError(f"Expected hidden size {(layers, N, h_size)}, got {list(h0.shape)}")
        if c0 is not None and tuple(c0.shape) != (layers, N, self.hidden_size):
            raise RuntimeError(f"Expected hidden size {(layers, N, self.hidden_size)}, got {list(c0.shape)}")
        return h0, c0

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)


class RNNCellBase(Module):
    _mode = None

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        _checks.sizes(type(self).__name__, ("hidden_size",), input_size=input_size, hidden_size=hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        dt = dtype or _C.float32
        self.weight_ih = Parameter(_C._ops.empty([num_chunks * hidden_size, input_size], dtype=dt))
        self.weight_hh = Parameter(_C._ops.empty([num_chunks * hidden_size, hidden_size], dtype=dt))
        if bias:
            self.bias_ih = Parameter(_C._ops.empty([num_chunks * hidden_size], dtype=dt))
            self.bias_hh = Parameter(_C._ops.empty([num_chunks * hidden_size], dtype=dt))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    reset_parameters = RNNBase.reset_parameters

    def _batched(self, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        return batched, (input if batched else input.unsqueeze(0))

    def _zeros(self, x):
        return _C._ops.zeros([x.shape[0], self.hidden_size], dtype=x.dtype)

    def _run(self, input, hx):
        batched, x = self._batched(input, hx)
        if hx is None:
            state = (self._zeros(x), self._zeros(x)) if self._mode == "LSTM" else self._zeros(x)
        elif self._mode == "LSTM":
            state = hx if batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        else:
            state = hx if batched else hx.unsqueeze(0)
        out = _step(self._mode, F.linear(x, self.weight_ih, self.bias_ih), state, self.weight_hh, self.bias_hh)
        if batched:
            return out
        return (out[0].squeeze(0), out[1].squeeze(0)) if self._mode == "LSTM" else out.squeeze(0)

    def forward(self, input, hx=None):
        return self._run(input, hx)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class LSTMCell(RNNCellBase):
    _mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)


class GRUCell(RNNCellBase):
    _mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)
