// Element types, the 16-bit float storage types, and Scalar (a number of any kind).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

namespace kiln {

// Order matters: it is the promotion lattice's order within each category.
enum class DType : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };
inline constexpr int kNumDTypes = 10;

inline constexpr DType kBool = DType::Bool, kUInt8 = DType::UInt8, kInt8 = DType::Int8,
                       kInt16 = DType::Int16, kInt32 = DType::Int32, kInt64 = DType::Int64,
                       kFloat16 = DType::Float16, kBFloat16 = DType::BFloat16,
                       kFloat32 = DType::Float32, kFloat64 = DType::Float64;

size_t itemsize(DType t);
const char* name(DType t);  // "float32", "bfloat16", ...
DType dtype_from_name(const std::string& name);
inline bool is_floating(DType t) { return t >= DType::Float16; }
inline bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
// PyTorch's promote_types: the smallest type both convert to without losing range or kind.
DType promote_types(DType a, DType b);
DType default_float_dtype();
void set_default_float_dtype(DType t);
std::ostream& operator<<(std::ostream& os, DType t);

// IEEE binary16, stored as bits; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::isnan(f)) return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1);
    return uint16_t(u >> 16);
  }
  static float to_float(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// A number of any kind, as Python's int/float/bool. Kept exactly: int64 stays int64.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool b) : kind_(Kind::Bool), i_(b) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T i) : kind_(Kind::Int), i_(int64_t(i)) {}
  Scalar(double d) : kind_(Kind::Float), d_(d) {}
  Scalar(float d) : kind_(Kind::Float), d_(d) {}
  Kind kind() const { return kind_; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }
  // The dtype a Python number of this kind has when it meets a tensor.
  DType dtype() const {
    return kind_ == Kind::Float ? DType::Float64 : kind_ == Kind::Int ? DType::Int64 : DType::Bool;
  }
  bool operator==(const Scalar& o) const;
  std::string str() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace kiln
