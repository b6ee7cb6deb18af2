// The data of constant nodes: a small CPU tensor <-> its elements as numbers (row-major).
#pragma once
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

std::vector<Scalar> literal_elements(const Tensor& t);
Tensor literal_tensor(const Shape& sizes, DType dtype, const std::vector<Scalar>& elements);

}  // namespace kiln::graph
