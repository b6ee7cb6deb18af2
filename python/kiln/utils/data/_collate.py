"""default_collate / default_convert with torch.utils.data's rules: a batch of tensors is stacked;
NumPy arrays and NumPy scalars become tensors of their dtype and are stacked; Python floats become a
float64 tensor, ints an int64 one (bools a bool one); strings stay a list; dicts, namedtuples,
tuples and lists are collated field by field (tuples come back as lists, as in torch)."""
import collections.abc

from ... import _C

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(x):
    return type(x).__module__ == "numpy"


def _numpy_to_tensor(a):
    import numpy as np
    if a.dtype.kind in "USO":  # strings and objects have no tensor dtype
        return None
    return _C.from_numpy(np.array(a, copy=True, order="C"))


def default_convert(data):
    """NumPy arrays (and those inside mappings and sequences) to tensors; everything else as is."""
    if isinstance(data, _C.Tensor):
        return data
    if _is_numpy(data) and hasattr(data, "dtype"):  # an array or a NumPy scalar
        import numpy as np
        t = _numpy_to_tensor(np.asarray(data))
        return data if t is None else t
    if isinstance(data, collections.abc.Mapping):
        return _same_type(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_type(data, [default_convert(d) for d in data])
    return data


def _same_type(like, value):
    try:
        return type(like)(value)
    except TypeError:  # a type that cannot be built from a plain dict / list
        return value


def default_collate(batch):
    """Collates a list of samples into a batch (see the module docstring for the rules)."""
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _C._ops.stack(list(batch), 0)
    if _is_numpy(elem):
        import numpy as np
        if isinstance(elem, np.ndarray):
            tensors = [_numpy_to_tensor(b) for b in batch]
            if tensors[0] is None:
                raise TypeError(_ERR.format(elem.dtype))
            return _C._ops.stack(tensors, 0)
        if isinstance(elem, np.generic):  # a NumPy scalar: a tensor of its dtype
            return _numpy_to_tensor(np.array(batch))
    if isinstance(elem, bool):
        return _C.tensor(list(batch), dtype=_C.bool) if all(isinstance(b, bool) for b in batch) else _C.tensor(list(batch))
    if isinstance(elem, float):
        return _C.tensor(list(batch), dtype=_C.float64)
    if isinstance(elem, int):
        return _C.tensor(list(batch), dtype=_C.int64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _same_type(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [default_collate(samples) for samples in zip(*batch)]
        return columns if isinstance(elem, tuple) else _same_type(elem, columns)
    raise TypeError(_ERR.format(type(elem)))
