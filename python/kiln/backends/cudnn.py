"""kiln.backends.cudnn: torch.backends.cudnn's flags with PyTorch's defaults (settable, no effect:
kiln has no cuDNN). is_available() is False and version() None, as in PyTorch's CPU build."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available():
    return False


def version():
    return None
