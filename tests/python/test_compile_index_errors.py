"""An index out of range under kiln.compile's inductor backend raises the kiln.Error eager raises
(same text), for cross_entropy / nll_loss targets, gather, index_select and embedding; ignore_index
stays ignored and the compiled function (and the process) stays usable after the error
(docs/compiler.md, Indirect loads)."""
import numpy as np
import pytest

import kiln
import kiln.nn.functional as KF


def rand(*shape):
    return kiln.tensor(np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32))


def ints(values):
    return kiln.tensor(np.array(values, dtype=np.int64))


def message(fn, *args):
    with pytest.raises(kiln.Error) as e:
        fn(*args)
    return str(e.value)


def close(a, b):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def first_lines(text):  # the op, the message and the hint (the inputs line is eager's dispatcher's)
    return [line for line in text.splitlines() if not line.strip().startswith(("inputs:", "at "))]


CASES = {
    "cross_entropy": (lambda x, t: KF.cross_entropy(x, t), lambda: rand(6, 10), [0, 9, 3, 3, 5, 1], [0, 9, 10, 3, 5, 1]),
    "nll_loss": (lambda x, t: KF.nll_loss(KF.log_softmax(x, 1), t), lambda: rand(6, 10), [0, 9, 3, 3, 5, 1], [0, -3, 3, 3, 5, 1]),
    "gather": (lambda x, i: kiln.gather(x, 1, i).exp(), lambda: rand(3, 5), [[0, 4], [1, 2], [2, 3]], [[0, 4], [1, 5], [2, 3]]),
    "index_select": (lambda x, i: kiln.index_select(x, 0, i) * 2.0, lambda: rand(8, 4), [7, 0, 3], [7, 8, 3]),
    "embedding": (lambda x, i: KF.embedding(i, x).sum(1), lambda: rand(8, 4), [[1, 7], [0, 2]], [[1, 7], [-1, 2]]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_of_range_index_raises_as_eager(case):
    fn, make, good, bad = CASES[case]
    x, good, bad = make(), ints(good), ints(bad)
    f = kiln.compile(fn, backend="inductor")
    close(f(x, good), fn(x, good))
    want = message(fn, x, bad)
    assert "out of" in want
    assert first_lines(message(f, x, bad)) == first_lines(want)
    close(f(x, good), fn(x, good))  # usable after the error


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_ignore_index_is_still_ignored(loss):
    fn, make, _, _ = CASES[loss]
    x, t = make(), ints([0, -100, 3, -100, 5, 1])
    close(kiln.compile(fn, backend="inductor")(x, t), fn(x, t))
