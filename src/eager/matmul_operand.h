// A matmul operand seen as a batch of rows x cols matrices, for a BLAS that reads matrices in
// place (OpenBLAS on the CPU, cuBLASLt on CUDA): the same description serves both kernels.
#pragma once
#include <kiln/tensor.h>

namespace kiln::eager {

struct MatmulOperand {
  const char* base = nullptr;  // null for an empty tensor
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;  // element strides
  Shape batch_strides;  // lined up with the output's batch dims; 0 where the operand broadcasts
  // How the BLAS reads the matrix (set by read_in_place): row-major with ld the row stride, or
  // (col_major) column-major with ld the column stride.
  bool col_major = false;
  int64_t ld = 1;
};

// t as the left (a 1-d t: one row) or right (a 1-d t: one column) operand of a product whose
// output has batch dims `batch`.
MatmulOperand matmul_operand(const Tensor& t, bool left, const Shape& batch);
// Whether a BLAS can read the matrices where they are (one stride 1, the other at least the
// extent along the first, within int range; a size-1 dim's stride is free); sets col_major, ld.
bool read_in_place(MatmulOperand& m);

}  // namespace kiln::eager
