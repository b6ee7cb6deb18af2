// Philox 4x32-10 against the published known-answer vectors (Random123's kat_vectors).
#include <gtest/gtest.h>

#include "core/philox.h"

using kiln::Philox4x32;

TEST(Philox, KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], expect[4];
  } kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t out[4];
    Philox4x32::generate4(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], k.expect[i]) << "word " << i;
  }
}

TEST(Philox, UniformIsInUnitInterval) {
  for (uint64_t i = 0; i < 10000; ++i) {
    float u = Philox4x32::uniform(42, i);
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
  }
}
