"""Samplers with torch.utils.data's semantics: they yield dataset indices (BatchSampler: lists of
them). Random ones draw from kiln's RNG, from their `generator` (a kiln.Generator) when given, so a
seed fixes the order; kiln's stream is not PyTorch's, so the shuffled orders differ from torch's."""
import typing

from ... import _C
from ... import _creation
from ..._generator import drawing


T_co = typing.TypeVar("T_co", covariant=True)


class Sampler(typing.Generic[T_co]):
    """Yields indices (or lists of them); generic, as torch's: `class MySampler(Sampler[int])`."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _positive_int(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} should be a positive integer value, but got {what}={value}")


class RandomSampler(Sampler):
    """A fresh permutation per epoch (replacement=False), or num_samples uniform draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        with drawing(self.generator):
            if self.replacement:
                draws = _creation.randint(0, n, (self.num_samples,)).tolist()
            else:
                draws = []
                while len(draws) < self.num_samples:
                    draws += _creation.randperm(n).tolist()
                draws = draws[:self.num_samples]
        return iter(draws)

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        with drawing(self.generator):
            order = _creation.randperm(len(self.indices)).tolist()
        return iter([self.indices[i] for i in order])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int(num_samples, "num_samples")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = weights.to(_C.float64) if isinstance(weights, _C.Tensor) else _C.tensor(list(weights), dtype=_C.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        with drawing(self.generator):
            return iter(_C._ops.multinomial(self.weights, self.num_samples, replacement=self.replacement).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
