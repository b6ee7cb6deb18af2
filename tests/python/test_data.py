"""kiln.utils.data against torch.utils.data (issue 14 item 5): the same datasets, samplers and
DataLoader settings give the same batches (values, dtypes, structure, order) wherever the result is
deterministic; shuffles are checked as seeded permutations (kiln's RNG stream is not torch's).
Worker processes: order, worker_init_fn, get_worker_info, errors re-raised, clean shutdown."""
import collections
import gc

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import kiln
import kiln.utils.data as kdata

Point = collections.namedtuple("Point", "x y")


def norm(x):
    """A batch as plain Python data, the same for kiln and torch results."""
    if isinstance(x, (kiln.Tensor, torch.Tensor)):
        return ("T", str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist())
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, [norm(v) for v in x])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [norm(v) for v in x])
    return x


def both(fn):
    """fn(M, D) run with (kiln, kiln.utils.data) and (torch, torch.utils.data), normalised."""
    return norm(fn(kiln, kdata)), norm(fn(torch, tdata))


def make_dataset(D, kind):
    class Samples(D.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            if kind == "dict":
                return {"id": i, "x": np.full((2,), i, dtype=np.float32), "name": f"s{i}", "w": i * 0.5}
            if kind == "tuple":
                return (np.int64(i), float(i) / 4, [i, i + 1], True if i % 2 else False)
            if kind == "namedtuple":
                return Point(np.arange(3, dtype=np.int32) + i, np.float64(i))
            return np.arange(4, dtype=np.float64).reshape(2, 2) * i
    return Samples()


@pytest.mark.parametrize("kind", ["dict", "tuple", "namedtuple", "array"])
@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (1, False)])
def test_default_collate_batches_match_pytorch(kind, batch_size, drop_last):
    k, t = both(lambda M, D: list(D.DataLoader(make_dataset(D, kind), batch_size=batch_size, drop_last=drop_last)))
    assert k == t


def test_tensor_dataset_samplers_and_batch_sampler_match_pytorch():
    def run(M, D):
        ds = D.TensorDataset(M.arange(20).reshape(10, 2), M.arange(10).float())
        out = [list(D.DataLoader(ds, batch_size=4)),
               list(D.DataLoader(ds, batch_size=None)),
               list(D.DataLoader(ds, batch_sampler=D.BatchSampler(D.SequentialSampler(ds), 3, False))),
               list(D.DataLoader(ds, sampler=[9, 0, 4, 4], batch_size=2)),
               list(D.BatchSampler(range(10), 4, True)), list(D.BatchSampler(range(10), 4, False)),
               [len(D.DataLoader(ds, batch_size=b, drop_last=d)) for b in (1, 3, 4, 10) for d in (False, True)],
               ds[3], len(ds)]
        concat = D.ConcatDataset([ds, D.Subset(ds, [5, 1, 2])])
        out += [len(concat), [concat[i] for i in (0, 9, 10, 12, -1, -13)], (ds + ds)[15]]
        return out
    k, t = both(run)
    assert k == t


def test_collate_fn_and_pin_memory():
    def run(M, D):
        ds = D.TensorDataset(M.arange(6))
        return list(D.DataLoader(ds, batch_size=4, collate_fn=lambda b: [int(x[0]) * 10 for x in b], pin_memory=True))
    k, t = both(run)
    assert k == t == ("list", [("list", [0, 10, 20, 30]), ("list", [40, 50])])


def test_bad_options_raise_as_in_pytorch():
    for kwargs in ({"batch_sampler": [[0]], "batch_size": 2}, {"sampler": [0], "shuffle": True},
                   {"batch_size": None, "drop_last": True}, {"num_workers": -1}, {"prefetch_factor": 2},
                   {"persistent_workers": True}):
        msgs = []
        for D in (kdata, tdata):
            with pytest.raises(ValueError) as e:
                D.DataLoader(D.TensorDataset(kiln.ones(2) if D is kdata else torch.ones(2)), **kwargs)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1], kwargs

    class Stream(kdata.IterableDataset):
        def __iter__(self):
            return iter(range(3))
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        kdata.DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="Sum of input lengths"):
        kdata.random_split(range(5), [2, 2])


class WhoFetched:
    """Map-style dataset whose samples say which worker fetched them."""

    def __init__(self, D, n=23):
        self.D, self.n = D, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = self.D.get_worker_info()
        return {"i": i, "worker": -1 if info is None else info.id, "num_workers": 0 if info is None else info.num_workers}


def _init_marker(worker_id):
    import builtins
    builtins._kiln_test_init = worker_id * 100  # seen by ShardedStream in the same worker


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_worker_processes_keep_order_and_match_pytorch(num_workers):
    k, t = both(lambda M, D: list(D.DataLoader(WhoFetched(D), batch_size=4, num_workers=num_workers)))
    assert k == t
    single = norm(list(kdata.DataLoader(WhoFetched(kdata), batch_size=4)))
    assert [b["i"] for b in k[1]] == [b["i"] for b in single[1]]  # the same batches as without workers


class ShardedStream:
    @staticmethod
    def make(D, shard):
        class Stream(D.IterableDataset):
            def __iter__(self):
                info = D.get_worker_info()
                import builtins
                mark = getattr(builtins, "_kiln_test_init", -1)
                if info is None or not shard:
                    return iter([(i, mark) for i in range(12)])
                return iter([(i, mark) for i in range(info.id, 12, info.num_workers)])

            def __len__(self):
                return 12
        return Stream()


@pytest.mark.parametrize("shard", [True, False])
def test_iterable_dataset_with_workers_matches_pytorch(shard):
    def run(M, D):
        ds = ShardedStream.make(D, shard)
        return [list(D.DataLoader(ds, batch_size=5, num_workers=2, worker_init_fn=_init_marker)),
                list(D.DataLoader(ds, batch_size=5, drop_last=True, num_workers=2, worker_init_fn=_init_marker)),
                list(D.DataLoader(ds, batch_size=None, num_workers=3)),
                list(D.DataLoader(ds, batch_size=5))]
    k, t = both(run)
    assert k == t


class Failing:
    def __init__(self, D):
        self.D = D

    def __len__(self):
        return 10

    def __getitem__(self, i):
        if i == 6:
            raise ValueError(f"sample {i} is broken")
        return i


@pytest.mark.parametrize("num_workers", [0, 2])
def test_worker_errors_are_raised_in_the_main_process(num_workers):
    loader = kdata.DataLoader(Failing(kdata), batch_size=2, num_workers=num_workers)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError, match="sample 6 is broken") as e:
        list(it)
    if num_workers:
        assert "Caught ValueError in DataLoader worker process 1" in str(e.value)
        assert "Traceback" in str(e.value) and "__getitem__" in str(e.value)
        assert not any(w.is_alive() for w in it._workers)


def test_workers_shut_down_when_the_loop_ends_early():
    loader = kdata.DataLoader(WhoFetched(kdata, 200), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    del it
    gc.collect()
    assert not any(w.is_alive() for w in workers)
    it = iter(loader)
    assert len(it) == 100 and sum(1 for _ in it) == 100
    assert not any(w.is_alive() for w in it._workers)


class RandomSamples(kdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = kdata.get_worker_info()
        return kiln.rand(1).item(), info.seed


def test_worker_seeds_differ_per_worker_and_follow_the_main_seed():
    def draw():
        kiln.manual_seed(7)
        return [tuple(b) for b in kdata.DataLoader(RandomSamples(), batch_size=None, num_workers=2)]
    a, b = draw(), draw()
    assert a == b
    assert a[0][1] != a[1][1] and a[0][1] == a[2][1]  # workers 0 and 1 alternate
    assert a[0][0] != a[1][0]


def test_seeded_shuffle_and_random_samplers():
    ds = kdata.TensorDataset(kiln.arange(50))

    def epoch(seed):
        g = kiln.Generator().manual_seed(seed)
        return [int(v) for (b,) in kdata.DataLoader(ds, batch_size=8, shuffle=True, generator=g) for v in b.tolist()]
    kiln.manual_seed(0)
    before = kiln.rand(3).tolist()
    kiln.manual_seed(0)
    first = epoch(1)
    assert kiln.rand(3).tolist() == before  # a Generator leaves the global stream alone
    assert first == epoch(1) and first != epoch(2) and sorted(first) == list(range(50)) and first != list(range(50))
    kiln.manual_seed(3)
    e1 = [int(v) for (b,) in kdata.DataLoader(ds, batch_size=50, shuffle=True) for v in b.tolist()]
    e2 = [int(v) for (b,) in kdata.DataLoader(ds, batch_size=50, shuffle=True) for v in b.tolist()]
    kiln.manual_seed(3)
    assert [int(v) for (b,) in kdata.DataLoader(ds, batch_size=50, shuffle=True) for v in b.tolist()] == e1 != e2

    g = kiln.Generator().manual_seed(0)
    assert sorted(kdata.RandomSampler(range(10), generator=g)) == list(range(10))
    drawn = list(kdata.RandomSampler(range(10), replacement=True, num_samples=25, generator=g))
    assert len(drawn) == 25 and all(0 <= d < 10 for d in drawn)
    assert len(list(kdata.RandomSampler(range(10), num_samples=23, generator=g))) == 23
    assert sorted(kdata.SubsetRandomSampler([3, 8, 9], generator=g)) == [3, 8, 9]
    weighted = list(kdata.WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=g))
    assert 0 not in weighted and 2.5 < weighted.count(2) / weighted.count(1) < 3.5
    assert sorted(kdata.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=g)) == [0, 1, 2]


@pytest.mark.parametrize("n,lengths", [(10, [0.5, 0.5]), (10, [0.3, 0.3, 0.4]), (11, [0.7, 0.2, 0.1]),
                                       (7, [0.25, 0.25, 0.25, 0.25]), (9, [4, 5])])
def test_random_split_lengths_match_pytorch(n, lengths):
    ks = kdata.random_split(range(n), lengths, generator=kiln.Generator().manual_seed(0))
    ts = tdata.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ks] == [len(s) for s in ts]
    flat = [i for s in ks for i in s]
    assert sorted(flat) == list(range(n))
    again = kdata.random_split(range(n), lengths, generator=kiln.Generator().manual_seed(0))
    assert [list(s) for s in again] == [list(s) for s in ks]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_tensor_batches_through_workers(context):
    """Tensors cross the process boundary by pickling (kiln tensors pickle); with 'spawn' the
    dataset itself is pickled into each worker too."""
    x = kiln.arange(30, dtype=kiln.float32).reshape(15, 2).bfloat16()
    ds = kdata.TensorDataset(x, kiln.arange(15) > 7)
    got = list(kdata.DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context=context))
    want = list(kdata.DataLoader(ds, batch_size=4))
    assert norm(got) == norm(want) and got[0][0].dtype == kiln.bfloat16


def test_data_doc_example_runs():
    import os
    import re
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "data.md")
    blocks = re.findall(r"```python\n(.*?)```", open(doc, encoding="utf-8").read(), flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, doc, "exec"), {"__name__": "docs_data_example"})


def test_distributed_sampler_shards_as_pytorch():
    from kiln.utils.data.distributed import DistributedSampler as KD
    from torch.utils.data.distributed import DistributedSampler as TD
    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (4, 4, False), (3, 5, False)]:
        for rank in range(replicas):
            k = KD(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            t = TD(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            assert list(k) == list(t) and len(k) == len(t), (n, replicas, rank, drop_last)
    shards = [list(KD(range(12), num_replicas=3, rank=r, seed=5)) for r in range(3)]
    assert sorted(sum(shards, [])) == list(range(12)) and shards == [list(KD(range(12), 3, r, seed=5)) for r in range(3)]
    with pytest.raises(kiln.Error, match="no distributed backend"):
        KD(range(4))


def test_generic_subclassing_as_in_typed_scripts():
    class Pairs(kdata.Dataset[tuple]):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return (i, -i)

    class Evens(kdata.Sampler[int]):
        def __iter__(self):
            return iter([0, 2])

        def __len__(self):
            return 2

    class Stream(kdata.IterableDataset[int]):
        def __iter__(self):
            return iter([5, 6])

    assert norm(list(kdata.DataLoader(Pairs(), batch_size=2, sampler=Evens()))) == \
        ("list", [("list", [("T", "int64", (2,), [0, 2]), ("T", "int64", (2,), [0, -2])])])
    assert [b.tolist() for b in kdata.DataLoader(Stream(), batch_size=2)] == [[5, 6]]
    from kiln.utils.data.dataloader import default_collate  # the module paths scripts import from
    from kiln.utils.data.sampler import BatchSampler  # noqa: F401
    from kiln.utils.data.dataset import random_split  # noqa: F401
    assert default_collate([1, 2]).tolist() == [1, 2]


def _count_init(worker_id):
    import builtins
    builtins._kiln_test_inits = getattr(builtins, "_kiln_test_inits", 0) + 1


class InitCount(kdata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        import builtins
        import os
        return i, getattr(builtins, "_kiln_test_inits", 0), os.getpid()


@pytest.mark.parametrize("iterable", [False, True])
def test_persistent_workers_live_across_epochs(iterable):
    ds = ShardedStream.make(kdata, True) if iterable else InitCount()
    loader = kdata.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True, worker_init_fn=_count_init)
    fresh = [norm(b) for b in kdata.DataLoader(ds, batch_size=2, num_workers=2)]
    it = iter(loader)
    next(it)  # leave the first epoch early: its in-flight batches must not leak into the next
    epochs = [[norm(b) for b in loader] for _ in range(2)]
    assert [[b[1][0] for b in e] for e in epochs] == [[b[1][0] for b in fresh]] * 2
    if not iterable:
        assert all(b[1][1][3] == [1, 1] for e in epochs for b in e)  # worker_init_fn ran once per worker
        pids = {p for e in epochs for b in e for p in b[1][2][3]}
        assert len(pids) == 2  # the same two processes served both epochs
    workers = list(loader._workers_iter._workers)
    del it, loader
    gc.collect()
    assert not any(w.is_alive() for w in workers)


class Dies(kdata.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 3:
            import os
            os._exit(0)  # a worker that vanishes, even "successfully", must not hang the loop
        return i


def test_a_worker_that_dies_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(kdata.DataLoader(Dies(), batch_size=1, num_workers=1))
