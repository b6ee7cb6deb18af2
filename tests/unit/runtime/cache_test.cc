// The disk cache (runtime/cache.h): entries round-trip, the cache can be turned off, truncated and
// corrupt entries are misses that are logged and removed, keys depend on every part, and
// processes writing and reading the same entries at once only ever read complete ones.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <kiln/error.h>
#include <kiln/log.h>

#include "runtime/cache.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

// Points the cache at a fresh folder for one test and puts the environment back after.
class CacheDir {
 public:
  CacheDir() {
    if (const char* d = std::getenv("KILN_CACHE_DIR")) saved_ = d;
    std::string tmpl = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
    setenv("KILN_CACHE_DIR", path_.c_str(), 1);
  }
  ~CacheDir() {
    if (saved_) setenv("KILN_CACHE_DIR", saved_->c_str(), 1);
    else unsetenv("KILN_CACHE_DIR");
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<std::string> saved_;
};

// A payload whose bytes say who wrote it: writer w's version of entry k, of a size of its own.
std::string payload(int k, int w) {
  std::string s = "entry " + std::to_string(k) + " writer " + std::to_string(w) + "|";
  const size_t n = 200000 + size_t(w) * 7919 + size_t(k) * 104729;
  s.reserve(n);
  for (size_t i = s.size(); i < n; ++i) s.push_back(char((i * 131 + size_t(w) * 17 + size_t(k)) & 0xff));
  return s;
}

// Which writer a payload names, or -1.
int writer_of(const std::string& s) {
  const size_t at = s.find(" writer ");
  return at == std::string::npos ? -1 : std::atoi(s.c_str() + at + 8);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(DiskCache, EntriesRoundTrip) {
  CacheDir d;
  EXPECT_EQ(cache::dir(), d.path());
  EXPECT_FALSE(cache::get("test", "missing"));
  std::string bytes("a\0b\xff", 4);  // binary: NULs and high bytes survive
  bytes += payload(1, 2);
  const cache::Stats before = cache::stats();
  auto path = cache::put("test", "one.bin", bytes);
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, d.path() + "/test/one.bin");
  EXPECT_EQ(fs::file_size(*path), bytes.size() + 24);  // the payload and its trailer
  auto got = cache::get("test", "one.bin");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, bytes);
  EXPECT_EQ(cache::get_path("test", "one.bin"), path);
  // Overwriting replaces; an empty payload is an entry too.
  ASSERT_TRUE(cache::put("test", "one.bin", ""));
  EXPECT_EQ(cache::get("test", "one.bin"), std::string());
  const cache::Stats after = cache::stats();
  EXPECT_EQ(after.writes - before.writes, 2u);
  EXPECT_EQ(after.hits - before.hits, 3u);
  cache::remove("test", "one.bin");
  EXPECT_FALSE(cache::get("test", "one.bin"));
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(d.path() + "/test")) ADD_FAILURE() << "left over: " << e.path();
}

TEST(DiskCache, CanBeTurnedOff) {
  CacheDir d;
  ASSERT_TRUE(cache::put("test", "x", "1"));
  setenv("KILN_DISABLE_CACHE", "1", 1);
  EXPECT_FALSE(cache::enabled());
  EXPECT_FALSE(cache::get("test", "x"));
  EXPECT_FALSE(cache::put("test", "y", "2"));
  setenv("KILN_DISABLE_CACHE", "0", 1);
  EXPECT_EQ(cache::get("test", "x"), std::string("1"));
  unsetenv("KILN_DISABLE_CACHE");
  setenv("KILN_CACHE_DIR", "", 1);  // set and empty: off
  EXPECT_FALSE(cache::enabled());
  EXPECT_FALSE(cache::put("test", "y", "2"));
  EXPECT_FALSE(cache::get("test", "x"));
  setenv("KILN_CACHE_DIR", d.path().c_str(), 1);
  EXPECT_FALSE(fs::exists(d.path() + "/test/y"));
}

TEST(DiskCache, TruncatedAndCorruptEntriesAreLoggedRemovedAndRebuilt) {
  CacheDir d;
  const std::string bytes = payload(3, 1);
  const std::string path = d.path() + "/test/e";
  const std::string saved_logs = enabled_logs();
  set_logs("cache");
  auto expect_miss = [&](const std::string& why) {
    const uint64_t corrupt = cache::stats().corrupt;
    testing::internal::CaptureStderr();
    EXPECT_FALSE(cache::get("test", "e")) << why;
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("[kiln:cache] corrupt entry " + path), std::string::npos) << why << ": " << log;
    EXPECT_NE(log.find(why), std::string::npos) << log;
    EXPECT_EQ(cache::stats().corrupt, corrupt + 1);
    EXPECT_FALSE(fs::exists(path)) << why << ": the bad entry is removed";
    ASSERT_TRUE(cache::put("test", "e", bytes));  // the caller rebuilds it
    EXPECT_EQ(cache::get("test", "e"), bytes);
  };
  ASSERT_TRUE(cache::put("test", "e", bytes));
  fs::resize_file(path, fs::file_size(path) - 1);  // cut into the trailer
  expect_miss("truncated");
  fs::resize_file(path, bytes.size() / 2);  // cut into the payload
  expect_miss("truncated");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a' ^ bytes[1000]);  // one flipped byte inside the payload
  }
  expect_miss("checksum does not match");
  {
    std::string s = slurp(path);  // the trailer's length no longer matches
    s.insert(10, "xx");
    std::ofstream(path, std::ios::binary) << s;
  }
  expect_miss("length does not match");
  std::ofstream(path, std::ios::binary) << "a file of the right name that no cache wrote";
  expect_miss("no kiln trailer");
  set_logs(saved_logs);
}

TEST(DiskCache, KeysDependOnEveryPartAndItsBoundaries) {
  const std::string k = cache::hash({"source", "c++", "-O3"});
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(k, cache::hash({"source", "c++", "-O3"}));
  EXPECT_NE(k, cache::hash({"source", "c++", "-O2"}));
  EXPECT_NE(k, cache::hash({"sourcec", "++", "-O3"}));
  EXPECT_NE(k, cache::hash({"source", "c++", "-O3", ""}));
  EXPECT_NE(cache::hash({}), cache::hash({""}));
  EXPECT_STRNE(cache::kiln_version(), "unknown");
}

TEST(DiskCache, BadNamesAreErrors) {
  CacheDir d;
  EXPECT_THROW(cache::get("test", "../escape"), Error);
  EXPECT_THROW(cache::put("a/b", "x", ""), Error);
  EXPECT_THROW(cache::put("test", "", ""), Error);
}

// Several processes write their own version of the same entries and read them back, at once:
// every read is a miss or one writer's complete payload, and the folder ends with complete
// entries and no temporary files.
TEST(DiskCache, ConcurrentProcessesNeverSeeAPartialEntry) {
  CacheDir d;
  constexpr int kWriters = 4, kEntries = 3, kRounds = 25;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int bad = 0;
      for (int r = 0; r < kRounds; ++r)
        for (int k = 0; k < kEntries; ++k) {
          const std::string name = "shared" + std::to_string(k);
          if (!cache::put("race", name, payload(k, w))) bad |= 1;
          if (auto got = cache::get("race", name)) {
            const int from = writer_of(*got);
            if (from < 0 || from >= kWriters || *got != payload(k, from)) bad |= 2;
          }
        }
      _exit(bad);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a write failed, 2: a read saw a partial or mixed entry";
  }
  for (int k = 0; k < kEntries; ++k) {
    auto got = cache::get("race", "shared" + std::to_string(k));
    ASSERT_TRUE(got) << k;
    const int from = writer_of(*got);
    ASSERT_GE(from, 0);
    EXPECT_EQ(*got, payload(k, from));
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path() + "/race")) {
    ++files;
    EXPECT_EQ(e.path().filename().string().rfind("shared", 0), 0u) << "left over: " << e.path();
  }
  EXPECT_EQ(files, kEntries);
}

}  // namespace
}  // namespace kiln::runtime
