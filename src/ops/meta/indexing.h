// Helpers shared by the indexing prims' metas, kernels, derivatives and the advanced-indexing
// composites (index, index_put semantics as PyTorch's x[i0, None, i2]).
#pragma once
#include <kiln/tensor.h>

#include <vector>

namespace kiln::ops {

// Checks an int64 index tensor argument of gather/scatter/index_select.
void check_index_dtype(const Tensor& index, const char* what, bool allow_int32);

// The shape of x[indices] for integer index tensors (undefined entries = full slices ':').
// Index tensors broadcast together; when the indexed dims are adjacent the broadcast dims
// replace them in place, otherwise they go first (PyTorch's rule).
SymShape advanced_index_shape(const SymShape& self, const std::vector<Tensor>& indices);

// The permutation of x[indices]'s dims (`result_rank` of them, `index_dims` from the broadcast
// index) that puts the broadcast index dims first and the rest in order: where the indexed dims
// `indexed` (ascending) are adjacent, the broadcast dims sit at the first of them, else first.
std::vector<int64_t> advanced_index_dims_first(const std::vector<int64_t>& indexed, int64_t index_dims, int64_t result_rank);

// Replaces each bool/uint8 mask in `indices` by the integer index tensors of its true
// elements (one per mask dim, from nonzero) and pads with undefined entries up to self's dims.
// Data-dependent: eager only.
std::vector<Tensor> expand_bool_indices(const Tensor& self, const std::vector<Tensor>& indices);

bool has_bool_index(const std::vector<Tensor>& indices);

}  // namespace kiln::ops
