"""kiln.distributed: imports as torch.distributed does, so scripts that import
init_process_group / destroy_process_group at the top still start. kiln has no distributed
backend yet: is_available() and is_initialized() are False, and every call that needs a process
group raises a kiln.Error naming the missing feature."""
import enum

from .._unavailable import unavailable


def is_available():
    return False


def is_initialized():
    return False


def is_torchelastic_launched():
    return False


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def _needs_process_group(name):
    def call(*args, **kwargs):
        raise unavailable(f"kiln.distributed.{name}()", "kiln has no distributed backend yet "
                          "(multi-process training is not implemented)",
                          "run the script as one process (without torchrun); is_available() is False")
    call.__name__ = call.__qualname__ = name
    return call


for _name in ("init_process_group", "destroy_process_group", "get_rank", "get_world_size", "barrier",
              "all_reduce", "all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "reduce",
              "reduce_scatter", "gather", "scatter", "send", "recv", "new_group", "get_backend"):
    globals()[_name] = _needs_process_group(_name)
del _name
