#include "eager/matmul_operand.h"

#include <algorithm>
#include <climits>

namespace kiln::eager {

MatmulOperand matmul_operand(const Tensor& t, bool left, const Shape& batch) {
  MatmulOperand m;
  m.base = t.numel() == 0 ? nullptr : static_cast<const char*>(t.data_ptr());
  if (t.dim() == 1) {  // a vector: a row on the left, a column on the right
    m.rows = left ? 1 : t.size(0);
    m.cols = left ? t.size(0) : 1;
    (left ? m.col_stride : m.row_stride) = t.stride(0);
  } else {
    m.rows = t.size(-2);
    m.cols = t.size(-1);
    m.row_stride = t.stride(-2);
    m.col_stride = t.stride(-1);
  }
  m.batch_strides.assign(batch.size(), 0);
  const int64_t own = std::max<int64_t>(t.dim() - 2, 0);
  for (int64_t d = 0; d < own; ++d)
    if (t.size(d) != 1) m.batch_strides[batch.size() - size_t(own) + size_t(d)] = t.stride(d);
  return m;
}

bool read_in_place(MatmulOperand& m) {
  const int64_t r = m.rows, c = m.cols;
  if ((c == 1 || m.col_stride == 1) && (r == 1 || m.row_stride >= std::max<int64_t>(c, 1))) {
    m.col_major = false;
    m.ld = r == 1 ? std::max<int64_t>(c, 1) : m.row_stride;
    return m.ld <= INT_MAX;
  }
  if ((r == 1 || m.row_stride == 1) && (c == 1 || m.col_stride >= std::max<int64_t>(r, 1))) {
    m.col_major = true;
    m.ld = c == 1 ? std::max<int64_t>(r, 1) : m.col_stride;
    return m.ld <= INT_MAX;
  }
  return false;
}

}  // namespace kiln::eager
