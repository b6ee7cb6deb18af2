// CPU kernels of where, convert_element_type and copy_, and the registration of every pointwise
// prim's kernel (the op groups' tables: pointwise_kernels.h), which reads the op family from ops.def.
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {

bool any_zero(const Tensor& t) {
  Tensor z = eq(t, ops::scalar_to_tensor(Scalar(int64_t(0))));
  return any(z).item<bool>();
}

namespace {

std::vector<Tensor> where_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  const Tensor& c = a.tensor(0);
  Tensor x = a.tensor(1).to(out.dtype()), y = a.tensor(2).to(out.dtype());
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    StridedLoop loop({&out, &c, &x, &y}, out.sizes());
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = scalar::where(*reinterpret_cast<const bool*>(p[1] + i * s[1]),
                                                               *reinterpret_cast<const T*>(p[2] + i * s[2]),
                                                               *reinterpret_cast<const T*>(p[3] + i * s[3]));
    });
  });
  return {out};
}

std::vector<Tensor> convert_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  copy_into(out, a.tensor(0));
  return {out};
}

std::vector<Tensor> copy_kernel(const Args& a, const std::vector<TensorSpec>&) {
  const Tensor &self = a.tensor(0), &src = a.tensor(1);
  // Overlapping source and destination (e.g. x.copy_(x.flip(0)) views): go through a temporary.
  const bool overlap = self.shares_storage(src) && !(self.impl() == src.impl());
  copy_into(self, overlap ? convert_element_type(src, src.dtype()) : src);
  return {self};
}

// The kernel of each pointwise op, by its scalar function; null for an op without one.
KernelFn pointwise_kernel(OpId op) {
  switch (op) {
    case OpId::where: return where_kernel;
    case OpId::convert_element_type: return convert_kernel;
    default: break;
  }
  for (KernelFn (*group)(OpId) : {unary_kernel_of, unary_math_kernel_of, arith_kernel_of, compare_kernel_of})
    if (KernelFn k = group(op)) return k;
  return nullptr;
}

// Every op of family POINTWISE in ops.def that has a scalar function gets its kernel (each
// pointwise prim must: tests/unit/scalar/scalar_semantics_test.cc checks).
[[maybe_unused]] const bool kPointwiseKernelsRegistered = [] {
  for (int i = 0; i < ops::kNumOps; ++i) {
    const ops::OpInfo& info = ops::op_info(OpId(i));
    if (info.family != ops::OpFamily::POINTWISE) continue;
    if (KernelFn k = pointwise_kernel(info.id)) ops::register_kernel(info.id, k);
  }
  return true;
}();

}  // namespace

KILN_REGISTER(kernel, copy_, copy_kernel);

}  // namespace kiln::eager::cpu
