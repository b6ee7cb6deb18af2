"""nn.Parameter: a kiln.Tensor that a Module registers when it is assigned as an attribute."""
from .. import _C


class Parameter(_C.Tensor):
    """A tensor that is a module parameter (as torch.nn.Parameter): shares `data`'s memory and
    requires grad by default."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _C._ops.empty([0])
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter(): expected a kiln.Tensor, got {type(data).__name__}")
        super().__init__(data.detach())
        self.requires_grad_(requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        out = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


class Buffer:
    """Marks a tensor as a buffer when assigned to a Module attribute (as torch.nn.Buffer)."""

    def __init__(self, data, persistent=True):
        self.data = data
        self.persistent = persistent


Parameter.__module__ = "kiln.nn"
