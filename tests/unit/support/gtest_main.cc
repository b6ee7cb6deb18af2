// kiln_tests' main: GoogleTest's, except that a run in which every selected test skipped (the
// GPU suites on a machine without one) exits 77, which ctest reports as skipped
// (cmake/gtest_suites.cmake registers one ctest test per suite with SKIP_RETURN_CODE 77).
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const testing::UnitTest& u = *testing::UnitTest::GetInstance();
  if (rc == 0 && u.test_to_run_count() > 0 && u.skipped_test_count() == u.test_to_run_count()) return 77;
  return rc;
}
