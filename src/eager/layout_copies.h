// cat, constant_pad and flip as copies between strided views of their input and output. The
// same code serves every device: the caller gives its device's copy (dst <- src, broadcasting
// and converting; src may be a 0-d CPU tensor, or a view with negative strides).
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::eager {

using CopyInto = std::function<void(const Tensor& dst, const Tensor& src)>;

std::vector<Tensor> cat_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy);
std::vector<Tensor> constant_pad_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy);
std::vector<Tensor> flip_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy);

}  // namespace kiln::eager
