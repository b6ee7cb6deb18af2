#include <gtest/gtest.h>
#include <kiln/kiln.h>

using namespace kiln;

TEST(Smoke, AddMul) {
  Tensor a = tensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor<float>({10, 20});
  Tensor c = a * b + 1.0;
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{11, 41, 31, 81}));
}
