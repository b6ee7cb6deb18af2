// Settings for the whole kiln_tests binary.
#include "graph/pass_manager.h"

namespace {
// Tests run the verifier after every pass a pass manager runs (release builds included).
[[maybe_unused]] const bool verify_passes = (kiln::graph::set_verify_passes(true), true);
}  // namespace
