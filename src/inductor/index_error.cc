// The plan's side of the kernels' index range checks (index_error.h).
#include "inductor/index_error.h"

#include <kiln/error.h>

#include <algorithm>

#include "core/tensor_impl.h"
#include "decomp/index_error.h"
#include "ops/dispatch.h"

namespace kiln::inductor {

Tensor new_index_error_record() {
  Tensor r = make_tensor({kErrorSlots}, kInt64);
  std::fill_n(r.data<int64_t>(), kErrorSlots, int64_t(0));
  return r;
}

void check_index_error(const Tensor& record) {
  const int64_t* r = record.data<int64_t>();
  if (r[kErrorOp] == 0) return;
  const int64_t op = r[kErrorOp] - 1;
  KILN_CHECK(op >= 0 && op < int64_t(ops::OpId::NumOps), "internal: inductor: an index error record names op ", op);
  const std::string name = ops::op_info(ops::OpId(op)).name;
  const decomp::IndexErrorText text = decomp::index_error_text(name, r[kErrorIndex], r[kErrorSize]);
  Error::Info info;  // (as the dispatcher reports the op the user called; the inputs are the graph's)
  info.op = name;
  info.message = text.message;
  info.hint = text.hint;
  throw Error(std::move(info));
}

std::string index_error_ops(const graph::Graph& g) {
  std::string out;
  for (const graph::Node* n : g.nodes())
    if (n->op == ops::OpId::gather || n->op == ops::OpId::index_select) {
      const graph::Origin o = graph::origin_of(*n);
      out += std::string(ops::op_info(o.known() ? o.op : n->op).name) + " ";
    }
  return out;
}

}  // namespace kiln::inductor
