"""DataLoader with torch.utils.data's semantics: batches from a sampler (or an IterableDataset),
collated by collate_fn, in the main process (num_workers=0) or fetched by worker processes that
return them in the sampler's order. pin_memory is accepted and does nothing (there is no GPU to pin
for). persistent_workers=True keeps the worker processes from one epoch to the next (each starts its
dataset over); in_order=False is accepted, but batches always come in the sampler's order."""
import itertools
import os
import pickle
import queue
import time

from ... import _creation
from ..._generator import drawing
from . import _worker
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an IterableDataset: the dataset decides what comes next."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            for name, value in (("shuffle", shuffle if shuffle not in (None, False) else None), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetcher(self):
        return _worker.Fetcher(self.dataset, self._is_iterable, self._auto_collation, self.collate_fn, self.drop_last)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        it = getattr(self, "_workers_iter", None)
        if it is None or it._shut:
            it = self._workers_iter = _MultiProcessIter(self)
        else:
            it._next_epoch()
        return it

    def __len__(self):
        if self._is_iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _SingleProcessIter:
    def __init__(self, loader):
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        self._fetch = loader._fetcher()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        return self._fetch(next(self._indices))


class _MultiProcessIter:
    """Tasks (task id, sampler element) go round-robin to the workers' index queues, at most
    prefetch_factor per worker ahead; results come back on one queue in any order and are yielded
    in task order. An exhausted IterableDataset copy takes its worker out of the rotation."""

    def __init__(self, loader):
        import multiprocessing  # with the first worker, not with `import kiln`
        ctx = loader.multiprocessing_context
        if ctx is None or isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        with drawing(loader.generator):
            base_seed = int(_creation.randint(0, 2 ** 62, (1,)).item())
        self._loader = loader
        self._timeout = loader.timeout
        n = loader.num_workers
        self._workers = []
        self._result_queue = ctx.Queue()
        self._index_queues = [ctx.Queue() for _ in range(n)]
        self._shut = False  # from here on __del__ shuts down what was started
        for i in range(n):
            w = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                loader.dataset, loader._is_iterable, loader._auto_collation, loader.collate_fn, loader.drop_last,
                self._index_queues[i], self._result_queue, i, n, base_seed + i, loader.worker_init_fn, os.getpid()))
            w.start()
            self._workers.append(w)
        self._epoch = 0
        self._start_epoch()

    def _start_epoch(self):
        n = len(self._workers)
        self._indices = iter(self._loader._index_sampler)
        self._active = [True] * n
        self._rotation = itertools.cycle(range(n))
        self._task_worker = {}  # task id -> worker, for tasks sent and not yet yielded
        self._arrived = {}  # task id -> batch that came before its turn
        self._send_idx = self._rcvd_idx = 0
        for _ in range(self._loader.prefetch_factor * n):
            self._put_task()

    def _next_epoch(self):
        """Persistent workers: results still in flight from the last epoch are dropped (tagged with
        their epoch), and each worker starts its dataset over."""
        self._epoch += 1
        for q in self._index_queues:
            q.put((self._epoch, None, None))
        self._start_epoch()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def _put_task(self):
        worker = next((w for w in (next(self._rotation) for _ in self._active) if self._active[w]), None)
        if worker is None:
            return
        try:
            index = next(self._indices)
        except StopIteration:
            return
        self._index_queues[worker].put((self._epoch, self._send_idx, index))
        self._task_worker[self._send_idx] = worker
        self._send_idx += 1

    def _get(self):
        start = time.monotonic()
        while True:
            try:
                return self._result_queue.get(timeout=1.0)
            except queue.Empty:
                dead = [w.pid for w in self._workers if w.exitcode is not None]  # none exits before shutdown
                if dead:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited unexpectedly")
                if self._timeout and time.monotonic() - start > self._timeout:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def __next__(self):
        while True:
            # Tasks of a worker whose dataset copy ended never get data: skip them.
            while (self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._arrived
                   and not self._active[self._task_worker[self._rcvd_idx]]):
                del self._task_worker[self._rcvd_idx]
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            if self._rcvd_idx in self._arrived:
                data = self._arrived.pop(self._rcvd_idx)
                del self._task_worker[self._rcvd_idx]
                self._rcvd_idx += 1
                self._put_task()
                return self._unpack(data)
            epoch, task_id, payload = self._get()
            if epoch != self._epoch:  # from an epoch left before its end
                continue
            data = pickle.loads(payload)
            if isinstance(data, _worker.IterableEnded):
                self._active[data.worker_id] = False
                self._put_task()
                continue
            self._arrived[task_id] = data

    def _unpack(self, data):
        if isinstance(data, _worker.ExceptionWrapper):
            self._shutdown()
            data.reraise()
        return data

    def _shutdown(self):
        if self._shut:
            return
        self._shut = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5.0)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in (*self._index_queues, self._result_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        if hasattr(self, "_shut"):
            self._shutdown()
