"""kiln.utils.data: torch.utils.data's datasets, samplers and DataLoader. See docs/data.md."""
from .dataset import (Dataset, IterableDataset, TensorDataset, ConcatDataset, ChainDataset, Subset,
                      StackDataset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from ._collate import default_collate, default_convert
from ._worker import get_worker_info, WorkerInfo
from .dataloader import DataLoader
from . import distributed  # noqa: F401  DistributedSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset",
           "StackDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "default_collate",
           "default_convert", "get_worker_info", "WorkerInfo", "DataLoader"]
