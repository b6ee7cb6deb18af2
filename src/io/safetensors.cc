// safetensors reader and writer. Every malformed file gives a kiln::Error naming what is wrong.
#include <fcntl.h>
#include <kiln/io.h>
#include <kiln/ops.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "core/tensor_impl.h"
#include "ops/dispatch.h"

namespace kiln {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxHeader = 100 * 1000 * 1000;  // as the reference implementation

const char* code_of(DType t) {
  switch (t) {
    case kBool: return "BOOL";
    case kUInt8: return "U8";
    case kInt8: return "I8";
    case kInt16: return "I16";
    case kInt32: return "I32";
    case kInt64: return "I64";
    case kFloat16: return "F16";
    case kBFloat16: return "BF16";
    case kFloat32: return "F32";
    case kFloat64: return "F64";
  }
  return "?";
}

DType dtype_of_code(const std::string& c, const std::string& file, const std::string& tensor) {
  for (DType t : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64})
    if (c == code_of(t)) return t;
  detail::fail("load_safetensors(" + file + "): tensor '" + tensor + "' has unsupported dtype \"" + c + "\"",
               "kiln reads BOOL, U8, I8, I16, I32, I64, F16, BF16, F32 and F64");
}

// A read-only mapping of a whole file, unmapped when the last tensor viewing it is gone.
struct Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

}  // namespace

void save_safetensors(const TensorMap& tensors, const std::string& path, const MetadataMap& metadata, SourceLoc loc) {
  ops::CallSite site(loc);
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // Data in order of decreasing element size (then name): every tensor starts aligned to its
  // element size, as the reference writer arranges it.
  std::vector<std::pair<std::string, Tensor>> order(tensors.begin(), tensors.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return itemsize(x.second.dtype()) > itemsize(y.second.dtype());
  });
  std::vector<Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    KILN_CHECK(name != "__metadata__", "save_safetensors: '__metadata__' is reserved and cannot name a tensor");
    KILN_CHECK(!t.is_fake(), "save_safetensors: tensor '", name, "' is fake (no data)");
    Tensor c = t.detach().contiguous();
    const uint64_t nbytes = uint64_t(c.numel()) * itemsize(c.dtype());
    header[name] = {{"dtype", code_of(c.dtype())}, {"shape", c.sizes()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    data.push_back(c);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    KILN_CHECK_HINT(f.good(), "check that the directory exists and is writable", "save_safetensors: cannot open ",
                    tmp, " for writing");
    uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = (unsigned char)(n >> (8 * i));
    f.write(reinterpret_cast<const char*>(len), 8);
    f.write(text.data(), std::streamsize(text.size()));
    for (const Tensor& c : data)
      if (c.numel()) f.write(static_cast<const char*>(c.data_ptr()), std::streamsize(c.numel() * int64_t(itemsize(c.dtype()))));
    f.flush();
    KILN_CHECK(f.good(), "save_safetensors: writing ", tmp, " failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    detail::fail("save_safetensors: cannot rename " + tmp + " to " + path);
  }
}

namespace {
// Reads exactly n bytes at `offset`; false when the file ends first (truncated meanwhile).
bool read_at(int fd, void* dst, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= size_t(got), offset += uint64_t(got);
  }
  return true;
}

// nlohmann's messages quote the offending bytes, which may not be UTF-8 (and then cannot become
// a Python string): anything outside printable ASCII is shown as \xNN.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) out += char(c);
    else out += detail::cat("\\x", "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15]);
  }
  return out;
}

struct File {
  int fd = -1;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

TensorMap load_safetensors(const std::string& path, MetadataMap* metadata, bool mmap, SourceLoc loc) {
  ops::CallSite site(loc);
  const std::string where = "load_safetensors(" + path + "): ";
  File file;
  file.fd = ::open(path.c_str(), O_RDONLY);
  KILN_CHECK_HINT(file.fd >= 0, "check the path", where, "cannot open the file");
  struct stat st;
  KILN_CHECK(::fstat(file.fd, &st) == 0, where, "cannot stat the file");
  const uint64_t size = uint64_t(st.st_size);
  KILN_CHECK(size >= 8, where, "the file is ", size, " bytes: too short for the 8-byte header length");
  unsigned char len[8];
  KILN_CHECK(read_at(file.fd, len, 8, 0), where, "cannot read the header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(len[i]) << (8 * i);
  KILN_CHECK(n <= kMaxHeader, where, "header length ", n, " exceeds the limit of ", kMaxHeader, " bytes");
  KILN_CHECK(n <= size - 8, where, "header length ", n, " runs past the end of the file (", size,
             " bytes): the file is truncated or corrupt");
  std::string text(n, '\0');
  KILN_CHECK(read_at(file.fd, text.data(), n, 8), where, "cannot read the header (the file shrank?)");
  KILN_CHECK(n > 0 && text[0] == '{', where, "the header does not start with '{'");
  // The format pads the header with spaces; NUL bytes (which a JSON parser may take as its end)
  // are not part of it.
  KILN_CHECK(text.find('\0') == std::string::npos, where, "the header contains a NUL byte at offset ",
             text.find('\0'), " (it may be padded with spaces only)");
  json header;
  std::string repeated;  // a key given twice in one object (a tensor named twice): JSON keeps one
  try {
    std::vector<std::set<std::string>> keys;  // of each object being parsed
    header = json::parse(text, [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) keys.emplace_back();
      else if (event == json::parse_event_t::object_end) keys.pop_back();
      else if (event == json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second &&
               repeated.empty())
        repeated = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    detail::fail(where + "the header is not valid JSON: " + printable(e.what()));
  }
  KILN_CHECK(header.is_object(), where, "the header is not a JSON object");
  KILN_CHECK(repeated.empty(), where, "the header names '", printable(repeated), "' more than once");
  const uint64_t data_size = size - 8 - n;
  const uint64_t data_start = 8 + n;

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      KILN_CHECK(it.value().is_object(), where, "__metadata__ is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        KILN_CHECK(m.value().is_string(), where, "__metadata__ value for '", m.key(), "' is not a string");
        if (metadata) (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const json& e = it.value();
    const std::string& name = it.key();
    KILN_CHECK(e.is_object() && e.contains("dtype") && e.contains("shape") && e.contains("data_offsets"), where,
               "entry '", name, "' needs dtype, shape and data_offsets");
    KILN_CHECK(e["dtype"].is_string(), where, "entry '", name, "': dtype is not a string");
    Entry en{name, dtype_of_code(e["dtype"].get<std::string>(), path, name), {}, 0, 0};
    KILN_CHECK(e["shape"].is_array(), where, "entry '", name, "': shape is not a list");
    uint64_t numel = 1;
    for (const json& d : e["shape"]) {
      KILN_CHECK(d.is_number_unsigned(), where, "entry '", name, "': shape has a non-integer or negative size");
      const uint64_t s = d.get<uint64_t>();
      KILN_CHECK(s == 0 || numel <= (uint64_t(1) << 62) / s, where, "entry '", name, "': shape overflows");
      numel *= s;
      en.shape.push_back(int64_t(s));
    }
    const json& off = e["data_offsets"];
    KILN_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(), where,
               "entry '", name, "': data_offsets must be two non-negative integers");
    en.begin = off[0].get<uint64_t>();
    en.end = off[1].get<uint64_t>();
    KILN_CHECK(en.begin <= en.end && en.end <= data_size, where, "entry '", name, "': data_offsets [", en.begin, ", ",
               en.end, ") fall outside the ", data_size, "-byte data section");
    KILN_CHECK(en.end - en.begin == numel * itemsize(en.dtype), where, "entry '", name, "': ", en.end - en.begin,
               " bytes of data for shape ", shape_str(en.shape), " of ", kiln::name(en.dtype), " (needs ",
               numel * itemsize(en.dtype), ")");
    entries.push_back(en);
  }
  // The data section must be covered exactly once: no overlaps, no gaps.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  uint64_t pos = 0;
  for (const Entry* e : by_offset) {
    KILN_CHECK(e->begin >= pos, where, "entry '", e->name, "' overlaps the data of another tensor");
    KILN_CHECK(e->begin == pos, where, "there are unused bytes before entry '", e->name, "'");
    pos = e->end;
  }
  KILN_CHECK(pos == data_size, where, "the data section has ", data_size - pos, " trailing bytes no tensor uses");

  TensorMap out;
  if (!mmap) {  // the default: every tensor owns its memory, whatever later happens to the file
    for (const Entry& e : entries) {
      Tensor t = make_tensor(e.shape, e.dtype);
      KILN_CHECK(read_at(file.fd, t.data_ptr(), e.end - e.begin, data_start + e.begin), where, "cannot read tensor '",
                 e.name, "': the file ends early (truncated while loading?)");
      check_bool_bytes(*t.impl(), ("load_safetensors(" + path + ")").c_str());
      out[e.name] = t;
    }
    return out;
  }
  // mmap=true: tensors read the mapping directly (copy-on-write: writing to them never changes the
  // file). Faster to open and shares pages, but a file truncated meanwhile by another writer
  // kills the process with SIGBUS on access (docs/python-api.md).
  auto map = std::make_shared<Mapping>();
  map->size = size_t(size);
  map->addr = ::mmap(nullptr, map->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, file.fd, 0);
  KILN_CHECK(map->addr != MAP_FAILED, where, "cannot map the file");
  char* data = reinterpret_cast<char*>(map->addr) + data_start;
  for (const Entry& e : entries) {
    char* p = data + e.begin;
    if (reinterpret_cast<uintptr_t>(p) % itemsize(e.dtype) != 0) {  // misaligned: copy the bytes once
      Tensor t = make_tensor(e.shape, e.dtype);
      if (e.end > e.begin) std::memcpy(t.data_ptr(), p, e.end - e.begin);
      check_bool_bytes(*t.impl(), ("load_safetensors(" + path + ")").c_str());
      out[e.name] = t;
      continue;
    }
    Tensor t = from_blob(p, e.shape, e.dtype);  // checks bool bytes
    t.impl()->storage->owner = map;  // the tensor keeps the mapping alive
    out[e.name] = t;
  }
  return out;
}

}  // namespace kiln
