// cuBLASLt, NVIDIA's matrix-multiply library, loaded with dlopen (library.h) as NVRTC and the
// driver are: nothing links against it and no CUDA header is needed to build kiln. It computes
// D = op(A) op(B) in cuBLAS's column-major order, strided-batched, for 16-bit floats (f32
// accumulators), float32 and float64. The eager matmul of CUDA tensors runs on it
// (src/eager/cuda/matmul.cc). docs/cuda.md.
//
//   blaslt::Gemm g{.dtype = kFloat32, .m = m, .n = n, .k = k, .a = {a, m}, .b = {b, k}, .d = {d, m},
//                  .device = 0, .stream = current_stream(0)};
//   blaslt::matmul(g);  // queued on the stream
//
// Where libcublasLt is absent, available() is false and matmul() raises a kiln::Error naming every
// library path it tried.
#pragma once
#include <kiln/dtype.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/cuda/driver.h"

namespace kiln::runtime::cuda::blaslt {

// Whether libcublasLt loaded with every function kiln uses (once per process: a dlopen, no GPU
// call; $KILN_CUBLASLT_LIBRARY names a path to try first).
bool available();
// Why not: the candidates tried and the loader's message for each, or the missing symbols.
const std::string& unavailable_reason();
// The library that loaded (a soname or a path); empty when none did.
const std::string& library_path();
// cublasLtGetVersion(): major * 10000 + minor * 100 + patch (130100 for 13.1.0); 0 when absent.
// Needs no GPU.
size_t version();

// One input of the product, as cuBLAS reads it: column-major with leading dimension `ld` (the
// elements from one column to the next), transposed by the product when `transpose`. Stored, A is
// m x k (k x m when transposed), B k x n (n x k when transposed).
struct Input {
  const void* data = nullptr;
  int64_t ld = 1;
  bool transpose = false;
  int64_t batch_stride = 0;  // elements from one batch's matrix to the next; 0: one matrix for all
};
// The m x n result, column-major.
struct Output {
  void* data = nullptr;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

// D[i] = op(A[i]) op(B[i]) for i < batch (alpha 1, beta 0). A, B and D share `dtype`: Float16 and
// BFloat16 accumulate in float32 (CUBLAS_COMPUTE_32F), Float32 in full float32 (no TF32), Float64
// in float64.
struct Gemm {
  DType dtype = DType::Float32;
  int64_t m = 0, n = 0, k = 0;  // each at least 1 and at most INT32_MAX
  Input a, b;
  Output d;
  int64_t batch = 1;
  int device = 0;
  Stream stream = nullptr;
};

// Queues the product on g.stream (the device is made current first). Raises a kiln::Error for an
// unsupported dtype, a bad layout, an absent library, or a cuBLASLt failure (with its status).
void matmul(const Gemm& g);

}  // namespace kiln::runtime::cuda::blaslt
