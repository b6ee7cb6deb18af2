// max-autotune (docs/compiler.md, "Modes"): inductor times candidates of its own kernels with the
// tile tuner (tile/autotune.h) on inputs of the graph's sizes (the symbols' hints) and keeps the
// fastest; the choice is cached on disk (namespace "autotune"), so a warm process times nothing.
#pragma once
#include <optional>

#include "inductor/emit_tile.h"
#include "inductor/loop_ir.h"
#include "tile/ir.h"

namespace kiln::inductor {

// The block sizes emit_tile should use for kernel node n of p: the fastest of a few candidates
// around its own choice (each block size a quarter, half, twice and four times it), timed on
// scratch buffers of the real sizes filled with fixed pseudo-random data. Empty (the emitter's own
// choice) when nothing differs between the candidates, or when the kernel loads integer buffers
// (scratch data could make them out-of-range indices or zero divisors).
BlockSizes tune_blocks(const Program& p, const Node& n);

// For a matmul extern node n of 2-d f32 operands with a contiguous output: BLAS (the eager
// kernel) raced against a generated tile matmul (a `dot` over [BM, BK] x [BK, BN] blocks, a few
// block configs) at the graph's sizes. The generated kernel when it wins, else nullopt (the
// extern stays). Logged (KILN_LOGS=autotune) and cached as tune_blocks' choices are.
std::optional<GeneratedKernel> tune_matmul(const Program& p, const Node& n);

// The generated matmul: out[M, N] (contiguous, f32) = a[M, K] @ b[K, N] (any strides); parameters
// out, a, b, M, N, K, stride_am, stride_ak, stride_bk, stride_bn; one program per BM x BN tile
// (grid cdiv(M, BM) * cdiv(N, BN)).
tile::Program tile_matmul(const std::string& name, int64_t bm, int64_t bn, int64_t bk);

}  // namespace kiln::inductor
