// Every differentiable op in ops.def, gradient-checked in float64 on random inputs: contiguous,
// broadcast and non-contiguous samples (the OpInfo idea). An op marked DIFF without samples here
// fails the test, so a new differentiable op cannot land without a gradient check.
#include <gtest/gtest.h>

#include <map>

#include "ops/custom.h"
#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using test::grad_input;

namespace {

using Fn = std::function<TensorList(const TensorList&)>;
struct Sample {
  std::string what;
  TensorList inputs;
  Fn fn;
};
using Samples = std::vector<Sample>;

Tensor G(const Shape& s, double lo = -2, double hi = 2) { return grad_input(s, lo, hi); }
Tensor I(const std::vector<int64_t>& v) { return tensor(v); }
Tensor I(const std::vector<int64_t>& v, const Shape& s) { return tensor(v, s); }
Tensor B(const std::vector<bool>& v, const Shape& s) { return tensor(v, s); }
Fn one(std::function<Tensor(const TensorList&)> f) {
  return [f](const TensorList& in) { return TensorList{f(in)}; };
}

// Unary: a matrix, a transposed (non-contiguous) view, a 0-d tensor.
Samples unary(std::function<Tensor(const Tensor&)> f, double lo = -2, double hi = 2) {
  return {{"contiguous", {G({3, 4}, lo, hi)}, one([f](const TensorList& in) { return f(in[0]); })},
          {"transposed", {G({4, 3}, lo, hi)}, one([f](const TensorList& in) { return f(in[0].t()); })},
          {"scalar", {G({}, lo, hi)}, one([f](const TensorList& in) { return f(in[0]); })}};
}

// Binary: same shape, broadcast both ways, and a non-contiguous operand.
Samples binary(std::function<Tensor(const Tensor&, const Tensor&)> f, double lo = -2, double hi = 2,
               double lo2 = -2, double hi2 = 2) {
  auto call = [f](const TensorList& in) { return f(in[0], in[1]); };
  return {{"same", {G({3, 4}, lo, hi), G({3, 4}, lo2, hi2)}, one(call)},
          {"broadcast row", {G({3, 4}, lo, hi), G({4}, lo2, hi2)}, one(call)},
          {"outer broadcast", {G({3, 1}, lo, hi), G({1, 4}, lo2, hi2)}, one(call)},
          {"transposed", {G({4, 3}, lo, hi), G({3, 4}, lo2, hi2)},
           one([f](const TensorList& in) { return f(in[0].t(), in[1]); })}};
}

// Losses: input and target of one shape, contiguous and transposed.
Samples loss(std::function<Tensor(const Tensor&, const Tensor&)> f, double lo = -2, double hi = 2, double lo2 = -2,
             double hi2 = 2) {
  return {{"same", {G({3, 4}, lo, hi), G({3, 4}, lo2, hi2)}, one([f](const TensorList& in) { return f(in[0], in[1]); })},
          {"transposed", {G({4, 3}, lo, hi), G({3, 4}, lo2, hi2)},
           one([f](const TensorList& in) { return f(in[0].t(), in[1]); })}};
}

// Ops over a 3-d input (shape ops, reductions): contiguous and permuted.
Samples over3d(std::function<Tensor(const Tensor&)> f, double lo = -2, double hi = 2) {
  return {{"contiguous", {G({2, 3, 4}, lo, hi)}, one([f](const TensorList& in) { return f(in[0]); })},
          {"permuted", {G({4, 2, 3}, lo, hi)},
           one([f](const TensorList& in) { return f(in[0].permute({1, 2, 0})); })}};
}

Samples multi(std::function<TensorList(const Tensor&)> f) {
  return {{"contiguous", {G({2, 3, 4})}, [f](const TensorList& in) { return f(in[0]); }},
          {"permuted", {G({4, 2, 3})}, [f](const TensorList& in) { return f(in[0].permute({1, 2, 0})); }}};
}

template <class Tuple>
TensorList both(const Tuple& t) {
  return {std::get<0>(t), std::get<1>(t)};
}

std::map<std::string, Samples> all_samples() {
  std::map<std::string, Samples> m;
  // -- unary elementwise (domains keep away from poles and branch cuts)
  m["neg"] = unary([](auto& x) { return neg(x); });
  m["abs"] = unary([](auto& x) { return abs(x); });
  m["sign"] = unary([](auto& x) { return sign(x); });
  m["exp"] = unary([](auto& x) { return exp(x); });
  m["exp2"] = unary([](auto& x) { return exp2(x); });
  m["expm1"] = unary([](auto& x) { return expm1(x); });
  m["log"] = unary([](auto& x) { return log(x); }, 0.2, 3);
  m["log2"] = unary([](auto& x) { return log2(x); }, 0.2, 3);
  m["log1p"] = unary([](auto& x) { return log1p(x); }, -0.5, 3);
  m["sqrt"] = unary([](auto& x) { return sqrt(x); }, 0.2, 3);
  m["rsqrt"] = unary([](auto& x) { return rsqrt(x); }, 0.2, 3);
  m["reciprocal"] = unary([](auto& x) { return reciprocal(x); }, 0.3, 3);
  m["sin"] = unary([](auto& x) { return sin(x); });
  m["cos"] = unary([](auto& x) { return cos(x); });
  m["tan"] = unary([](auto& x) { return tan(x); }, -1.2, 1.2);
  m["tanh"] = unary([](auto& x) { return tanh(x); });
  m["asin"] = unary([](auto& x) { return asin(x); }, -0.9, 0.9);
  m["acos"] = unary([](auto& x) { return acos(x); }, -0.9, 0.9);
  m["atan"] = unary([](auto& x) { return atan(x); });
  m["sinh"] = unary([](auto& x) { return sinh(x); });
  m["cosh"] = unary([](auto& x) { return cosh(x); });
  m["asinh"] = unary([](auto& x) { return asinh(x); });
  m["acosh"] = unary([](auto& x) { return acosh(x); }, 1.2, 3);
  m["atanh"] = unary([](auto& x) { return atanh(x); }, -0.9, 0.9);
  m["erf"] = unary([](auto& x) { return erf(x); });
  m["erfc"] = unary([](auto& x) { return erfc(x); });
  m["erfinv"] = unary([](auto& x) { return erfinv(x); }, -0.9, 0.9);
  m["sigmoid"] = unary([](auto& x) { return sigmoid(x); });
  m["floor"] = unary([](auto& x) { return floor(x); });
  m["ceil"] = unary([](auto& x) { return ceil(x); });
  m["round"] = unary([](auto& x) { return round(x); });
  m["trunc"] = unary([](auto& x) { return trunc(x); });
  m["lgamma"] = unary([](auto& x) { return lgamma(x); }, 0.3, 4);
  // -- binary elementwise
  m["add"] = binary([](auto& x, auto& y) { return add(x, y); });
  m["sub"] = binary([](auto& x, auto& y) { return sub(x, y); });
  m["mul"] = binary([](auto& x, auto& y) { return mul(x, y); });
  m["div"] = binary([](auto& x, auto& y) { return div(x, y); }, -2, 2, 0.5, 2);
  m["remainder"] = binary([](auto& x, auto& y) { return remainder(x, y); }, -2, 2, 0.7, 1.3);
  m["fmod"] = binary([](auto& x, auto& y) { return fmod(x, y); }, -2, 2, 0.7, 1.3);
  m["pow"] = binary([](auto& x, auto& y) { return pow(x, y); }, 0.5, 2, -1.5, 1.5);
  m["maximum"] = binary([](auto& x, auto& y) { return maximum(x, y); });
  m["minimum"] = binary([](auto& x, auto& y) { return minimum(x, y); });
  m["atan2"] = binary([](auto& x, auto& y) { return atan2(x, y); }, 0.3, 2, 0.3, 2);
  m["hypot"] = binary([](auto& x, auto& y) { return hypot(x, y); }, 0.3, 2, 0.3, 2);
  m["copysign"] = binary([](auto& x, auto& y) { return copysign(x, y); });
  m["where"] = {{"broadcast", {G({3, 4}), G({4})},
                 one([](const TensorList& in) { return where(in[0] > 0.0, in[0], in[1]); })}};
  m["convert_element_type"] = unary([](auto& x) { return convert_element_type(x, kFloat64) * 2.0; });
  // -- views and layout
  m["view"] = over3d([](auto& x) { return x.contiguous().view({6, 4}); });
  m["broadcast_in_dim"] = {{"", {G({3, 1})}, one([](const TensorList& in) { return broadcast_in_dim(in[0], {2, 3, 4}, {1, 2}); })}};
  m["permute"] = over3d([](auto& x) { return x.permute({2, 0, 1}); });
  m["slice"] = over3d([](auto& x) { return x.slice(2, 1, 4, 2); });
  m["squeeze"] = {{"", {G({3, 1, 4})}, one([](const TensorList& in) { return in[0].squeeze(IntList{1}); })}};
  m["unsqueeze"] = over3d([](auto& x) { return x.unsqueeze(1); });
  m["expand"] = {{"", {G({3, 1})}, one([](const TensorList& in) { return in[0].expand({2, 3, 4}); })}};
  m["as_strided"] = {{"overlapping", {G({6})}, one([](const TensorList& in) { return in[0].as_strided({3, 3}, {1, 1}); })}};
  m["diagonal"] = over3d([](auto& x) { return x.diagonal(1, 1, 2); });
  m["cat"] = {{"", {G({2, 3}), G({2, 1})}, one([](const TensorList& in) { return cat({in[0], in[1].t().t()}, 1); })}};
  m["constant_pad"] = over3d([](auto& x) { return constant_pad(x, {1, -1, 0, 2}, 0.5); });
  m["flip"] = over3d([](auto& x) { return x.flip({0, 2}); });
  // -- reductions and scans
  m["sum"] = over3d([](auto& x) { return x.sum({0, 2}, true); });
  m["prod"] = over3d([](auto& x) { return x.prod(IntList{1}); }, 0.5, 1.5);
  m["amax"] = over3d([](auto& x) { return x.amax(IntList{2}); });
  m["amin"] = over3d([](auto& x) { return x.amin({0, 1}); });
  m["cumsum"] = over3d([](auto& x) { return x.cumsum(1); });
  m["cumprod"] = over3d([](auto& x) { return x.cumprod(2); });
  m["cummax"] = multi([](auto& x) { return TensorList{std::get<0>(x.cummax(2))}; });
  m["cummin"] = multi([](auto& x) { return TensorList{std::get<0>(x.cummin(1))}; });
  m["mean"] = over3d([](auto& x) { return x.mean({1, 2}); });
  m["max"] = over3d([](auto& x) { return x.max(); });
  m["max_dim"] = multi([](auto& x) { return TensorList{std::get<0>(x.max(1, true))}; });
  m["min"] = over3d([](auto& x) { return x.min(); });
  m["min_dim"] = multi([](auto& x) { return TensorList{std::get<0>(x.min(-1))}; });
  m["var"] = over3d([](auto& x) { return x.var(IntList{1}); });
  m["std"] = over3d([](auto& x) { return x.std(IntList{2}, 0.0, true); });
  m["var_mean"] = multi([](auto& x) { return both(var_mean(x, IntList{0})); });
  m["norm"] = over3d([](auto& x) { return x.norm(2, IntList{2}); });
  m["logsumexp"] = over3d([](auto& x) { return x.logsumexp({1}); });
  m["sort"] = multi([](auto& x) { return TensorList{std::get<0>(x.sort(1))}; });
  m["topk"] = multi([](auto& x) { return TensorList{std::get<0>(x.topk(2, -1))}; });
  m["kthvalue"] = multi([](auto& x) { return TensorList{std::get<0>(x.kthvalue(2, 2))}; });
  m["median"] = over3d([](auto& x) { return x.median(); });
  m["median_dim"] = multi([](auto& x) { return TensorList{std::get<0>(x.median(1))}; });
  // -- indexing
  m["gather"] = {{"", {G({3, 4})}, one([](const TensorList& in) { return in[0].gather(1, I({0, 3, 3, 1, 2, 0}, {3, 2})); })}};
  m["scatter"] = {{"", {G({3, 4}), G({3, 2})},
                   one([](const TensorList& in) { return in[0].scatter(1, I({0, 3, 1, 2, 2, 0}, {3, 2}), in[1]); })}};
  m["scatter_add"] = {{"duplicates", {G({3, 4}), G({3, 2})},
                       one([](const TensorList& in) { return in[0].scatter_add(1, I({0, 0, 1, 1, 3, 3}, {3, 2}), in[1]); })}};
  m["scatter_reduce"] = {{"sum", {G({3, 4}), G({3, 2})},
                          one([](const TensorList& in) { return in[0].scatter_reduce(1, I({0, 0, 1, 2, 3, 3}, {3, 2}), in[1], "sum"); })},
                         {"amax", {G({3, 4}), G({3, 2})},
                          one([](const TensorList& in) { return in[0].scatter_reduce(1, I({0, 1, 1, 2, 3, 0}, {3, 2}), in[1], "amax"); })}};
  m["index_select"] = {{"", {G({3, 4})}, one([](const TensorList& in) { return in[0].index_select(1, I({3, 0, 3})); })}};
  m["index_put"] = {{"accumulate", {G({5}), G({3})},
                     one([](const TensorList& in) { return in[0].index_put({I({1, 1, 4})}, in[1], true); })}};
  m["index"] = {{"int", {G({4, 3})}, one([](const TensorList& in) { return in[0].index({I({3, 0, 3})}); })},
                {"mask", {G({2, 3})}, one([](const TensorList& in) { return in[0].index({B({true, false, true, false, true, true}, {2, 3})}); })}};
  m["index_add"] = {{"", {G({3, 4}), G({3, 2})}, one([](const TensorList& in) { return in[0].index_add(1, I({0, 0}), in[1]); })}};
  m["masked_select"] = {{"", {G({2, 3})}, one([](const TensorList& in) { return in[0].masked_select(B({true, false, true}, {3})); })}};
  m["masked_fill"] = {{"", {G({2, 3})}, one([](const TensorList& in) { return in[0].masked_fill(B({true, false, true}, {3}), 0.5); })}};
  m["take_along_dim"] = {{"", {G({3, 4})}, one([](const TensorList& in) { return in[0].take_along_dim(I({0, 3, 1}, {3, 1}), 1); })}};
  // -- shape composites
  m["reshape"] = over3d([](auto& x) { return x.reshape({4, -1}); });
  m["flatten"] = over3d([](auto& x) { return x.flatten(1); });
  m["unflatten"] = over3d([](auto& x) { return x.unflatten(2, {2, 2}); });
  m["transpose"] = over3d([](auto& x) { return x.transpose(0, 2); });
  m["t"] = unary([](auto& x) { return x.dim() == 2 ? x.t() : x * 1.0; });
  m["mT"] = over3d([](auto& x) { return x.mT(); });
  m["expand_as"] = {{"", {G({3, 1})}, one([](const TensorList& in) { return in[0].expand_as(zeros({2, 3, 4}, kFloat64)); })}};
  m["repeat"] = over3d([](auto& x) { return x.repeat({2, 1, 1, 2}); });
  m["narrow"] = over3d([](auto& x) { return x.narrow(2, 1, 2); });
  m["select"] = over3d([](auto& x) { return x.select(1, -1); });
  m["split"] = multi([](auto& x) { return x.split(2, 2); });
  m["split_with_sizes"] = multi([](auto& x) { return x.split_with_sizes({1, 3}, 2); });
  m["chunk"] = multi([](auto& x) { return x.chunk(2, 1); });
  m["unbind"] = multi([](auto& x) { return x.unbind(0); });
  m["stack"] = {{"", {G({2, 3}), G({3, 2})}, one([](const TensorList& in) { return stack({in[0], in[1].t()}, 1); })}};
  m["contiguous"] = over3d([](auto& x) { return x.contiguous(); });
  m["clone"] = over3d([](auto& x) { return x.clone(); });
  m["roll"] = over3d([](auto& x) { return x.roll({1, -1}, {0, 2}); });
  m["movedim"] = over3d([](auto& x) { return x.movedim({0}, {2}); });
  m["pad"] = {{"reflect", {G({1, 2, 5})}, one([](const TensorList& in) { return pad(in[0], {2, 1}, "reflect"); })},
              {"replicate", {G({1, 2, 5})}, one([](const TensorList& in) { return pad(in[0], {1, 2}, "replicate"); })},
              {"constant", {G({2, 3})}, one([](const TensorList& in) { return pad(in[0], {1, 1, 0, 1}, "constant", 0.5); })}};
  m["copy_"] = {{"broadcast", {G({4})}, one([](const TensorList& in) {
                   Tensor buf = zeros({3, 4}, kFloat64);
                   buf.copy_from(in[0] * 2.0);
                   return buf;
                 })}};
  m["tril"] = over3d([](auto& x) { return x.tril(); });
  m["triu"] = over3d([](auto& x) { return x.triu(1); });
  // -- pointwise composites
  m["relu"] = unary([](auto& x) { return relu(x); });
  m["relu6"] = unary([](auto& x) { return relu6(x * 4.0); });
  m["leaky_relu"] = unary([](auto& x) { return leaky_relu(x, 0.2); });
  m["elu"] = unary([](auto& x) { return elu(x, 1.5); });
  m["selu"] = unary([](auto& x) { return selu(x); });
  m["gelu"] = unary([](auto& x) { return gelu(x) + gelu(x, "tanh"); });
  m["silu"] = unary([](auto& x) { return silu(x); });
  m["mish"] = unary([](auto& x) { return mish(x); });
  m["softplus"] = unary([](auto& x) { return softplus(x, 2, 3); });
  m["hardtanh"] = unary([](auto& x) { return hardtanh(x, -1, 1.5); });
  m["hardsigmoid"] = unary([](auto& x) { return hardsigmoid(x * 3.0); });
  m["hardswish"] = unary([](auto& x) { return hardswish(x * 3.0); });
  m["clamp"] = unary([](auto& x) { return clamp(x, -1.0, 1.0); });
  m["clamp_min"] = unary([](auto& x) { return clamp_min(x, -0.5); });
  m["clamp_max"] = unary([](auto& x) { return clamp_max(x, 0.5); });
  m["lerp"] = {{"", {G({3, 4}), G({4}), G({3, 1})}, one([](const TensorList& in) { return lerp(in[0], in[1], in[2]); })}};
  m["addcmul"] = {{"", {G({3, 4}), G({4}), G({3, 1})}, one([](const TensorList& in) { return addcmul(in[0], in[1], in[2], 0.5); })}};
  m["addcdiv"] = {{"", {G({3, 4}), G({4}), G({3, 1}, 0.5, 2)}, one([](const TensorList& in) { return addcdiv(in[0], in[1], in[2], 0.5); })}};
  m["square"] = unary([](auto& x) { return square(x); });
  m["logit"] = unary([](auto& x) { return logit(x); }, 0.1, 0.9);
  m["xlogy"] = binary([](auto& x, auto& y) { return xlogy(x, y); }, -2, 2, 0.3, 2);
  m["nan_to_num"] = unary([](auto& x) { return nan_to_num(x); });
  m["dropout"] = {{"", {G({3, 4})}, one([](const TensorList& in) {
                     manual_seed(7);  // the same mask on every call
                     return dropout(in[0], 0.3, true);
                   })}};
  m["rsub"] = binary([](auto& x, auto& y) { return rsub(x, y); });
  m["true_divide"] = binary([](auto& x, auto& y) { return true_divide(x, y); }, -2, 2, 0.5, 2);
  m["float_power"] = binary([](auto& x, auto& y) { return float_power(x, y); }, 0.5, 2, -1.5, 1.5);
  // -- linear algebra
  m["matmul"] = {{"2d", {G({3, 4}), G({4, 2})}, one([](const TensorList& in) { return matmul(in[0], in[1]); })},
                 {"batched broadcast", {G({2, 3, 4}), G({4, 2})}, one([](const TensorList& in) { return matmul(in[0], in[1]); })},
                 {"vector", {G({4}), G({2, 4, 3})}, one([](const TensorList& in) { return matmul(in[0], in[1]); })},
                 {"transposed", {G({4, 3}), G({2, 4})}, one([](const TensorList& in) { return matmul(in[0].t(), in[1].t()); })}};
  m["mm"] = {{"", {G({3, 4}), G({2, 4})}, one([](const TensorList& in) { return mm(in[0], in[1].t()); })}};
  m["bmm"] = {{"", {G({2, 3, 4}), G({2, 4, 2})}, one([](const TensorList& in) { return bmm(in[0], in[1]); })}};
  m["addmm"] = {{"", {G({2}), G({3, 4}), G({4, 2})}, one([](const TensorList& in) { return addmm(in[0], in[1], in[2], 0.5, 2); })}};
  m["baddbmm"] = {{"", {G({3, 2}), G({2, 3, 4}), G({2, 4, 2})}, one([](const TensorList& in) { return baddbmm(in[0], in[1], in[2]); })}};
  m["linear"] = {{"", {G({2, 3, 4}), G({5, 4}), G({5})}, one([](const TensorList& in) { return linear(in[0], in[1], in[2]); })}};
  m["einsum"] = {{"", {G({2, 3}), G({3, 4})}, one([](const TensorList& in) { return einsum("ij,jk->ik", {in[0], in[1]}); })},
                 {"batch", {G({2, 3, 4}), G({2, 4})}, one([](const TensorList& in) { return einsum("bij,bj->bi", {in[0], in[1]}); })}};
  m["outer"] = {{"", {G({3}), G({4})}, one([](const TensorList& in) { return outer(in[0], in[1]); })}};
  m["dot"] = {{"", {G({4}), G({4})}, one([](const TensorList& in) { return dot(in[0], in[1]); })}};
  m["vdot"] = {{"", {G({4}), G({4})}, one([](const TensorList& in) { return vdot(in[0], in[1]); })}};
  m["convolution"] = {{"2d strided", {G({1, 2, 5, 5}), G({3, 2, 3, 3}), G({3})},
                       one([](const TensorList& in) { return convolution(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 1}, false, {0, 0}, 1); })},
                      {"transposed", {G({1, 2, 3, 3}), G({2, 2, 2, 2}), G({2})},
                       one([](const TensorList& in) { return convolution(in[0], in[1], in[2], {2, 2}, {0, 0}, {1, 1}, true, {1, 0}, 1); })}};
  m["conv1d"] = {{"groups", {G({2, 4, 6}), G({4, 2, 3})}, one([](const TensorList& in) { return conv1d(in[0], in[1], {}, 1, 1, 2, 2); })}};
  m["conv2d"] = {{"", {G({1, 2, 5, 4}), G({3, 2, 2, 2}), G({3})}, one([](const TensorList& in) { return conv2d(in[0], in[1], in[2], 1, 1); })}};
  m["conv3d"] = {{"", {G({1, 1, 3, 4, 3}), G({2, 1, 2, 2, 2})}, one([](const TensorList& in) { return conv3d(in[0], in[1]); })}};
  m["conv_transpose2d"] = {{"", {G({1, 2, 3, 3}), G({2, 3, 2, 2}), G({3})},
                            one([](const TensorList& in) { return conv_transpose2d(in[0], in[1], in[2], 2, 1, 1); })}};
  m["max_pool1d"] = {{"", {G({1, 2, 7})}, one([](const TensorList& in) { return max_pool1d(in[0], 3, 2, 1); })}};
  m["max_pool2d"] = {{"", {G({1, 2, 5, 5})}, one([](const TensorList& in) { return max_pool2d(in[0], 2, {}, 0, 1, true); })}};
  m["avg_pool1d"] = {{"", {G({1, 2, 7})}, one([](const TensorList& in) { return avg_pool1d(in[0], 3, 2, 1, false, false); })}};
  m["avg_pool2d"] = {{"", {G({1, 2, 5, 5})}, one([](const TensorList& in) { return avg_pool2d(in[0], 2); })}};
  m["adaptive_avg_pool2d"] = {{"", {G({1, 2, 5, 7})}, one([](const TensorList& in) { return adaptive_avg_pool2d(in[0], {2, 3}); })}};
  m["interpolate"] = {{"bilinear", {G({1, 1, 3, 4})},
                       one([](const TensorList& in) { return interpolate(in[0], SymIntList{5, 6}, std::nullopt, "bilinear", false); })},
                      {"nearest", {G({1, 2, 3})}, one([](const TensorList& in) { return interpolate(in[0], SymIntList{6}); })}};
  m["unfold"] = {{"", {G({1, 2, 4, 4})}, one([](const TensorList& in) { return unfold(in[0], 2, 1, 1, 2); })}};
  m["fold"] = {{"", {G({1, 8, 4})}, one([](const TensorList& in) { return fold(in[0], {3, 3}, 2); })}};
  m["pixel_shuffle"] = {{"", {G({1, 8, 2, 3})}, one([](const TensorList& in) { return pixel_shuffle(in[0], 2); })}};
  // -- nn functional
  m["softmax"] = over3d([](auto& x) { return softmax(x, 1); });
  m["log_softmax"] = over3d([](auto& x) { return log_softmax(x, -1); });
  m["layer_norm"] = {{"", {G({2, 3, 4}), G({4}), G({4})}, one([](const TensorList& in) { return layer_norm(in[0], {4}, in[1], in[2]); })}};
  m["rms_norm"] = {{"", {G({2, 3, 4}), G({3, 4})}, one([](const TensorList& in) { return rms_norm(in[0], {3, 4}, in[1]); })}};
  m["group_norm"] = {{"", {G({2, 4, 3}), G({4}), G({4})}, one([](const TensorList& in) { return group_norm(in[0], 2, in[1], in[2]); })}};
  m["batch_norm"] = {{"training", {G({4, 3, 2}), G({3}), G({3})},
                      one([](const TensorList& in) { return batch_norm(in[0], {}, {}, in[1], in[2], true); })}};
  m["instance_norm"] = {{"", {G({2, 3, 4}), G({3}), G({3})}, one([](const TensorList& in) { return instance_norm(in[0], in[1], in[2]); })}};
  m["embedding"] = {{"", {G({5, 3})}, one([](const TensorList& in) { return embedding(I({4, 0, 4, 2}, {2, 2}), in[0], /*padding_idx, unused here=*/1); })}};
  m["embedding_bag"] = {{"", {G({5, 3})}, one([](const TensorList& in) { return embedding_bag(I({4, 0, 4, 2, 1}), in[0], I({0, 2}), "mean"); })}};
  m["cross_entropy"] = {{"indices", {G({4, 5})}, one([](const TensorList& in) { return cross_entropy(in[0], I({1, 0, 4, -100}), {}, "mean", -100, 0.1); })},
                        {"probabilities", {G({3, 4}), G({3, 4}, 0.1, 1)}, one([](const TensorList& in) { return cross_entropy(in[0], softmax(in[1], 1)); })}};
  m["nll_loss"] = {{"", {G({4, 5}), G({5}, 0.5, 2)}, one([](const TensorList& in) { return nll_loss(in[0], I({1, 0, 4, 3}), in[1]); })}};
  m["mse_loss"] = loss([](auto& x, auto& y) { return mse_loss(x, y); });
  m["l1_loss"] = loss([](auto& x, auto& y) { return l1_loss(x, y, "sum"); });
  m["smooth_l1_loss"] = loss([](auto& x, auto& y) { return smooth_l1_loss(x, y, "mean", 0.5); });
  m["huber_loss"] = loss([](auto& x, auto& y) { return huber_loss(x, y, "mean", 0.7); });
  m["binary_cross_entropy"] = loss([](auto& x, auto& y) { return binary_cross_entropy(x, y); }, 0.1, 0.9, 0, 1);
  m["binary_cross_entropy_with_logits"] = loss([](auto& x, auto& y) { return binary_cross_entropy_with_logits(x, y); }, -2, 2, 0, 1);
  m["kl_div"] = loss([](auto& x, auto& y) { return kl_div(x, y, "batchmean"); }, -2, 0, 0.1, 1);
  m["cosine_similarity"] = {{"", {G({3, 4}), G({4})}, one([](const TensorList& in) { return cosine_similarity(in[0], in[1], 1); })}};
  m["pairwise_distance"] = {{"", {G({3, 4}), G({3, 4})}, one([](const TensorList& in) { return pairwise_distance(in[0], in[1]); })}};
  m["scaled_dot_product_attention"] = {
      {"causal", {G({1, 2, 4, 3}), G({1, 2, 4, 3}), G({1, 2, 4, 3})},
       one([](const TensorList& in) { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); })},
      {"mask gqa", {G({1, 4, 3, 2}), G({1, 2, 5, 2}), G({1, 2, 5, 2})}, one([](const TensorList& in) {
         Tensor mask = B({true, false, true, true, true, false, true, true, true, true, true, false, true, true, true}, {3, 5});
         return scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, false, 0.3, true);
       })}};
  m["normalize"] = over3d([](auto& x) { return normalize(x, 2, 1); });
  m["glu"] = over3d([](auto& x) { return glu(x, -1); });
  // custom: a registered custom op (ops/custom.h) whose derivative is its own: x * sin(y).
  m["custom"] = {{"x*sin(y)", {G({3, 4}), G({3, 4})}, one([](const TensorList& in) {
                    static const bool registered = [] {
                      auto op = std::make_shared<ops::CustomOp>();
                      op->name = "gradcheck::mul_sin";
                      op->meta = [](const TensorList& t, const std::vector<double>&) { return std::vector<TensorSpec>{t[0].spec()}; };
                      op->kernel = [](const TensorList& t, const std::vector<double>&, const std::vector<TensorSpec>&) {
                        return TensorList{t[0] * t[1].sin()};
                      };
                      op->derivative = [](const ops::GradCtx& g) {
                        return TensorList{g.grads[0] * g.inputs[1].sin(), g.grads[0] * g.inputs[0] * g.inputs[1].cos()};
                      };
                      ops::register_custom_op(op);
                      return true;
                    }();
                    (void)registered;
                    return ops::call_custom_op("gradcheck::mul_sin", {in[0], in[1]})[0];
                  })}};
  return m;
}

}  // namespace

TEST(GradcheckSweep, EveryDifferentiableOpHasSamples) {
  auto samples = all_samples();
  std::string missing;
  for (int i = 0; i < ops::kNumOps; ++i) {
    const ops::OpInfo& op = ops::op_info(ops::OpId(i));
    if (op.differentiable() && !samples.count(op.name)) missing += std::string(" ") + op.name;
  }
  EXPECT_TRUE(missing.empty()) << "differentiable ops without gradcheck samples:" << missing;
}

TEST(GradcheckSweep, AllDifferentiableOps) {
  int checked = 0;
  for (auto& [name, samples] : all_samples()) {
    for (const Sample& s : samples) {
      try {
        gradcheck(s.fn, s.inputs);
        ++checked;
      } catch (const Error& e) {
        ADD_FAILURE() << name << " (" << s.what << "): " << e.what();
      }
    }
  }
  std::printf("gradcheck sweep: %d samples checked\n", checked);
}
