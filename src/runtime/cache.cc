// The disk cache (cache.h, docs/cache.md).
#include "runtime/cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <kiln/error.h>
#include <kiln/log.h>

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln::runtime::cache {
namespace {

// The trailer after the payload: its length, its checksum, and a magic that also versions the
// format (a new layout gets a new magic, and old entries read as corrupt and are rebuilt).
struct Trailer {
  uint64_t length;
  uint64_t checksum;
  char magic[8];
};
static_assert(sizeof(Trailer) == 24);
constexpr char kMagic[8] = {'k', 'i', 'l', 'n', 'c', 'c', '1', '\n'};

std::atomic<uint64_t> g_hits{0}, g_misses{0}, g_corrupt{0}, g_writes{0}, g_temp{0};

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: every input bit moves every output bit
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t checksum(std::string_view payload) { return mix(fnv1a(14695981039346656037ull, payload.data(), payload.size())); }

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 200 || s[0] == '.') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '+' && c != '-') return false;
  return true;
}

std::string entry_path(const std::string& root, std::string_view ns, std::string_view name) {
  KILN_CHECK(valid_name(ns) && valid_name(name), "cache: bad entry name ", ns, "/", name,
             " (letters, digits and . _ + - only)");
  return root + "/" + std::string(ns) + "/" + std::string(name);
}

bool read_all(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) {
    out.resize(size_t(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ok = false;
      else done += size_t(n);
    }
  }
  ::close(fd);
  return ok;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Why the file is not a valid entry, or nullptr when it is (then `bytes` holds the payload).
const char* check(std::string& bytes) {
  if (bytes.size() < sizeof(Trailer)) return "shorter than its trailer (truncated)";
  Trailer t;
  std::memcpy(&t, bytes.data() + bytes.size() - sizeof t, sizeof t);
  if (std::memcmp(t.magic, kMagic, sizeof kMagic) != 0) return "no kiln trailer (truncated, or not a cache entry)";
  if (t.length != bytes.size() - sizeof t) return "its length does not match the trailer's (truncated)";
  bytes.resize(t.length);
  if (checksum(bytes) != t.checksum) return "its checksum does not match (corrupt)";
  return nullptr;
}

// The entry at `path`, checked; a bad one is logged and removed.
std::optional<std::string> load(const std::string& path) {
  std::string bytes;
  if (!read_all(path, bytes)) {
    ++g_misses;
    KILN_LOG(cache) << "miss " << path;
    return std::nullopt;
  }
  if (const char* why = check(bytes)) {
    ++g_corrupt;
    ++g_misses;
    KILN_LOG(cache) << "corrupt entry " << path << ": " << why << "; removed, it is rebuilt";
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return std::nullopt;
  }
  ++g_hits;
  KILN_LOG(cache) << "hit " << path << " (" << bytes.size() << " bytes)";
  return bytes;
}

}  // namespace

std::string dir() {
  if (const char* off = std::getenv("KILN_DISABLE_CACHE"); off && *off && std::strcmp(off, "0") != 0) return {};
  if (const char* d = std::getenv("KILN_CACHE_DIR")) return d;  // set and empty: off
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return {};
}

bool enabled() { return !dir().empty(); }

std::optional<std::string> get(std::string_view ns, std::string_view name) {
  const std::string root = dir();
  if (root.empty()) return std::nullopt;
  return load(entry_path(root, ns, name));
}

std::optional<std::string> get_path(std::string_view ns, std::string_view name) {
  const std::string root = dir();
  if (root.empty()) return std::nullopt;
  std::string path = entry_path(root, ns, name);
  if (!load(path)) return std::nullopt;
  return path;
}

std::optional<std::string> put(std::string_view ns, std::string_view name, std::string_view payload) {
  const std::string root = dir();
  if (root.empty()) return std::nullopt;
  const std::string path = entry_path(root, ns, name);
  const std::string folder = root + "/" + std::string(ns);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  // A name of its own per writer (pid + counter), in the entry's folder so rename stays atomic.
  const std::string tmp = folder + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(g_temp++) + "-" +
                          std::string(name);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    KILN_LOG(cache) << "cannot write " << tmp << ": " << std::strerror(errno) << "; not cached";
    return std::nullopt;
  }
  Trailer t{payload.size(), checksum(payload), {}};
  std::memcpy(t.magic, kMagic, sizeof kMagic);
  bool ok = write_all(fd, payload.data(), payload.size()) && write_all(fd, reinterpret_cast<const char*>(&t), sizeof t);
  ok = ::fsync(fd) == 0 && ok;  // the bytes are on disk before the name points at them
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    KILN_LOG(cache) << "cannot write " << path << ": " << std::strerror(errno) << "; not cached";
    std::filesystem::remove(tmp, ec);
    return std::nullopt;
  }
  ++g_writes;
  KILN_LOG(cache) << "wrote " << path << " (" << payload.size() << " bytes)";
  return path;
}

void remove(std::string_view ns, std::string_view name) {
  const std::string root = dir();
  if (root.empty()) return;
  std::error_code ec;
  std::filesystem::remove(entry_path(root, ns, name), ec);
}

std::string hash(std::initializer_list<std::string_view> parts) {
  // Two FNV-1a lanes from different bases; each part is followed by its length, so ("ab", "c")
  // and ("a", "bc") differ.
  uint64_t a = 14695981039346656037ull, b = 0x6a09e667f3bcc908ull;
  for (std::string_view p : parts) {
    const uint64_t n = p.size();
    a = fnv1a(fnv1a(a, p.data(), p.size()), &n, sizeof n);
    b = fnv1a(fnv1a(b, &n, sizeof n), p.data(), p.size());
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(mix(a)),
                static_cast<unsigned long long>(mix(b ^ a)));
  return buf;
}

const char* kiln_version() { return KILN_VERSION; }

const std::string& build_id() {
  static const std::string id = [] {
    Dl_info info{};
    struct stat st{};
    if (!dladdr(reinterpret_cast<void*>(&kiln_version), &info) || !info.dli_fname || stat(info.dli_fname, &st) != 0)
      return std::string("unknown build");  // (then kiln_version() alone keys the entries)
    return std::string(info.dli_fname) + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

Stats stats() { return {g_hits.load(), g_misses.load(), g_corrupt.load(), g_writes.load()}; }

}  // namespace kiln::runtime::cache
