// NVRTC loaded at run time (src/runtime/cuda/nvrtc.h): a kernel compiles to a cubin for the H200's
// exact arch and to PTX for a virtual one; a rejected source is a kiln::Error with NVRTC's log and
// the path of the saved source. Needs libnvrtc, not a GPU; skips, saying why, where it is absent.
#include <gtest/gtest.h>
#include <kiln/error.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/cuda/library.h"
#include "runtime/cuda/nvrtc.h"

namespace kiln::runtime::cuda {
namespace {

#define SKIP_WITHOUT_NVRTC() \
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC: " << nvrtc::unavailable_reason()

constexpr const char* kAddOne = R"(
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
)";

TEST(CudaNvrtc, CompilesACubinForSm90a) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_GE(nvrtc::version(), 12000);
  const nvrtc::Output out = nvrtc::compile(kAddOne, "add_one.cu", "sm_90a", {"--std=c++17", "-lineinfo"});
  EXPECT_TRUE(out.is_cubin);
  ASSERT_GT(out.binary.size(), 4u);
  EXPECT_EQ(out.binary.substr(0, 4), "\x7f" "ELF");  // a cubin is an ELF image
  EXPECT_NE(out.binary.find("add_one"), std::string::npos);  // the kernel's symbol is in it
}

TEST(CudaNvrtc, CompilesPtxForAVirtualArch) {
  SKIP_WITHOUT_NVRTC();
  const nvrtc::Output out = nvrtc::compile(kAddOne, "add_one.cu", "compute_90");
  EXPECT_FALSE(out.is_cubin);
  EXPECT_NE(out.binary.find(".target sm_90"), std::string::npos) << out.binary.substr(0, 400);
  EXPECT_NE(out.binary.find(".entry add_one"), std::string::npos);
}

TEST(CudaNvrtc, FindsTheToolkitHeadersForBf16AndFp16) {
  SKIP_WITHOUT_NVRTC();
  if (nvrtc::include_dir().empty()) GTEST_SKIP() << "no CUDA toolkit include folder with cuda_bf16.h here";
  const nvrtc::Output out = nvrtc::compile(R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
extern "C" __global__ void halves(__nv_bfloat16* b, __half* h) {
  b[threadIdx.x] = __float2bfloat16(float(threadIdx.x));
  h[threadIdx.x] = __float2half(0.5f * float(threadIdx.x));
}
)", "halves.cu", "sm_90a");
  EXPECT_EQ(out.binary.substr(0, 4), "\x7f" "ELF");
}

TEST(CudaNvrtc, SyntaxErrorGivesTheLogAndTheSavedSource) {
  SKIP_WITHOUT_NVRTC();
  const std::string broken = "extern \"C\" __global__ void broken(float* x) { x[0] = 1.0f +; }\n";
  std::string message;
  try {
    nvrtc::compile(broken, "broken.cu", "sm_90a");
    FAIL() << "a syntax error compiled";
  } catch (const kiln::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("NVRTC could not compile broken.cu for sm_90a"), std::string::npos) << message;
  EXPECT_NE(message.find("broken.cu(1)"), std::string::npos) << message;  // the log names the line
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  const std::string marker = "the source is in ";
  const size_t at = message.find(marker);
  ASSERT_NE(at, std::string::npos) << message;
  const std::string path = message.substr(at + marker.size(), message.find('\n', at) - at - marker.size());
  std::ifstream saved(path);
  ASSERT_TRUE(saved.good()) << path;
  std::stringstream text;
  text << saved.rdbuf();
  EXPECT_EQ(text.str(), broken);
}

TEST(CudaNvrtc, BadArchIsAClearError) {
  SKIP_WITHOUT_NVRTC();
  try {
    nvrtc::compile(kAddOne, "add_one.cu", "hopper");
    FAIL() << "arch 'hopper' was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("arch 'hopper' is neither"), std::string::npos) << e.what();
  }
}

// Runs everywhere: a library that is absent names every candidate tried and the loader's reason.
TEST(CudaLibrary, AbsentLibraryNamesWhatWasTried) {
  Library lib("Nothing", {"libkiln_absent_a.so.1", "/nonexistent/libkiln_absent_b.so"});
  EXPECT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("Nothing could not be loaded"), std::string::npos) << lib.error();
  EXPECT_NE(lib.error().find("libkiln_absent_a.so.1: "), std::string::npos) << lib.error();
  EXPECT_NE(lib.error().find("/nonexistent/libkiln_absent_b.so: "), std::string::npos) << lib.error();
  EXPECT_EQ(lib.symbol("anything"), nullptr);
}

TEST(CudaLibrary, CandidatesPutTheOverrideFirstThenSonamesThenToolkitFolders) {
  setenv("KILN_TEST_LIBRARY_OVERRIDE", "/opt/x/libfoo.so", 1);
  const std::vector<std::string> c = library_candidates("KILN_TEST_LIBRARY_OVERRIDE", {"libfoo.so.2"});
  unsetenv("KILN_TEST_LIBRARY_OVERRIDE");
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "/opt/x/libfoo.so");
  EXPECT_EQ(c[1], "libfoo.so.2");
  bool toolkit = false;
  for (const std::string& s : c) toolkit |= s == "/usr/local/cuda/lib64/libfoo.so.2";
  EXPECT_TRUE(toolkit);
}

}  // namespace
}  // namespace kiln::runtime::cuda
