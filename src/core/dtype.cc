#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>

#include <cstdio>

#include "scalar/cast.h"

namespace kiln {
namespace {
DType g_default_float = DType::Float32;
const char* const kNames[kNumDTypes] = {"bool",    "uint8",   "int8",     "int16",   "int32",
                                        "int64",   "float16", "bfloat16", "float32", "float64"};
}  // namespace

size_t itemsize(DType t) {
  static const size_t sizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[int(t)];
}

const char* name(DType t) { return kNames[int(t)]; }

DType dtype_from_name(const std::string& n) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (n == kNames[i]) return DType(i);
  if (n == "float" || n == "Float32") return DType::Float32;
  if (n == "double" || n == "Float64") return DType::Float64;
  if (n == "half" || n == "Float16") return DType::Float16;
  if (n == "BFloat16") return DType::BFloat16;
  if (n == "long" || n == "Int64") return DType::Int64;
  if (n == "int" || n == "Int32") return DType::Int32;
  if (n == "Bool") return DType::Bool;
  detail::fail("unknown dtype name '" + n + "'", "use one of float32, float64, float16, bfloat16, int8..int64, uint8, bool");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a > b) std::swap(a, b);  // now a < b in the enum order
  if (a == DType::Bool) return b;
  if (a == DType::UInt8 && b == DType::Int8) return DType::Int16;
  if (a == DType::Float16 && b == DType::BFloat16) return DType::Float32;
  return b;  // integers widen; any float beats any integer; wider floats win
}

DType default_float_dtype() { return g_default_float; }
void set_default_float_dtype(DType t) {
  KILN_CHECK(is_floating(t), "set_default_float_dtype: ", name(t), " is not a floating dtype");
  g_default_float = t;
}

std::ostream& operator<<(std::ostream& os, DType t) { return os << name(t); }

// The one IEEE binary16 conversion: the scalar header's, which generated kernels share.
uint16_t Half::from_float(float f) { return scalar::float_to_float16(f); }
float Half::to_float(uint16_t h) { return scalar::float16_to_float(h); }

bool Scalar::operator==(const Scalar& o) const {
  if (kind_ == Kind::Float || o.kind_ == Kind::Float) return to_double() == o.to_double();
  return i_ == o.i_;
}

std::string Scalar::str() const {
  if (kind_ == Kind::Bool) return i_ ? "True" : "False";
  if (kind_ == Kind::Int) return std::to_string(i_);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d_);
  std::string s = buf;
  if (s.find_first_of(".eninf") == std::string::npos) s += ".";
  return s;
}
std::ostream& operator<<(std::ostream& os, const Scalar& s) { return os << s.str(); }

const char* name(DeviceType t) {
  static const char* const names[kNumDeviceTypes] = {"cpu", "cuda", "privateuseone"};
  return names[int(t)];
}

Device::Device(const char* spec) {
  const std::string s = spec;
  const size_t colon = s.find(':');
  const std::string type_name = s.substr(0, colon);
  int t = 0;
  while (t < kNumDeviceTypes && type_name != name(DeviceType(t))) ++t;
  int64_t idx = 0;
  bool ok = t < kNumDeviceTypes;
  if (ok && colon != std::string::npos) {  // ":N", N a small non-negative integer
    const std::string digits = s.substr(colon + 1);
    ok = !digits.empty() && digits.size() <= 4 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (ok) idx = std::stoi(digits);
  }
  ok = ok && !(DeviceType(t) == DeviceType::CPU && idx != 0);  // one host
  if (!ok) detail::fail("bad device string '" + s + "'", "use \"cpu\", \"cuda\" or \"cuda:N\"");
  type = DeviceType(t);
  index = int16_t(idx);
}
std::string Device::str() const { return is_cpu() ? "cpu" : std::string(name(type)) + ":" + std::to_string(index); }
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace kiln
