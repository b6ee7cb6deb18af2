// The text of the error an index outside [0, size) gives, for the op the user called: one copy
// for the eager checks (loss.cc, nn.cc) and the compiled kernels' range checks (inductor's
// index_error.h raises it after the kernel), so a compiled function fails as eager does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::decomp {

struct IndexErrorText {
  std::string message, hint;
};
//   nll_loss, cross_entropy:    the class-target check (the index is not named, as eager)
//   embedding, embedding_bag:   the table-size check
//   any other (gather, index_select, ...): the eager indexing kernels' text (eager/cpu/indexing.cc)
IndexErrorText index_error_text(std::string_view op, int64_t index, int64_t size);

}  // namespace kiln::decomp
