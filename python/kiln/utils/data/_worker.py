"""What runs in a DataLoader worker process, and what the worker and the main process share: the
fetch of one batch (also used without workers), get_worker_info(), and the wrappers a worker
sends back for an error or for the end of an IterableDataset."""
import pickle
import queue
import os
import random
import sys
import traceback

from ... import _C

_worker_info = None


class WorkerInfo:
    """id, num_workers, seed and dataset (the worker's copy) of the current worker process."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


def get_worker_info():
    """The WorkerInfo of this worker process; None in the main process."""
    return _worker_info


class Fetcher:
    """Turns one element of the index sampler into one batch: a list of indices into a collated
    list of samples (map-style), or the next batch_size samples of the iterator (iterable)."""

    def __init__(self, dataset, is_iterable, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn, self.drop_last = dataset, auto_collation, collate_fn, drop_last
        self.iterator = iter(dataset) if is_iterable else None
        self.ended = False

    def __call__(self, index):
        if self.iterator is None:
            if not self.auto_collation:
                return self.collate_fn(self.dataset[index])
            getitems = getattr(self.dataset, "__getitems__", None)
            return self.collate_fn(getitems(index) if getitems else [self.dataset[i] for i in index])
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        batch = []
        for _ in index:
            try:
                batch.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process and raised there again with
    the worker's traceback in its message (as torch does)."""

    def __init__(self, where):
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.where = where
        self.text = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.text}"
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - an exception type that needs other arguments
            raise RuntimeError(msg) from None
        raise exc


class IterableEnded:
    """A worker's IterableDataset copy is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


def _single_threaded():
    """A forked child must not enter OpenMP's parallel regions: libgomp's thread pool did not
    survive the fork, and its next parallel region would wait forever. One thread per worker, as in
    PyTorch's workers."""
    try:
        import ctypes
        ctypes.CDLL("libgomp.so.1").omp_set_num_threads(1)
    except OSError:
        pass


def worker_loop(dataset, is_iterable, auto_collation, collate_fn, drop_last, index_queue, result_queue,
                worker_id, num_workers, seed, worker_init_fn, parent_pid):
    global _worker_info
    _single_threaded()
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    random.seed(seed)
    _C.manual_seed(seed)
    where = f"in DataLoader worker process {worker_id}"
    pending_error = fetch = None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetch = Fetcher(dataset, is_iterable, auto_collation, collate_fn, drop_last)
    except Exception:  # noqa: BLE001 - reported with the first batch asked for
        pending_error = ExceptionWrapper(where)
    while True:
        try:
            task = index_queue.get(timeout=5.0)
        except queue.Empty:
            if os.getppid() != parent_pid:  # the main process is gone
                break
            continue
        if task is None:
            result_queue.cancel_join_thread()  # results nobody will read must not block the exit
            break
        epoch, task_id, index = task
        if task_id is None:  # persistent workers, a new epoch: the dataset starts over
            try:
                fetch = Fetcher(dataset, is_iterable, auto_collation, collate_fn, drop_last)
            except Exception:  # noqa: BLE001
                pending_error = ExceptionWrapper(where)
            continue
        if pending_error is not None:
            data, pending_error = pending_error, None
        else:
            try:
                data = fetch(index)
            except StopIteration:
                data = IterableEnded(worker_id)
            except Exception:  # noqa: BLE001 - raised again in the main process
                data = ExceptionWrapper(where)
        try:
            payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a batch that cannot be sent is an error of that batch
            payload = pickle.dumps(ExceptionWrapper(where + " (sending its batch to the main process)"))
        result_queue.put((epoch, task_id, payload))
