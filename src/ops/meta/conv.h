// The convolution prim's parameters, parsed and checked once (meta, kernel and derivative share it).
#pragma once
#include <vector>

#include "ops/dispatch.h"

namespace kiln::ops {

struct ConvParams {
  int64_t nd = 0;  // spatial dims
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

// A list argument given as 1 value (for every dim) or nd values; each >= min.
std::vector<int64_t> conv_param(const std::vector<int64_t>& v, int64_t nd, const char* what, int64_t min);
// From a convolution call's Args (input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups).
ConvParams conv_params(const Args& a);

}  // namespace kiln::ops
