// The fuzzer's reducer: shrinks a failing program while it still fails the same way, then
// prints its graph as IR text that kiln-opt replays. See tests/fuzz/README.md.
#pragma once
#include <functional>
#include <string>

#include "fuzz/differential.h"
#include "fuzz/program.h"

namespace kiln::fuzz {

// Builds p and checks it against eager with `backend` (a program that does not build, or
// whose graph eager rejects, is a ReferenceError).
Outcome run_program(const Backend& backend, const Program& p);

// Greedy reduction to a fixed point: drop outputs, delete steps (a deleted step's users read its
// first operand), then simplify inputs (contiguous layout, static sizes, float32, each size to
// 1 or halved). A candidate is kept when `fails` says it still fails; at most `budget` tries.
Program reduce(const Program& p, const std::function<bool(const Program&)>& fails, int budget = 3000);
// The same, keeping candidates that fail with the same kind of outcome as p does on `backend`.
Program reduce(const Backend& backend, const Program& p, int budget = 3000);

// The reduced program's graph as a replayable file: comment lines with the seed, the failure
// and the kiln-opt command, then the IR text.
std::string repro_text(const Program& p, const std::string& backend_name, const Outcome& outcome);

}  // namespace kiln::fuzz
