// Out-of-range index errors' text (index_error.h).
#include "decomp/index_error.h"

namespace kiln::decomp {

IndexErrorText index_error_text(std::string_view op, int64_t index, int64_t size) {
  const std::string name(op), n = std::to_string(size);
  if (op == "nll_loss" || op == "cross_entropy")
    return {name + ": target out of bounds (number of classes " + n + ")", "class indices must lie in [0, C) or equal ignore_index"};
  if (op == "embedding" || op == "embedding_bag")
    return {name + ": index out of range in self (num_embeddings " + n + ")", "indices must lie in [0, num_embeddings)"};
  return {name + ": index " + std::to_string(index) + " is out of bounds for dimension of size " + n, "indices must be in [0, " + n + ")"};
}

}  // namespace kiln::decomp
