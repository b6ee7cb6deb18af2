// Fused CPU backward kernels of the NN composites with fast forward kernels. A derivative
// formula (src/autograd/derivatives/) calls one when its backward runs eagerly on CPU tensors
// (autograd::fused_cpu_backward); each computes what the formula's kiln ops compute, in the
// same precision, in one pass instead of one full-size temporary per op. Graphs (capture, AOT)
// and other devices still get the formula.
#pragma once
#include <kiln/tensor.h>

#include <vector>

namespace kiln::eager::cpu {

// gelu's input gradient grad * gelu'(x), in x's dtype (grad: x's shape and dtype, floating).
Tensor gelu_backward(const Tensor& grad, const Tensor& x, bool tanh_mode);

// layer_norm's gradients {dx, dweight, dbias} (undefined where not asked for) over the trailing
// `normalized` dims of x; float32/float64, grad of x's shape and weight (optional) of `normalized`,
// all of x's dtype.
std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Shape& normalized,
                                        const Tensor& weight, double eps, bool need_x, bool need_w, bool need_b);

// Softmax along the last dim of contiguous float32/float64 scores times `scale`, key j of query
// row i (dim -2) masked when causal and j > i (top-left aligned): the attention probabilities
// that scaled_dot_product_attention's derivative recomputes, as its formula's ops compute them.
Tensor attention_probs(const Tensor& scores, double scale, bool causal);

// y (d - sum(d y)) along the last dim (sum in double): softmax's input gradient from its output y
// and output gradient d, contiguous float32/float64 of one dtype and shape.
Tensor softmax_backward(const Tensor& grad, const Tensor& y);

}  // namespace kiln::eager::cpu
