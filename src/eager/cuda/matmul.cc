// CUDA kernel of matmul: cuBLASLt (runtime/cuda/cublas_lt.h) on the operands' own strides, with
// the CPU prim's semantics (src/eager/cpu/matmul.cc): 1-d operands, broadcast batch dims, a
// transposed matrix read in place as a transpose op (a layout cuBLAS cannot read is copied
// contiguous first). The batch is one strided-batched call where each operand steps through it
// with one stride (0 where it broadcasts), else a loop of such calls over the outer batch dims.
// float16 and bfloat16 accumulate in float32, float32 in full float32, float64 in float64;
// integer matmul has no CUDA kernel. Queued on the device's current stream.
#include <algorithm>
#include <climits>
#include <vector>

#include "core/tensor_impl.h"
#include "eager/matmul_operand.h"
#include "ops/dispatch.h"
#include "runtime/cuda/cublas_lt.h"
#include "runtime/cuda/driver.h"

namespace kiln::eager::cuda {
namespace {

namespace rc = runtime::cuda;
namespace lt = runtime::cuda::blaslt;

using Operand = MatmulOperand;

// The operand of t, copied contiguous first when cuBLAS cannot read its matrices in place. `t`
// keeps the copy alive until the product is queued (the allocator orders its reuse on the stream).
Operand prepared(Tensor& t, bool left, const Shape& batch) {
  Operand o = matmul_operand(t, left, batch);
  if (read_in_place(o)) return o;
  t = t.contiguous();
  o = matmul_operand(t, left, batch);
  KILN_CHECK(read_in_place(o), "matmul: a matrix too large for cuBLAS (", o.rows, " x ", o.cols, ")");
  return o;
}

// One batch dim of the product: its size and each tensor's element stride along it.
struct BatchDim {
  int64_t size, x, y, out;
};

// The output's batch dims with size-1 dims dropped and each dim merged into the next inner one
// where x, y and the output all step over both as over one: most batches become one dim.
// Outermost first.
std::vector<BatchDim> batch_dims(const Shape& batch, const Operand& x, const Operand& y, int64_t matrix_numel) {
  std::vector<BatchDim> inner_first;
  int64_t out_stride = matrix_numel;  // the output is contiguous
  for (size_t d = batch.size(); d-- > 0;) {
    const BatchDim b{batch[d], x.batch_strides[d], y.batch_strides[d], out_stride};
    out_stride *= batch[d];
    if (b.size == 1) continue;
    if (!inner_first.empty()) {
      BatchDim& in = inner_first.back();
      if (b.x == in.x * in.size && b.y == in.y * in.size && b.out == in.out * in.size) {
        in.size *= b.size;
        continue;
      }
    }
    inner_first.push_back(b);
  }
  return std::vector<BatchDim>(inner_first.rbegin(), inner_first.rend());
}

// out (m x n, row-major, contiguous) = x (m x k) y (k x n), batched over `dims`. cuBLAS is
// column-major: a row-major matrix is its transpose there, so it computes out^T = y^T x^T, with
// y as its A and x as its B.
void multiply(const Operand& x, const Operand& y, char* out, int64_t m, int64_t n, int64_t k,
              std::vector<BatchDim> dims, DType dtype, int device, rc::Stream stream) {
  const int64_t itemsize = int64_t(kiln::itemsize(dtype));
  int64_t x_ld = x.ld;
  // A shared y (no batch of its own) and x's batches stacking onto its rows with one row stride
  // (a linear layer's [batch, tokens, features] input): one product of batch * m rows.
  if (dims.size() == 1 && dims[0].y == 0 && !x.col_major) {
    const BatchDim& b = dims[0];
    const bool stacks = x.rows == 1 ? b.x >= x.cols : b.x == x.rows * x.ld;
    if (stacks && b.size * m <= INT32_MAX) {
      if (x.rows == 1) x_ld = b.x;
      m *= b.size;
      dims.clear();
    }
  }
  // The innermost batch dim is cuBLASLt's strided batch; a loop runs over the outer ones.
  const BatchDim inner = dims.empty() ? BatchDim{1, 0, 0, 0} : dims.back();
  if (!dims.empty()) dims.pop_back();
  int64_t outer = 1;
  for (const BatchDim& d : dims) outer *= d.size;
  lt::Gemm g;
  g.dtype = dtype;
  g.m = n;
  g.n = m;
  g.k = k;
  g.batch = inner.size;
  g.device = device;
  g.stream = stream;
  for (int64_t i = 0; i < outer; ++i) {
    int64_t ox = 0, oy = 0, oo = 0;
    for (size_t d = dims.size(), rem = size_t(i); d-- > 0;) {
      const int64_t at = int64_t(rem % size_t(dims[d].size));
      rem /= size_t(dims[d].size);
      ox += at * dims[d].x;
      oy += at * dims[d].y;
      oo += at * dims[d].out;
    }
    g.a = {y.base + oy * itemsize, y.ld, y.col_major, inner.y};
    g.b = {x.base + ox * itemsize, x_ld, x.col_major, inner.x};
    g.d = {out + oo * itemsize, n, inner.out};
    lt::matmul(g);
  }
}

std::vector<Tensor> matmul_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  Tensor x = a.tensor(0), y = a.tensor(1);
  const DType dtype = x.dtype();  // (the meta checked that y's is the same)
  KILN_CHECK_HINT(is_floating(dtype),
                  "convert the operands to a float dtype first (x.to(kFloat32)), or multiply them on the CPU (x.cpu())",
                  "integer matmul has no CUDA kernel (", name(dtype),
                  " operands): cuBLASLt multiplies float16, bfloat16, float32 and float64 matrices");
  const int device = x.device().index;
  if (device != rc::current_device()) rc::set_device(device);
  Tensor out = make_tensor(specs.at(0));
  if (out.numel() == 0) return {out};  // m or n (or a batch dim) is 0
  const rc::Stream stream = rc::current_stream(device);
  // The output's batch shape: its dims minus the matrix dims that survive.
  const int64_t matrix_dims = (x.dim() >= 2) + (y.dim() >= 2);
  const Shape batch(out.sizes().begin(), out.sizes().end() - matrix_dims);
  const int64_t k = x.size(-1);
  if (k == 0) {  // a sum of nothing; all-zero bytes are 0.0 in every float dtype
    rc::memset_async(out.data_ptr(), 0, size_t(out.numel()) * out.element_size(), stream);
    return {out};
  }
  const Operand ox = prepared(x, true, batch), oy = prepared(y, false, batch);
  const int64_t m = ox.rows, n = oy.cols;
  multiply(ox, oy, static_cast<char*>(out.data_ptr()), m, n, k, batch_dims(batch, ox, oy, m * n), dtype, device,
           stream);
  return {out};
}

[[maybe_unused]] const bool kRegistered = ops::register_kernel(ops::OpId::matmul, DeviceType::CUDA, matmul_kernel);

}  // namespace
}  // namespace kiln::eager::cuda
