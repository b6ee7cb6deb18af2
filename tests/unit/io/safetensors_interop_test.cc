// kiln's safetensors files against the reference `safetensors` Python package, both directions.
// Skips when python3 with safetensors and numpy is not installed (scripts/deps.sh installs them).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdlib>

using namespace kiln;

namespace {

const std::string kScript = std::string(KILN_SOURCE_DIR) + "/tests/python/safetensors_interop.py";

bool have_python_safetensors() {
  return std::system("python3 -c 'import safetensors, numpy' >/dev/null 2>&1") == 0;
}

// The same tensors as reference() in the script: value i is (i * 7 % 13) - 6, cast.
TensorMap reference() {
  auto vals = [](int64_t n, bool absolute) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) {
      double x = double((i * 7) % 13 - 6);
      v.push_back(absolute ? std::abs(x) : x);
    }
    return v;
  };
  TensorMap m;
  m["f32"] = tensor(vals(6, false), {2, 3}, kFloat32);
  m["f64"] = tensor(vals(4, false), {4}, kFloat64);
  m["f16"] = tensor(vals(6, false), {3, 2}, kFloat16);
  m["i64"] = tensor(vals(5, false), {5}, kInt64);
  m["i32"] = tensor(vals(4, false), {2, 2}, kInt32);
  m["u8"] = tensor(vals(3, true), {3}, kUInt8);
  m["b"] = tensor(vals(4, false), {4}, kBool);
  return m;
}

std::string temp(const std::string& n) { return testing::TempDir() + "kiln_interop_" + n + ".safetensors"; }

}  // namespace

TEST(SafetensorsInterop, PythonReadsKilnFiles) {
  if (!have_python_safetensors()) GTEST_SKIP() << "python3 with safetensors and numpy not installed";
  const std::string path = temp("kiln_written");
  save_safetensors(reference(), path);
  EXPECT_EQ(std::system(("python3 " + kScript + " check " + path).c_str()), 0);
  std::remove(path.c_str());
}

TEST(SafetensorsInterop, KilnReadsPythonFiles) {
  if (!have_python_safetensors()) GTEST_SKIP() << "python3 with safetensors and numpy not installed";
  const std::string path = temp("py_written");
  ASSERT_EQ(std::system(("python3 " + kScript + " write " + path).c_str()), 0);
  MetadataMap meta;
  TensorMap got = load_safetensors(path, &meta);
  EXPECT_EQ(meta["writer"], "safetensors");
  TensorMap ref = reference();
  ASSERT_EQ(got.size(), ref.size());
  for (auto& [k, t] : ref) {
    ASSERT_TRUE(got.count(k)) << k;
    EXPECT_EQ(got[k].dtype(), t.dtype()) << k;
    EXPECT_EQ(got[k].sizes(), t.sizes()) << k;
    EXPECT_EQ(got[k].to_vector<double>(), t.to_vector<double>()) << k;
  }
  std::remove(path.c_str());
}
