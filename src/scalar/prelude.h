// The text of the scalar header (scalar.h with its parts inlined): the prelude of generated C
// and CUDA code. Embedded at build time by cmake/scalar_prelude.cmake.
#pragma once
#include <string_view>

namespace kiln::scalar {

std::string_view prelude();

}  // namespace kiln::scalar
