// Disk-cache tests that run this test binary again as a child process: a temp cache directory
// and KILN_CXX a script that counts the compiles it is asked for (one line each in `compiles`)
// and hands them to c++. One fixture for the tile and the inductor cache tests.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kiln::test {

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline int lines(const std::string& path) {
  const std::string s = slurp(path);
  return int(std::count(s.begin(), s.end(), '\n'));
}

class CacheChildTest : public ::testing::Test {
 protected:
  // child_env: the variable that makes the child test run; child_test: its gtest name.
  CacheChildTest(std::string child_env, std::string child_test)
      : child_env_(std::move(child_env)), child_test_(std::move(child_test)) {}
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    std::filesystem::create_directories(root_ + "/cache");
    // The compiler: counts each compile (a command with -o), then runs c++.
    std::ofstream(root_ + "/cxx") << "#!/bin/sh\ncase \" $* \" in *\" -o \"*) echo compile >> '" << root_
                                  << "/compiles' ;; esac\nexec c++ \"$@\"\n";
    std::filesystem::permissions(root_ + "/cxx", std::filesystem::perms::owner_all);
    std::ofstream(root_ + "/compiles").flush();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  // The command running the child, its stdout and stderr (with KILN_LOGS=cache,perf) to `log`.
  std::string command(const std::string& log) const {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT_GT(n, 0);
    self[n > 0 ? n : 0] = 0;
    return child_env_ + "=1 KILN_LOGS=cache,perf KILN_CACHE_DIR='" + root_ + "/cache' KILN_CXX='" + root_ + "/cxx' '" + self +
           "' --gtest_filter=" + child_test_ + " > '" + root_ + "/" + log + "' 2>&1";
  }
  // Runs the child to completion: its output.
  std::string run_child(const std::string& log) const {
    EXPECT_EQ(std::system(command(log).c_str()), 0) << slurp(root_ + "/" + log);
    return slurp(root_ + "/" + log);
  }
  std::string root_;

 private:
  std::string child_env_, child_test_;
};

}  // namespace kiln::test
