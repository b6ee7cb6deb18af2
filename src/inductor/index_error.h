// The error record of generated kernels with index range checks (loop IR Check values): an
// i64[3] the plan passes to each such kernel, zero before the call. A lane whose index is out of
// range stores [op + 1, the index, the size] into it (any one bad lane wins); after the launch the
// plan reads it and raises the kiln::Error eager gives for that op (decomp/index_error.h), so a
// compiled function never returns what eager would not. On the CPU the record is host memory;
// on a GPU it is a device buffer read back after the launch (one small copy per checking kernel).
#pragma once
#include <kiln/tensor.h>

#include <string>

#include "graph/graph.h"

namespace kiln::inductor {

constexpr int kIndexErrorArg = -2;  // KernelArg::buffer of the record parameter
enum IndexErrorSlot : int64_t { kErrorOp = 0, kErrorIndex = 1, kErrorSize = 2, kErrorSlots = 3 };

// A zeroed record (no error).
Tensor new_index_error_record();
// Throws the error the record holds (nothing when it is zero).
void check_index_error(const Tensor& record);
// The ops whose errors g's gathers raise (their origins: cross_entropy, embedding, ...), which
// their kernels name: part of the plan's key, as a graph's text has no origins (lower/gather.cc).
std::string index_error_ops(const graph::Graph& g);

}  // namespace kiln::inductor
