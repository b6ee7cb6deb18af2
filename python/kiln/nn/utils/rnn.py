"""Variable-length sequences for the recurrent layers, as torch.nn.utils.rnn: pad_sequence,
PackedSequence (time-major packed rows of the sequences sorted by decreasing length, with
batch_sizes per step), pack_padded_sequence, pad_packed_sequence, pack_sequence,
unpad_sequence, unpack_sequence. RNN/LSTM/GRU take a PackedSequence and return one."""
from collections import namedtuple

from ... import _C

_ops = _C._ops


def _index(values):
    return _C.tensor(list(values), dtype=_C.int64)


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data: (sum of lengths, *) rows, step by step; batch_sizes[t]: how many sequences are
    longer than t; sorted_indices: the batch order by decreasing length (None when the input was
    sorted already), unsorted_indices its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _invert(perm):
    out = [0] * len(perm.tolist())
    for i, p in enumerate(perm.tolist()):
        out[p] = i
    return _index(out)


def _lengths_list(lengths):
    return [int(v) for v in (lengths.tolist() if isinstance(lengths, _C.Tensor) else lengths)]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks (L_i, *) tensors into (L_max, N, *) (or (N, L_max, *)), padded with padding_value."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        extra = longest - s.shape[0]
        if extra:
            pad = _ops.full([extra] + list(s.shape[1:]), padding_value, dtype=s.dtype)
            s = _ops.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return _ops.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    lens = _lengths_list(lengths)
    if any(n <= 0 for n in lens):
        raise RuntimeError("Length of all samples has to be greater than 0")
    order = sorted(range(len(lens)), key=lambda i: -lens[i])  # stable: ties keep their order, as torch
    if enforce_sorted:
        if order != list(range(len(lens))):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        sorted_indices = _index(order)
    x = input.transpose(0, 1) if batch_first else input  # (L, N, *)
    if sorted_indices is not None:
        x = x.index_select(1, sorted_indices)
    slens = [lens[i] for i in order]
    batch_sizes = [sum(1 for n in slens if n > t) for t in range(slens[0])]
    data = _ops.cat([x[t, :b] for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _index(batch_sizes), sorted_indices, None)


def _padded_sorted(sequence):
    """(L, N, *) padded with zeros, in sorted order, and the sorted lengths."""
    bs = sequence.batch_sizes.tolist()
    lens = [sum(1 for b in bs if b > i) for i in range(bs[0])]
    steps, start = [], 0
    for b in bs:
        step = sequence.data[start:start + b]
        if b < bs[0]:
            step = _ops.cat([step, _ops.zeros([bs[0] - b] + list(step.shape[1:]), dtype=step.dtype)], 0)
        steps.append(step)
        start += b
    return _ops.stack(steps, 0), lens


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    padded, lens = _padded_sorted(sequence)
    if padding_value != 0.0:
        mask = _C.tensor([[t >= n for n in lens] for t in range(padded.shape[0])], dtype=_C.bool)
        padded = padded.masked_fill(mask.reshape(list(mask.shape) + [1] * (padded.dim() - 2)), padding_value)
    if total_length is not None:
        if total_length < padded.shape[0]:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence "
                             f"({padded.shape[0]}), got {total_length}")
        extra = total_length - padded.shape[0]
        if extra:
            fill = _ops.full([extra] + list(padded.shape[1:]), padding_value, dtype=padded.dtype)
            padded = _ops.cat([padded, fill], 0)
    lengths = _index(lens)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths.index_select(0, sequence.unsorted_indices)
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def pack_sequence(sequences, enforce_sorted=True):
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
