// safetensors: round trips, the byte layout of the format, and malformed files.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "core/tensor_impl.h"
#include "support/test_util.h"

using namespace kiln;

namespace {

std::string temp_path(const std::string& name) {
  return (testing::TempDir() + "kiln_" + name + "_" + std::to_string(::getpid()) + ".safetensors");
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A file with the given JSON header and data section, built by hand from the format's definition.
std::string file_with(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeAndLayout) {
  TensorMap in;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kInt16, kInt32, kInt64, kUInt8, kBool})
    in[std::string("t_") + name(dt)] = test::random_tensor({3, 5}, dt, nullptr, "transposed");
  in["scalar"] = scalar_tensor(2.5);
  in["empty"] = zeros({0, 4});
  const std::string path = temp_path("roundtrip");
  save_safetensors(in, path, {{"format", "pt"}});
  MetadataMap meta;
  TensorMap out = load_safetensors(path, &meta);
  EXPECT_EQ(meta["format"], "pt");
  ASSERT_EQ(out.size(), in.size());
  for (auto& [k, t] : in) {
    ASSERT_TRUE(out.count(k)) << k;
    EXPECT_EQ(out[k].dtype(), t.dtype()) << k;
    EXPECT_EQ(out[k].sizes(), t.sizes()) << k;
    EXPECT_EQ(out[k].to_vector<double>(), t.to_vector<double>()) << k;
  }
  std::remove(path.c_str());
}

TEST(Safetensors, WritesTheDocumentedByteLayout) {
  const std::string path = temp_path("layout");
  save_safetensors({{"a", tensor<float>({1.0f, 2.0f})}}, path);
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  ASSERT_EQ(bytes.size(), 8 + n + 8);  // two float32 values follow the header
  EXPECT_EQ(n % 8, 0u);                // padded so data stays aligned
  std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]})"), std::string::npos) << header;
  float v[2];
  std::memcpy(v, bytes.data() + 8 + n, 8);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 2.0f);
  std::remove(path.c_str());
}

TEST(Safetensors, ReadsAHandWrittenFile) {
  std::string data(12, '\0');
  const int32_t vals[3] = {7, -1, 42};
  std::memcpy(data.data(), vals, 12);
  const std::string path = temp_path("hand");
  write_bytes(path, file_with(R"({"x":{"dtype":"I32","shape":[3],"data_offsets":[0,12]}})", data));
  TensorMap m = load_safetensors(path);
  EXPECT_EQ(m["x"].to_vector<int32_t>(), (std::vector<int32_t>{7, -1, 42}));
  m["x"].fill_(0);  // copy-on-write: the file is unchanged
  EXPECT_EQ(load_safetensors(path)["x"].to_vector<int32_t>(), (std::vector<int32_t>{7, -1, 42}));
  std::remove(path.c_str());
}

TEST(Safetensors, MalformedFilesGiveErrors) {
  const std::string f32x2(8, '\0');
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"empty file", ""},
      {"short length", std::string(5, '\0')},
      {"header longer than file", file_with("{}", "").substr(0, 8) + std::string("\xff\x00", 2)},
      {"huge header length", std::string("\xff\xff\xff\xff\xff\xff\xff\x00", 8) + "{}"},
      {"not json", file_with("{nope", "")},
      {"not an object", file_with("[1,2]", "")},
      {"unknown dtype", file_with(R"({"x":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", f32x2)},
      {"shape/bytes mismatch", file_with(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2)},
      {"offsets out of range", file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", f32x2)},
      {"reversed offsets", file_with(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", f32x2)},
      {"overlap", file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2)},
      {"gap", file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2)},
      {"trailing bytes", file_with(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32x2)},
      {"negative size", file_with(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2)},
      {"missing field", file_with(R"({"x":{"dtype":"F32","shape":[2]}})", f32x2)},
      {"bad metadata", file_with(R"({"__metadata__":{"a":1}})", "")},
      {"truncated data", file_with(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abc")},
  };
  for (const Case& c : cases) {
    const std::string path = temp_path("bad");
    write_bytes(path, c.bytes);
    EXPECT_THROW(load_safetensors(path), Error) << c.what;
    std::remove(path.c_str());
  }
  EXPECT_THROW(load_safetensors("/nonexistent/dir/x.safetensors"), Error);
  EXPECT_THROW(save_safetensors({{"a", zeros({1})}}, "/nonexistent/dir/x.safetensors"), Error);
}

TEST(Safetensors, MisalignedDataIsCopied) {
  // A 1-byte tensor first puts the float64 at an odd offset: loading must not read it in place.
  std::string data(9, '\0');
  data[0] = 1;
  const double v = 2.5;
  std::memcpy(data.data() + 1, &v, 8);
  const std::string path = temp_path("misaligned");
  write_bytes(path, file_with(R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"d":{"dtype":"F64","shape":[1],"data_offsets":[1,9]}})", data));
  TensorMap m = load_safetensors(path);
  EXPECT_EQ(m["d"].item<double>(), 2.5);
  EXPECT_EQ(m["b"].item<int64_t>(), 1);
  std::remove(path.c_str());
}

TEST(Safetensors, WriterKeepsEveryTensorAligned) {
  const std::string path = temp_path("aligned");
  save_safetensors({{"a_byte", zeros({3}, kUInt8)}, {"b_double", zeros({2}, kFloat64)}, {"c_half", zeros({3}, kFloat16)}}, path);
  for (auto& [k, t] : load_safetensors(path))
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % t.element_size(), 0u) << k;
  std::remove(path.c_str());
}

TEST(Safetensors, HeadersTheFormatForbidsAreRejected) {
  const std::string f32(4, '\0');
  const std::string one = R"("x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  struct Case {
    const char* what;
    std::string header, data, error;
  } cases[] = {
      // A JSON parser may stop at a NUL; the format pads headers with spaces only.
      {"NUL padding", "{" + one + "}" + std::string(4, '\0'), f32, "NUL byte at offset"},
      // JSON keeps the last of two equal keys: one tensor would vanish without a word.
      {"tensor named twice", "{" + one + "," + one + "}", f32, "names 'x' more than once"},
      {"key twice in an entry", R"({"x":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32,
       "names 'dtype' more than once"},
      {"bool byte 2", R"({"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2),
       "holds the byte 2 at element 1"},
      {"invalid UTF-8", "{\"\xff\xfe\":1}", "", "not valid JSON"},
  };
  for (const Case& c : cases)
    for (bool mmap : {false, true}) {
      const std::string path = temp_path("forbidden");
      write_bytes(path, file_with(c.header, c.data));
      try {
        load_safetensors(path, nullptr, mmap);
        ADD_FAILURE() << c.what << " was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(c.error), std::string::npos) << c.what << ": " << e.what();
        for (unsigned char ch : std::string(e.what())) EXPECT_LT(ch, 0x80) << c.what << ": raw bytes in the message";
      }
      std::remove(path.c_str());
    }
  // Spaces after the JSON are the format's padding, and fine.
  const std::string path = temp_path("padded");
  write_bytes(path, file_with("{" + one + "}   ", f32));
  EXPECT_EQ(load_safetensors(path).at("x").numel(), 1);
  std::remove(path.c_str());
}

TEST(Safetensors, LoadingCopiesUnlessMappingIsAsked) {
  const std::string path = temp_path("owned");
  save_safetensors({{"x", tensor<float>({1, 2, 3, 4})}}, path);
  Tensor copied = load_safetensors(path).at("x");
  Tensor mapped = load_safetensors(path, nullptr, /*mmap=*/true).at("x");
  // Another writer truncates the file: the copy is unaffected (a mapped tensor would now raise
  // SIGBUS on access, which is why mapping is opt-in; it is not touched here).
  ASSERT_EQ(::truncate(path.c_str(), 8), 0);
  EXPECT_EQ(copied.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_TRUE(copied.impl()->storage->owned);
  EXPECT_FALSE(mapped.impl()->storage->owned);  // a view of the mapping
  std::remove(path.c_str());
}
