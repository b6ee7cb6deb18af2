// The op table built from ops.def, and typed access to boxed arguments.
#include <unordered_map>

#include "ops/dispatch.h"
#include "ops/applies.h"

namespace kiln::ops {
namespace {

std::vector<OpInfo>& table() {
  static std::vector<OpInfo> t = [] {
    std::vector<OpInfo> v;
#define KILN_OP(id, kind, family, dtype, flags, schema) \
  v.push_back(OpInfo{OpId::id, #id, schema, OpKind::kind, OpFamily::family, DTypeRule::dtype, uint32_t(flags)});
#include "ops/ops.def"
#undef KILN_OP
    return v;
  }();
  return t;
}

const char* arg_kind(const Arg& a) {
  static const char* names[] = {"None",  "Tensor", "Tensor[]", "Scalar", "int", "float", "bool",
                                "int[]", "SymInt", "SymInt[]", "dtype",  "Device", "str", "float[]"};
  return names[a.index()];
}

template <class T>
const T& get(const Args& a, size_t i, const char* want) {
  KILN_CHECK(i < a.v.size(), "internal: ", op_info(a.op).name, " has no argument ", i);
  const T* p = std::get_if<T>(&a.v[i]);
  KILN_CHECK(p, "argument ", i, " of ", op_info(a.op).name, " should be ", want, ", got ", arg_kind(a.v[i]));
  return *p;
}

}  // namespace

const OpInfo& op_info(OpId op) { return table()[size_t(op)]; }

const char* family_name(OpFamily f) {
  static const char* names[] = {"pointwise", "reduction", "scan", "indexing", "view",   "layout",  "creation",
                                "random",    "linalg",    "sort", "datadep",  "mutation", "nn"};
  return names[size_t(f)];
}

const char* dtype_rule_name(DTypeRule r) {
  static const char* names[] = {"none", "same", "promote", "int_to_float", "int_to_long", "bool", "long", "arg"};
  return names[size_t(r)];
}

const OpInfo* find_op(const std::string& name) {
  static const std::unordered_map<std::string, OpId> by_name = [] {
    std::unordered_map<std::string, OpId> m;
    for (auto& i : table()) m[i.name] = i.id;
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &op_info(it->second);
}

bool register_meta(OpId op, MetaFn fn) {
  // A family meta (KILN_FAMILY_META) and an op's own KILN_META would race by static-init order.
  OpInfo& info = table()[size_t(op)];
  KILN_CHECK(!info.meta || info.meta == fn, "internal: two meta functions registered for ", info.name);
  return info.meta = fn, true;
}
bool register_kernel(OpId op, KernelFn fn) { return register_kernel(op, DeviceType::CPU, fn); }
bool register_kernel(OpId op, DeviceType device, KernelFn fn) { return table()[size_t(op)].kernels[size_t(device)] = fn, true; }
bool register_decomp(OpId op, DecompFn fn) { return table()[size_t(op)].decomp = fn, true; }
bool register_derivative(OpId op, DerivFn fn) { return table()[size_t(op)].derivative = fn, true; }

static AppliesFn* applies_table() {
  static AppliesFn t[kNumOps] = {};
  return t;
}
bool register_kernel_applies(OpId op, AppliesFn fn) { return applies_table()[size_t(op)] = fn, true; }
bool kernel_applies(const Args& a) {
  AppliesFn f = applies_table()[size_t(a.op)];
  return f == nullptr || f(a);
}

bool Args::is_none(size_t i) const {
  return i >= v.size() || std::holds_alternative<std::monostate>(v[i]) ||
         (std::holds_alternative<Tensor>(v[i]) && !std::get<Tensor>(v[i]).defined());
}
const Tensor& Args::tensor(size_t i) const {
  const Tensor& t = get<Tensor>(*this, i, "a Tensor");
  KILN_CHECK(t.defined(), "argument ", i, " of ", op_info(op).name, " is an undefined tensor");
  return t;
}
Tensor Args::opt_tensor(size_t i) const { return is_none(i) ? Tensor() : get<Tensor>(*this, i, "a Tensor"); }
const TensorList& Args::tensors(size_t i) const { return get<TensorList>(*this, i, "a list of Tensors"); }
Scalar Args::scalar(size_t i) const {
  if (i < v.size()) {
    if (auto* p = std::get_if<int64_t>(&v[i])) return Scalar(*p);
    if (auto* p = std::get_if<double>(&v[i])) return Scalar(*p);
    if (auto* p = std::get_if<bool>(&v[i])) return Scalar(*p);
  }
  return get<Scalar>(*this, i, "a Scalar");
}
std::optional<Scalar> Args::opt_scalar(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<Scalar>(scalar(i));
}
int64_t Args::i64(size_t i) const {
  if (i < v.size())
    if (auto* p = std::get_if<SymInt>(&v[i])) return p->value();
  return get<int64_t>(*this, i, "an int");
}
std::optional<int64_t> Args::opt_i64(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<int64_t>(i64(i));
}
double Args::f64(size_t i) const {
  if (i < v.size())
    if (auto* p = std::get_if<int64_t>(&v[i])) return double(*p);
  return get<double>(*this, i, "a float");
}
std::optional<double> Args::opt_f64(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<double>(f64(i));
}
bool Args::b(size_t i) const { return get<bool>(*this, i, "a bool"); }
std::optional<bool> Args::opt_b(size_t i) const { return is_none(i) ? std::nullopt : std::optional<bool>(b(i)); }
const std::vector<int64_t>& Args::ints(size_t i) const { return get<std::vector<int64_t>>(*this, i, "an int list"); }
std::optional<std::vector<int64_t>> Args::opt_ints(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<std::vector<int64_t>>(ints(i));
}
SymInt Args::symint(size_t i) const {
  if (i < v.size())
    if (auto* p = std::get_if<int64_t>(&v[i])) return SymInt(*p);
  return get<SymInt>(*this, i, "a SymInt");
}
std::optional<SymInt> Args::opt_symint(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<SymInt>(symint(i));
}
const SymShape& Args::symints(size_t i) const { return get<SymShape>(*this, i, "a size list"); }
std::optional<SymShape> Args::opt_symints(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<SymShape>(symints(i));
}
DType Args::dtype(size_t i) const { return get<DType>(*this, i, "a dtype"); }
std::optional<DType> Args::opt_dtype(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<DType>(dtype(i));
}
std::optional<Device> Args::opt_device(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<Device>(get<Device>(*this, i, "a Device"));
}
const std::string& Args::str(size_t i) const { return get<std::string>(*this, i, "a string"); }
std::optional<std::string> Args::opt_str(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<std::string>(str(i));
}
std::optional<std::vector<double>> Args::opt_f64s(size_t i) const {
  return is_none(i) ? std::nullopt : std::optional<std::vector<double>>(get<std::vector<double>>(*this, i, "a float list"));
}

std::vector<Tensor> Args::tensor_inputs() const {
  std::vector<Tensor> out;
  for (const Arg& x : v) {
    if (auto* t = std::get_if<Tensor>(&x)) {
      if (t->defined()) out.push_back(*t);
    } else if (auto* l = std::get_if<TensorList>(&x)) {
      for (const Tensor& e : *l)
        if (e.defined()) out.push_back(e);
    }
  }
  return out;
}

}  // namespace kiln::ops
