// The tile tests verify the program after every pass (tile/passes/passes.h), release builds
// included; outside tests that is on in debug builds or with KILN_TILE_VERIFY=1.
#include "tile/passes/passes.h"

namespace {
[[maybe_unused]] const bool verify_tile_passes = (kiln::tile::set_verify_each(true), true);
}  // namespace
