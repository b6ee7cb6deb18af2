"""kiln.cuda.amp: PyTorch's deprecated spellings, torch.cuda.amp.autocast(...) and
torch.cuda.amp.GradScaler(...), are kiln.amp's with device 'cuda'. Without CUDA both disable
themselves with a warning, as in PyTorch."""
from .. import amp as _amp


class autocast(_amp.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
        self._args = (enabled, dtype, cache_enabled)


class GradScaler(_amp.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
