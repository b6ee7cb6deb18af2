"""kiln.backends.cuda: torch.backends.cuda's flags (settable, no effect: there is no CUDA here)."""


class _MatmulFlags:
    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self):
        return f"kiln.backends.cuda.matmul({vars(self)})"


matmul = _MatmulFlags()


def is_built():
    return False


_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _sdp_flag(kind):
    def enabled():
        return _sdp[kind]

    def enable(on):
        _sdp[kind] = bool(on)
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_flag("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_flag("mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_flag("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_flag("cudnn")
