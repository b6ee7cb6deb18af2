// Every kiln op as a free function (generated from src/ops/ops.def), plus the hand-written
// entry points that are not ops: tensor construction from data, scalar tensors, seeding.
#pragma once
#include <kiln/ops_gen.h>
#include <kiln/tensor.h>

#include <vector>

namespace kiln {

// A tensor holding a copy of `values`: 1-d, or with the given shape (an empty shape makes a 0-d
// tensor, which holds one value).
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& shape, std::optional<DType> dtype = std::nullopt,
              SourceLoc loc = SourceLoc::current());
template <class T>
Tensor tensor(const std::vector<T>& values, SourceLoc loc = SourceLoc::current()) {
  return tensor(values, Shape{int64_t(values.size())}, std::nullopt, loc);
}
template <class T>
Tensor tensor(std::initializer_list<T> values, const Shape& shape, std::optional<DType> dtype = std::nullopt,
              SourceLoc loc = SourceLoc::current()) {
  return tensor(std::vector<T>(values), shape, dtype, loc);
}
template <class T>
Tensor tensor(std::initializer_list<T> values, SourceLoc loc = SourceLoc::current()) {
  return tensor(std::vector<T>(values), Shape{int64_t(values.size())}, std::nullopt, loc);
}
// A 0-d tensor.
Tensor scalar_tensor(Scalar value, std::optional<DType> dtype = std::nullopt, SourceLoc loc = SourceLoc::current());
// A tensor over memory the caller owns (no copy); it must outlive the tensor.
Tensor from_blob(void* data, const Shape& sizes, DType dtype, const Shape& strides = {},
                 SourceLoc loc = SourceLoc::current());

// The generator behind rand/randn/randint/randperm/dropout: Philox 4x32-10, keyed by the seed,
// counting an offset that advances by the number of values each call draws.
void manual_seed(uint64_t seed);
struct GeneratorState {
  uint64_t seed;
  uint64_t offset;
};
GeneratorState generator_state();
void set_generator_state(GeneratorState s);
// Reserves n values of the stream: returns the (seed, offset) to draw them from.
GeneratorState next_random_range(uint64_t n);

// PyTorch's result_type over tensors and numbers (dimensioned tensors > 0-d tensors > numbers).
DType result_type(const std::vector<Tensor>& tensors);
bool can_cast(DType from, DType to);

}  // namespace kiln
