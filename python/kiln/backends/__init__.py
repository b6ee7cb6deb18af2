"""kiln.backends: the flags scripts set in their first lines (torch.backends.cuda.matmul.allow_tf32,
torch.backends.cudnn.benchmark, ...). They are plain settable attributes with PyTorch's defaults;
kiln runs on the CPU, so none of them changes a result. is_available()/is_built() answer as
PyTorch's CPU build does."""
from . import cuda, cudnn, mps, mkldnn, openmp  # noqa: F401
