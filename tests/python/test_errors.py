"""Wrong types, shapes and dtypes passed from Python raise TypeError or kiln.Error with a clear
message; kiln.Error names the op, carries a hint where there is one, and points at the caller's
line in this file (also when the call goes through kiln's own Python layers, e.g. nn modules)."""
import inspect

import numpy as np
import pytest

import kiln
import kiln.nn as knn
import kiln.nn.functional as F


def next_line():
    return inspect.currentframe().f_back.f_lineno + 1


def check_location(err, line):
    assert err.file == __file__
    assert err.line == line
    assert f"at {__file__}:{line}" in str(err)


def test_error_is_runtime_error_subclass():
    assert issubclass(kiln.Error, RuntimeError)
    assert kiln.Error.__module__ == "kiln"


def test_matmul_shape_mismatch():
    a, b = kiln.randn(2, 3), kiln.randn(4, 5)
    with pytest.raises(kiln.Error, match=r"shapes \[2, 3\] and \[4, 5\] cannot be multiplied") as e:
        line = next_line()
        a @ b
    assert e.value.op == "matmul"
    assert "float32[2, 3], float32[4, 5]" in e.value.inputs
    check_location(e.value, line)


def test_broadcast_error_has_hint():
    with pytest.raises(kiln.Error, match="cannot be broadcast") as e:
        line = next_line()
        kiln.add(kiln.zeros(2, 3), kiln.zeros(4, 5))
    assert e.value.op == "add"
    assert "broadcast dims must be equal or 1" in e.value.hint
    check_location(e.value, line)


def test_view_wrong_numel():
    x = kiln.zeros(2, 3)
    with pytest.raises(kiln.Error, match=r"shape \[7\] is invalid for input of size 6") as e:
        line = next_line()
        x.view(7)
    assert e.value.op == "view" and e.value.hint
    check_location(e.value, line)


def test_dim_out_of_range():
    with pytest.raises(kiln.Error, match="dimension 5 is out of range for a 2-d tensor") as e:
        line = next_line()
        kiln.softmax(kiln.zeros(2, 3), 5)
    assert e.value.op == "softmax"
    check_location(e.value, line)


def test_dtype_errors():
    with pytest.raises(kiln.Error, match="integral dtype, got float32") as e:
        line = next_line()
        F.embedding(kiln.tensor([1.5]), kiln.zeros(3, 2))
    assert e.value.op == "embedding"
    check_location(e.value, line)
    with pytest.raises(kiln.Error, match="floating point values, not int64"):
        kiln.randn(2, dtype=kiln.int64)


def test_error_inside_nn_module_points_at_user_line():
    lin = knn.Linear(3, 4)
    with pytest.raises(kiln.Error, match=r"input features \(5\) do not match the weight's in_features \(3\)") as e:
        line = next_line()
        lin(kiln.zeros(2, 5))
    assert e.value.op == "linear"
    check_location(e.value, line)


def test_error_from_optimizer_and_load_state_dict_are_python_errors():
    lin = knn.Linear(3, 4)
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        lin.load_state_dict({"weight": kiln.zeros(3, 3), "bias": kiln.zeros(4)})
    with pytest.raises(TypeError, match="expected a kiln.Tensor, got ndarray"):
        knn.Parameter(np.zeros(3))


def test_item_of_many_elements():
    with pytest.raises(kiln.Error, match="6 elements cannot be converted") as e:
        line = next_line()
        kiln.zeros(2, 3).item()
    assert ".tolist()" in e.value.hint
    check_location(e.value, line)


def test_index_out_of_bounds():
    # IndexError, as PyTorch (iteration through __getitem__ relies on it); the traceback has the line.
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2") as e:
        kiln.zeros(2, 3)[5]
    assert e.traceback[-1].path.name == "test_errors.py"


@pytest.mark.parametrize("call,msg", [
    (lambda x: kiln.add(x, "a"), r"add\(\): argument 'other' must be a Tensor or a number, not str"),
    (lambda x: x.sum(dim="a"), r"sum\(\): argument 'dim' must be an int or a sequence of ints, not str"),
    (lambda x: kiln.zeros(2, dtype="float32"), r"argument 'dtype' must be a kiln.dtype"),
    (lambda x: kiln.tensor("abc"), r"cannot make a tensor from an element of type str"),
    (lambda x: x + "a", r"unsupported operand type\(s\) for \+"),
    (lambda x: kiln.add(x), r"missing required argument 'other'"),
    (lambda x: kiln.add(x, x, bogus=1), r"unexpected keyword argument 'bogus'"),
    (lambda x: kiln.optim.SGD(x, lr=0.1), r"iterable of Tensors"),
    (lambda x: knn.Sequential(knn.ReLU(), 3), r"int is not a Module subclass"),
])
def test_wrong_python_types_raise_type_error(call, msg):
    with pytest.raises(TypeError, match=msg):
        call(kiln.zeros(2, 3))


def test_module_attribute_type_errors():
    lin = knn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        lin.weight = kiln.zeros(2, 2)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'wieght'"):
        lin.wieght
