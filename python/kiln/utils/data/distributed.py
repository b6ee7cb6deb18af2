"""DistributedSampler: each of num_replicas processes takes every num_replicas-th index (from its
rank), the list padded by repeating its start (or cut, with drop_last) to a multiple of
num_replicas, as torch.utils.data.distributed. kiln has no process group, so num_replicas and rank
must be given; shuffling is seeded with seed + epoch (set_epoch), from kiln's random stream."""
import math

from ... import _creation
from ..._generator import Generator, drawing
from ..._unavailable import unavailable
from .sampler import Sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            raise unavailable("kiln.utils.data.distributed.DistributedSampler()",
                              "num_replicas and rank come from a process group, and kiln has no distributed backend yet",
                              "pass num_replicas= and rank= explicitly")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            with drawing(Generator().manual_seed(self.seed + self.epoch)):
                indices = _creation.randperm(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
