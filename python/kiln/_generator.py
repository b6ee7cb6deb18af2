"""kiln.Generator: an RNG stream of its own, as torch.Generator, for the `generator=` arguments of
kiln.utils.data (seeded shuffles, random_split). kiln's ops draw from one global stream, so a
Generator keeps that stream's state for itself and swaps it in while it draws (`drawing(g)`), which
leaves the global stream exactly where it was."""
import contextlib
import os

from . import _C

_DEFAULT_SEED = 67280421310721  # torch.Generator().initial_seed()


class Generator:
    def __init__(self, device="cpu"):
        self.device = _C.device(device) if isinstance(device, str) else device
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        outside = _C.get_rng_state()
        try:
            _C.manual_seed(seed)
            self._state = _C.get_rng_state()
        finally:
            _C.set_rng_state(*outside)
        self._seed = int(seed)
        return self

    def seed(self):
        """Seeds from the OS's entropy and returns the seed, as torch.Generator.seed()."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self._state

    def set_state(self, state):
        self._state = state
        return self

    def __repr__(self):
        return f"kiln.Generator(device='{self.device}', initial_seed={self._seed})"


@contextlib.contextmanager
def drawing(generator):
    """Within the block kiln's random ops draw from `generator` (the global stream when None)."""
    if generator is None:
        yield
        return
    outside = _C.get_rng_state()
    _C.set_rng_state(*generator._state)
    try:
        yield
    finally:
        generator._state = _C.get_rng_state()
        _C.set_rng_state(*outside)
