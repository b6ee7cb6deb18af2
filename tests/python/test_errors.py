"""Wrong types, shapes and dtypes passed from Python raise TypeError or kiln.Error with a clear
message; kiln.Error names the op, carries a hint where there is one, and points at the caller's
line in this file (also when the call goes through kiln's own Python layers, e.g. nn modules)."""
import inspect
import math

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


# Issue 15 part D: each of these said nothing useful ("std::bad_cast", a nanobind dump, the wrong
# function); each now names the function, the argument, what was given and what is accepted.
class _HugeIndex:
    def __index__(self):
        return 2**70


def _hook_returning_int():
    w = kiln.randn(3, requires_grad=True)
    w.register_hook(lambda g: 5)
    (w * 2).sum().backward()


def _set_requires_grad(x):
    x.requires_grad = "yes"


def _set_data(x):
    x.data = 5


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: x[2**63], IndexError, r"index 9223372036854775808 is out of bounds for dimension 0 with size 2"),
    (lambda x: x[_HugeIndex()], IndexError, r"index 1180591620717411303424 is out of bounds for dimension 0"),
    (lambda x: _hook_returning_int(), TypeError,
     r"Tensor.register_hook\(\): a hook must return a kiln.Tensor or None, but it returned int \(5\)"),
    (lambda x: (x.sum() * 1).backward(gradient=5), TypeError,
     r"Tensor.backward\(\): argument 'gradient' must be a kiln.Tensor or None, not int \(5\)"),
    (lambda x: kiln.mark_dynamic(x, 0, min=-5, max=2**70), ValueError,
     r"mark_dynamic\(\): argument 'max' must be in int64's range \[-2\*\*63, 2\*\*63 - 1\], got 1180591620717411303424"),
    (lambda x: kiln.mark_dynamic(x, 0, min=-5), ValueError, r"mark_dynamic\(\): a size range needs 0 <= min <= max, got min=-5"),
    (lambda x: kiln.compile(lambda a: a * 2, dynamic="yes")(x), TypeError,
     r"compile\(\): argument 'dynamic' must be a bool, not str \('yes'\)"),
    (lambda x: kiln.load(123), TypeError, r"load\(\): argument 'path' must be a str, not int \(123\)"),
    (lambda x: kiln.save([x], "/tmp/x.safetensors"), TypeError, r"save\(\): argument 'tensors' must be a dict, not list"),
    (lambda x: kiln.save({"x": x}, "/tmp/x.safetensors", {"a": 1}), TypeError,
     r"save\(\): argument 'metadata' must be a dict of str -> str, but it maps str \('a'\) to int \(1\)"),
    (lambda x: kiln.from_dlpack(None), TypeError, r"from_dlpack\(\): argument 'obj' must not be None"),
    (lambda x: kiln.manual_seed(2**64), ValueError,
     r"manual_seed\(\): argument 'seed' must be an int in \[-2\*\*63, 2\*\*64 - 1\], got 18446744073709551616"),
    (lambda x: kiln.manual_seed("1"), TypeError, r"manual_seed\(\): argument 'seed' must be an int, not str \('1'\)"),
    (lambda x: kiln.set_grad_enabled("no"), TypeError,
     r"set_grad_enabled\(\): argument 'mode' must be a bool, not str \('no'\)"),
    (_set_requires_grad, TypeError, r"Tensor.requires_grad must be a bool, not str \('yes'\)"),
    (_set_data, TypeError, r"Tensor.data must be a kiln.Tensor, not int \(5\)"),
    (lambda x: x.requires_grad_("a"), TypeError,
     r"Tensor.requires_grad_\(\): argument 'requires_grad' must be a bool, not str \('a'\)"),
    (lambda x: x.size("a"), TypeError, r"Tensor.size\(\): argument 'dim' must be an int, not str \('a'\)"),
    (lambda x: x.dim(5), TypeError, r"Tensor.dim\(\) takes 0 positional argument\(s\) but 1 were given"),
    (lambda x: x.to(1), TypeError, r"Tensor.to\(\): expected a dtype, a device or a Tensor, not int \(1\)"),
    (lambda x: kiln.device(5), TypeError, r"device\(\): argument 'type' must be a str, not int \(5\)"),
    (lambda x: kiln.device("cpu", "x"), TypeError, r"device\(\): argument 'index' must be an int, not str \('x'\)"),
    (lambda x: kiln.device(), TypeError, r"device\(\) takes type \(a str like 'cpu' or 'cuda:0'\)"),
    (lambda x: kiln.Tensor(1, 2), TypeError, r"Tensor\(\) takes one argument, data .*, but 2 were given"),
    (lambda x: kiln.empty(2.5), TypeError,
     r"empty\(\): argument 'size' must be an int or a sequence of ints, but tuple element 0 is float \(2.5\)"),
    (lambda x: kiln.zeros(), TypeError, r'zeros\(\) missing 1 required positional arguments: "size"'),
    (lambda x: kiln.add(x, 2**64), ValueError, r"add\(\): argument 'other' must be in int64's range"),
    (lambda x: knn.Linear(4.5, 3), TypeError, r"Linear\(\): argument 'in_features' must be an int, not float \(4.5\)"),
    (lambda x: knn.Conv2d(3, 4, 3, groups=0), ValueError, r"Conv2d\(\): argument 'groups' must be an int >= 1, got 0"),
    (lambda x: knn.Embedding(-1, 3), ValueError, r"Embedding\(\): argument 'num_embeddings' must be an int >= 0, got -1"),
    (lambda x: kiln.arange(0, math.inf), ValueError, r"arange\(\): argument 'end' must be a finite number, got inf"),
    (lambda x: kiln.arange(math.nan), ValueError, r"arange\(\): argument 'end' must be a finite number, got nan"),
    (lambda x: kiln.optim.SGD([knn.Parameter(x)], lr="a"), TypeError, r"SGD: option 'lr' must be a number, not str"),
    (lambda x: kiln.where(x > 0, x), TypeError, r"where\(\): argument 'other' is missing"),
    (lambda x: kiln.autograd.backward([x], retain_graph="yes"), TypeError,
     r"autograd.backward\(\): argument 'retain_graph' must be a bool, not str \('yes'\)"),
    (lambda x: kiln.autograd.grad([x], [x], allow_unused=1), TypeError,
     r"autograd.grad\(\): argument 'allow_unused' must be a bool, not int \(1\)"),
    (lambda x: kiln.autocast(enabled="no").__enter__(), TypeError,
     r"autocast\(\): argument 'enabled' must be a bool, not str \('no'\)"),
])
def test_errors_say_what_is_wrong(call, exc, msg):
    with pytest.raises(exc, match=msg) as e:
        call(kiln.zeros(2, requires_grad=False))
    text = str(e.value)
    assert "incompatible function arguments" not in text and "bad_cast" not in text


def test_invalid_utf8_safetensors_header_is_a_kiln_error(tmp_path):
    header = b'{"a\xff": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    path = tmp_path / "bad.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 4)
    with pytest.raises(kiln.Error, match="UTF-8") as e:
        kiln.load(str(path))
    assert "nanobind" not in str(e.value)


def test_no_public_binding_dumps_nanobind_overloads():
    """Every public function and method of kiln._C goes through the argument-error translation
    (kiln/_argerrors.py): called with an argument of no type it accepts, it never shows
    nanobind's "incompatible function arguments" dump."""
    class Nothing:
        pass

    x = kiln.zeros(2)
    checked = 0
    for owner, self_arg in [(kiln._C, ()), (kiln.Tensor, (x,))]:
        for name in dir(owner):
            fn = getattr(owner, name)
            if type(fn).__name__ not in ("_checked_function", "_checked_method"):
                continue
            for args in [(Nothing(),), (Nothing(), Nothing(), Nothing(), Nothing(), Nothing())]:
                try:
                    fn(*self_arg, *args)
                except Exception as e:  # noqa: BLE001 - any error is fine but a dump
                    assert "incompatible function arguments" not in str(e), (name, str(e))
                    assert "bad_cast" not in str(e), (name, str(e))
            checked += 1
    assert checked > 40


def test_wrapped_functions_keep_their_names_and_docs():
    assert kiln.load.__name__ == "load" and "safetensors" in kiln.load.__doc__
    assert kiln.Tensor.size.__name__ == "size"
    x = kiln.zeros(2, 3)
    assert x.size(1) == 3 and x.size() == (2, 3) and kiln.Tensor.size(x, 0) == 2
    bound = x.dim
    assert bound() == 2


def test_only_a_calls_own_arguments_are_explained_as_argument_errors():
    """errors.cc explains nanobind's refusal of a call's own arguments; an error from inside the
    call stands as raised (a hook that backward() runs refusing another call's arguments), or says
    it happened inside the call (a value the binding converts itself), and neither is reported as
    a fault of the arguments the call was given."""
    w = kiln.randn(3, requires_grad=True)
    w.register_hook(lambda g: kiln._C._checked(1))  # a private binding: nanobind's own refusal
    with pytest.raises(TypeError) as e:
        (w * 2).sum().backward()
    assert str(e.value).startswith("_checked(): incompatible function arguments"), str(e.value)
    opt = kiln.optim.SGD([knn.Parameter(kiln.zeros(2))], lr=0.1)
    with pytest.raises(TypeError) as e:
        opt._impl.load_state_dict({1: kiln.zeros(2)})  # a key the binding casts to str itself
    assert str(e.value) == ("_Optimizer.load_state_dict(): a value converted inside the call has the wrong type "
                            "or is out of range"), str(e.value)
