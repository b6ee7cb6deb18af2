"""Linear algebra: matmul (the prim) and mm, bmm, addmm, baddbmm, linear, einsum, outer, dot, vdot."""
import torch.nn.functional as F

from op_db import OpInfo, Sample, T, register

# Products of K terms: float32 rounding grows with K (K <= 16 here, 1e-4 covers K * eps * |terms|
# for |values| <= 3; large-magnitude samples are compared relative to their size).
TOL = {"float32": (1e-4, 1e-4)}


def _matmul(dtype):
    yield Sample((T((3, 4)), T((4, 5))), name="2-d x 2-d")
    yield Sample((T((4,)), T((4,))), name="1-d x 1-d (dot)")
    yield Sample((T((4,)), T((4, 3))), name="1-d x 2-d")
    yield Sample((T((3, 4)), T((4,))), name="2-d x 1-d")
    yield Sample((T((2, 3, 4)), T((4, 5))), name="batched x 2-d")
    yield Sample((T((4,)), T((2, 4, 3))), name="1-d x batched")
    yield Sample((T((2, 3, 4)), T((4,))), name="batched x 1-d")
    yield Sample((T((2, 1, 3, 4)), T((5, 4, 2))), name="broadcast batch dims")
    yield Sample((T((3, 4), layout="transposed"), T((4, 5), layout="strided")), name="transposed x strided")
    yield Sample((T((2, 4, 3), layout="transposed"), T((2, 3, 5), layout="transposed")), name="batched transposed")
    yield Sample((T((3, 0)), T((0, 4))), name="zero-size inner dim")
    yield Sample((T((0, 3)), T((3, 4))), name="zero-size outer dim")
    if dtype == "int64":
        return
    yield Sample((T((2, 8), low=-1e3, high=1e3), T((8, 3), low=-1e3, high=1e3)), name="large magnitudes")
    yield Sample((T((2, 8), low=1e-3, high=2e-3), T((8, 3), low=1e-3, high=2e-3)), name="small magnitudes")


register(OpInfo("matmul", _matmul, tol=TOL, dtypes=("float32", "float64", "int64"), bf16=True))


def _mm(dtype):
    yield Sample((T((3, 4)), T((4, 5))), name="2-d")
    yield Sample((T((1, 16)), T((16, 1))), name="row x column")
    yield Sample((T((3, 4), layout="transposed"), T((4, 2), layout="strided")), name="non-contiguous")
    yield Sample((T((3, 0)), T((0, 2))), name="zero-size inner")
    if dtype != "int64":
        yield Sample((T((2, 8), low=-1e3, high=1e3), T((8, 3), low=1e-3, high=2e-3)), name="large x small")


register(OpInfo("mm", _mm, tol=TOL, dtypes=("float32", "float64", "int64"), bf16=True))


def _bmm(dtype):
    yield Sample((T((2, 3, 4)), T((2, 4, 5))), name="batched")
    yield Sample((T((3, 2, 4), layout="transposed"), T((3, 4, 5), layout="strided")), name="non-contiguous")
    yield Sample((T((0, 3, 4)), T((0, 4, 2))), name="zero batch")
    yield Sample((T((2, 3, 0)), T((2, 0, 2))), name="zero inner")


register(OpInfo("bmm", _bmm, tol=TOL, dtypes=("float32", "float64", "int64"), bf16=True))


def _addmm(dtype):
    yield Sample((T((3, 5)), T((3, 4)), T((4, 5))), name="full self")
    yield Sample((T((5,)), T((3, 4)), T((4, 5))), name="broadcast row self")
    yield Sample((T(()), T((3, 4), layout="transposed"), T((4, 5))), {"beta": 0.5, "alpha": -2},
                 name="0-d self, beta/alpha, transposed")
    yield Sample((T((3, 1), layout="strided"), T((3, 4)), T((4, 2))), {"alpha": 3}, name="column self, alpha")
    yield Sample((T((3, 2)), T((3, 0)), T((0, 2))), {"beta": 2}, name="zero inner: beta * self")
    # Documented: with beta=0 self is ignored, so its nan and inf do not propagate. kiln then leaves
    # self out of the graph (its gradient is None, PyTorch's is zeros): only the others' are compared.
    yield Sample((T((2, 2), values=[[float("nan"), 1], [float("inf"), 2]], requires_grad=False), T((2, 3)),
                  T((3, 2))), {"beta": 0},
                 name="beta=0 ignores nan/inf in self")


register(OpInfo("addmm", _addmm, tol=TOL))


def _baddbmm(dtype):
    yield Sample((T((2, 3, 5)), T((2, 3, 4)), T((2, 4, 5))), name="full self")
    yield Sample((T((3, 5)), T((2, 3, 4)), T((2, 4, 5), layout="transposed")), {"beta": -1, "alpha": 0.5},
                 name="broadcast self, beta/alpha, transposed")
    yield Sample((T(()), T((2, 3, 4), layout="strided"), T((2, 4, 2))), name="0-d self, strided")
    yield Sample((T((0, 3, 2)), T((0, 3, 4)), T((0, 4, 2))), name="zero batch")
    yield Sample((T((2, 2), values=[[float("nan"), 1], [2, float("-inf")]], requires_grad=False), T((3, 2, 4)),
                  T((3, 4, 2))),
                 {"beta": 0, "alpha": 2}, name="beta=0 ignores nan/inf in self")


register(OpInfo("baddbmm", _baddbmm, tol=TOL))


def _linear(dtype):
    yield Sample((T((3, 4)), T((5, 4)), T((5,))), name="2-d with bias")
    yield Sample((T((2, 3, 4)), T((5, 4))), name="batched, no bias")
    yield Sample((T((4,)), T((5, 4)), T((5,))), name="1-d input")
    yield Sample((T((3, 4), layout="transposed"), T((5, 4), layout="strided"), T(())), name="non-contiguous, 0-d bias")
    yield Sample((T((0, 4)), T((2, 4))), {"bias": T((2,))}, name="zero batch, bias kwarg")
    yield Sample((T((3, 4)), T((5, 4)), None), name="bias None")


register(OpInfo("linear", _linear, torch_fn=F.linear, tol=TOL, bf16=True))


def _einsum(dtype):
    yield Sample(("ij,jk->ik", [T((3, 4)), T((4, 5))]), name="matrix product")
    yield Sample(("bij,bjk->bik", [T((2, 3, 4)), T((2, 4, 5), layout="transposed")]), name="batched, transposed")
    yield Sample(("ii->i", [T((4, 4))]), name="diagonal")
    yield Sample(("ii", [T((4, 4))]), name="trace (implicit output)")
    yield Sample(("ij->ji", [T((3, 4), layout="strided")]), name="transpose, strided")
    yield Sample(("ij->", [T((3, 4))]), name="sum")
    yield Sample(("i,j->ij", [T((3,)), T((4,))]), name="outer")
    yield Sample(("ij,ij->i", [T((3, 4)), T((3, 4))]), name="row dots")
    yield Sample(("...ij,...jk->...ik", [T((2, 3, 4)), T((4, 2))]), name="ellipsis broadcasting")
    yield Sample(("bhqd,bhkd->bhqk", [T((2, 2, 3, 4)), T((2, 2, 5, 4))]), name="attention scores")
    yield Sample(("ijk,jl,k->il", [T((2, 3, 4)), T((3, 5)), T((4,))]), name="three operands")
    yield Sample(("i j , j k -> i k", [T((2, 3)), T((3, 2))]), name="spaces")
    yield Sample(("ij,jk", [T((2, 3)), T((3, 0))]), name="zero-size, implicit output")
    yield Sample(("i,i->", [T((5,)), T((5,))]), name="dot")
    yield Sample(("ba", [T((3, 4))]), name="implicit output is alphabetical (a transpose)")
    yield Sample(("iij,jk->ik", [T((3, 3, 4)), T((4, 2))]), name="repeated index in one operand")
    yield Sample(("ij,ij->ij", [T((3, 1)), T((3, 4))]), name="size-1 dim broadcasts")
    yield Sample(("Ab,bC->AC", [T((2, 3)), T((3, 2))]), name="upper-case letters")
    yield Sample(("...,...->...", [T(()), T((2, 3))]), name="0-d operand with ellipsis")


register(OpInfo("einsum", _einsum, tol=TOL, bf16=True))


def _vectors(dtype):
    yield Sample((T((5,)), T((5,))), name="1-d")
    yield Sample((T((6,), layout="strided"), T((6,))), name="strided")
    yield Sample((T((0,)), T((0,))), name="zero-size")
    yield Sample((T((16,), low=-1e3, high=1e3), T((16,), low=1e-3, high=1e-2)), name="large x small")


register(OpInfo("dot", _vectors, tol=TOL))
register(OpInfo("vdot", _vectors, tol=TOL))


def _outer(dtype):
    yield Sample((T((3,)), T((4,))), name="1-d")
    yield Sample((T((3,), layout="strided"), T((0,))), name="strided, zero-size")
    yield Sample((T((2,), low=-1e4, high=1e4), T((3,), low=1e-3, high=1e-2)), name="large x small")


register(OpInfo("outer", _outer))
