// The `custom` op's meta, kernel and derivative: each looks the op up by name (custom.h).
#include "ops/custom.h"

#include <map>
#include <mutex>

namespace kiln::ops {
namespace {

std::mutex g_mu;
std::map<std::string, std::shared_ptr<const CustomOp>, std::less<>> g_ops;

std::shared_ptr<const CustomOp> op_of(const Args& a) {
  const std::string& name = a.str(0);
  auto op = find_custom_op(name);
  KILN_CHECK_HINT(op, "register it first (kiln.tile.op / tile::register_op)", "custom op ", name,
                  " is not registered");
  return op;
}

std::vector<double> scalars_of(const Args& a) { return a.opt_f64s(2).value_or(std::vector<double>{}); }

std::string specs_str(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (const TensorSpec& t : specs) s += (s.empty() ? "" : ", ") + std::string(name(t.dtype)) + shape_str(t.sizes);
  return "[" + s + "]";
}

// Runs one of the op's functions; a kiln::Error from it gets the op's name in front (and the
// inner op, e.g. a tile kernel's tile.store, as context; its file and line stay).
template <class F>
auto named(const CustomOp& op, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    Error::Info info = e.info();
    info.message = op.name + ": " + (info.op.empty() ? "" : "in " + info.op + ": ") + info.message;
    info.op.clear();
    throw Error(std::move(info));
  }
}

}  // namespace

void register_custom_op(std::shared_ptr<const CustomOp> op) {
  KILN_CHECK(op, "register_custom_op: no op");
  const size_t sep = op->name.find("::");
  KILN_CHECK_HINT(sep != std::string::npos && sep > 0 && sep + 2 < op->name.size(), "e.g. \"mylib::vector_add\"",
                  "a custom op's name is namespace::name, got \"", op->name, "\"");
  KILN_CHECK(op->meta && op->kernel, "custom op ", op->name, " needs a meta function and a kernel");
  std::lock_guard<std::mutex> lock(g_mu);
  g_ops[op->name] = std::move(op);
}

std::shared_ptr<const CustomOp> find_custom_op(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_ops.find(name);
  return it == g_ops.end() ? nullptr : it->second;
}

TensorList call_custom_op(const std::string& name, const TensorList& inputs, const std::vector<double>& scalars) {
  std::vector<Arg> args{Arg(name), Arg(inputs), scalars.empty() ? Arg() : Arg(scalars)};
  return call(OpId::custom, std::move(args));
}

KILN_META(custom) {
  auto op = op_of(a);
  return named(*op, [&] { return op->meta(a.tensors(1), scalars_of(a)); });
}

KILN_KERNEL(custom) {
  auto op = op_of(a);
  TensorList out = named(*op, [&] { return op->kernel(a.tensors(1), scalars_of(a), specs); });
  std::vector<TensorSpec> got;
  for (const Tensor& t : out) {
    KILN_CHECK(t.defined(), "custom op ", op->name, "'s kernel returned an undefined tensor");
    got.push_back(t.spec());
  }
  bool same = got.size() == specs.size();
  for (size_t i = 0; same && i < got.size(); ++i)
    same = got[i].dtype == specs[i].dtype && got[i].sizes == specs[i].sizes;
  KILN_CHECK_HINT(same, "the meta function and the kernel must agree", "custom op ", op->name, "'s kernel returned ",
                  specs_str(got), ", its meta function said ", specs_str(specs));
  return out;
}

KILN_DERIVATIVE(custom) {
  auto op = op_of(g.args);
  KILN_CHECK_HINT(op->derivative, "register one (kiln.tile.op's register_autograd / CustomOp::derivative)",
                  "custom op ", op->name, " has no derivative: cannot backpropagate through it");
  TensorList grads = op->derivative(g);
  KILN_CHECK(grads.size() == g.inputs.size(), "custom op ", op->name, "'s derivative returned ", grads.size(),
             " gradient(s) for ", g.inputs.size(), " input(s)");
  return grads;
}

}  // namespace kiln::ops
