"""kiln.backends.cuda: torch.backends.cuda's flags (settable, no effect: there is no CUDA here)."""


import warnings

_precision = {"float32_matmul": "highest"}


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: 'highest', 'high' or 'medium' (recorded; kiln's CPU
    matmuls are always full float32). Another value warns and changes nothing, as in torch."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _precision["float32_matmul"] = precision


def get_float32_matmul_precision():
    return _precision["float32_matmul"]


class _MatmulFlags:
    """allow_tf32 is another view of the float32 matmul precision, as in torch: True means 'high'."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self):
        return _precision["float32_matmul"] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, on):
        _precision["float32_matmul"] = "high" if on else "highest"

    def __repr__(self):
        return f"kiln.backends.cuda.matmul(allow_tf32={self.allow_tf32}, {vars(self)})"


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
