"""kiln.autograd: backward and grad over several tensors (as torch.autograd)."""
from . import _C


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    retain = create_graph if retain_graph is None else retain_graph
    _C._backward(tensors, grad_tensors, retain, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    retain = create_graph if retain_graph is None else retain_graph
    return _C._grad(outputs, inputs, grad_outputs, retain, create_graph, allow_unused)
