// Which kernel set OpenBLAS runs (blas_core.cc explains the choice).
#pragma once

#include <string>

namespace kiln::eager::cpu {

// OpenBLAS's kernel set ("SkylakeX", "Haswell", ...); empty when the BLAS is not OpenBLAS.
std::string blas_core();

}  // namespace kiln::eager::cpu
