"""kiln.nn.parallel: DataParallel with no accelerator is what PyTorch makes it on the CPU, a wrapper
whose forward calls the module (state_dict keys gain the "module." prefix, as in torch).
DistributedDataParallel needs kiln.distributed, which does not exist yet: constructing one raises a
kiln.Error naming the missing feature."""
from ..module import Module
from ..._unavailable import unavailable


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        raise unavailable("kiln.nn.parallel.DistributedDataParallel()", "kiln has no distributed backend yet "
                          "(multi-process training is not implemented)",
                          "train the module directly; kiln.distributed.is_available() is False")


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return module(*inputs, **(module_kwargs or {}))
