// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so value i of a stream is computed from (seed, offset + i) alone and
// eager CPU, generated CPU and GPU kernels all produce the same numbers.
#pragma once
#include <cmath>
#include <cstdint>

namespace kiln {

struct Philox4x32 {
  static void round(uint32_t c[4], const uint32_t k[2]) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    const uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
  // The full generator: a 128-bit counter and a 64-bit key give 128 random bits.
  static void generate4(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    uint32_t k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; ++r) {
      if (r > 0) {
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
      }
      round(c, k);
    }
    for (int i = 0; i < 4; ++i) out[i] = c[i];
  }
  // Four 32-bit random words for counter `ctr` (upper counter words 0) under key `seed`.
  static void generate(uint64_t seed, uint64_t ctr, uint32_t out[4]) {
    const uint32_t c[4] = {uint32_t(ctr), uint32_t(ctr >> 32), 0, 0};
    const uint32_t k[2] = {uint32_t(seed), uint32_t(seed >> 32)};
    generate4(c, k, out);
  }
  // Element i of a uniform [0, 1) stream: 24 random bits, exact in float32.
  static float uniform(uint64_t seed, uint64_t i) {
    uint32_t w[4];
    generate(seed, i, w);
    return float(w[0] >> 8) * (1.0f / 16777216.0f);
  }
  static double uniform_double(uint64_t seed, uint64_t i) {
    uint32_t w[4];
    generate(seed, i, w);
    uint64_t bits = (uint64_t(w[0]) << 21) ^ uint64_t(w[1] >> 11);
    return double(bits & ((uint64_t(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
  }
  // Element i of a standard normal stream (Box-Muller on two words of the same counter).
  static double normal(uint64_t seed, uint64_t i) {
    uint32_t w[4];
    generate(seed, i, w);
    const double u1 = (double(w[0]) + 1.0) * (1.0 / 4294967297.0);  // (0, 1]
    const double u2 = double(w[1]) * (1.0 / 4294967296.0);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace kiln
