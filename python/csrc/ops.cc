// Every op of ops.def as a kiln function (kiln.add) and, where marked METHOD, a Tensor method
// (x.add, x.add_), with arguments parsed against the op's schema at call time. Ops sharing a
// public name (max / max.dim) form one overloaded function: the first schema that binds wins.
#include <deque>
#include <map>

#include "bind.h"

namespace kiln::py {
namespace {

using ops::ArgType;
using ops::OpId;

bool is_list_type(ArgType t) {
  return t == ArgType::IntList || t == ArgType::OptIntList || t == ArgType::SymIntList || t == ArgType::OptSymIntList;
}

// Thrown (internally) when arguments do not fit a schema, so the next overload can be tried.
struct NoMatch {
  std::string why;
};

// Binds Python arguments to one schema; self (if given) is the argument named "self".
std::vector<ops::Arg> bind_args(OpId op, nb::handle self, nb::args args, nb::kwargs kwargs) {
  const ops::Schema& s = ops::op_schema(op);
  const std::string& fn = s.name;  // a reference: no string copy per call
  size_t n = s.args.size();
  std::vector<ops::Arg> out(n);
  // Per-call scratch inline for the usual short schemas (this runs on every op call).
  constexpr size_t kInline = 16;
  bool filled_inline[kInline] = {};
  size_t pos_inline[kInline];
  std::vector<bool> filled_heap;
  std::vector<size_t> pos_heap;
  const bool small = n <= kInline;
  if (!small) filled_heap.assign(n, false), pos_heap.reserve(n);
  auto filled = [&](size_t i) -> bool { return small ? filled_inline[i] : filled_heap[i]; };
  auto fill = [&](size_t i) { small ? void(filled_inline[i] = true) : void(filled_heap[i] = true); };
  size_t npos = 0;
  auto pos_at = [&](size_t p) { return small ? pos_inline[p] : pos_heap[p]; };
  // Positional parameters, in order, excluding self when it is the receiver.
  for (size_t i = 0; i < n; i++) {
    if (self.is_valid() && s.args[i].name == "self") {
      if (const Tensor* t = as_tensor(self)) out[i] = *t;
      fill(i);
      continue;
    }
    if (s.args[i].kwarg_only) continue;
    if (small) pos_inline[npos] = i;
    else pos_heap.push_back(i);
    npos++;
  }
  size_t given = args.size();
  size_t ai = 0;
  for (size_t p = 0; p < npos && ai < given; p++) {
    const ops::SchemaArg& sa = s.args[pos_at(p)];
    // Sizes may be passed as separate ints: x.view(2, 3), kiln.zeros(2, 3).
    if (p == 0 && is_list_type(sa.type) && given > npos) {
      size_t take = given - npos + 1;
      nb::list l;
      for (size_t k = 0; k < take; k++) l.append(args[ai + k]);
      out[pos_at(p)] = to_arg(sa, l, fn);
      ai += take;
    } else {
      out[pos_at(p)] = to_arg(sa, args[ai++], fn);
    }
    fill(pos_at(p));
  }
  if (ai < given)
    throw NoMatch{fn + "() takes " + std::to_string(npos) + " positional argument(s) but " +
                  std::to_string(given) + " were given"};
  for (auto [key, value] : kwargs) {
    std::string k = nb::cast<std::string>(key);
    size_t i = 0;
    while (i < n && s.args[i].name != k) i++;
    if (i == n || (self.is_valid() && k == "self")) throw NoMatch{fn + "() got an unexpected keyword argument '" + k + "'"};
    if (filled(i)) throw NoMatch{fn + "() got multiple values for argument '" + k + "'"};
    out[i] = to_arg(s.args[i], value, fn);
    fill(i);
  }
  for (size_t i = 0; i < n; i++) {
    if (filled(i)) continue;
    if (!s.args[i].has_default) throw NoMatch{fn + "() missing required argument '" + s.args[i].name + "'"};
    out[i] = s.args[i].default_value;
  }
  return out;
}

std::string signature_text(OpId op) { return ops::op_info(op).schema; }

// Named-tuple types for ops with several named outputs (values, indices), made on first use.
nb::object result_type(OpId op) {
  static std::map<OpId, nb::object> types;
  auto it = types.find(op);
  if (it != types.end()) return it->second;
  const ops::Schema& s = ops::op_schema(op);
  nb::list names;
  for (auto& n : s.output_names) names.append(nb::str(n.c_str()));
  nb::object t = nb::module_::import_("collections").attr("namedtuple")(nb::str((s.name + "_result").c_str()), names);
  types[op] = t;
  return t;
}

}  // namespace

nb::object wrap_outputs(OpId op, std::vector<Tensor>&& out) {
  const ops::Schema& s = ops::op_schema(op);
  if (s.num_outputs == 1) return nb::cast(std::move(out.at(0)));
  nb::list items;
  for (auto& t : out) items.append(nb::cast(std::move(t)));
  if (s.num_outputs == -1) return nb::tuple(items);
  bool named = !s.output_names.empty() && !s.output_names[0].empty();
  if (!named) return nb::tuple(items);
  return result_type(op)(*items);
}

namespace {
// Binds the arguments to the first overload that accepts them and runs it.
std::pair<OpId, std::vector<Tensor>> run_op(const std::vector<OpId>& overloads, nb::handle self, nb::args args,
                                            nb::kwargs kwargs) {
  std::string why;
  for (OpId op : overloads) {
    std::vector<ops::Arg> a;
    try {
      a = bind_args(op, self, args, kwargs);
    } catch (const NoMatch& m) {
      why += "\n  " + signature_text(op) + ": " + m.why;
      continue;
    } catch (const nb::builtin_exception& e) {
      if (overloads.size() == 1 || e.type() != nb::exception_type::type_error) throw;
      why += "\n  " + signature_text(op) + ": " + e.what();
      continue;
    }
    return {op, ops::call(op, std::move(a))};
  }
  if (overloads.size() == 1) throw nb::type_error(why.substr(why.find(": ") + 2).c_str());
  throw nb::type_error(("no signature of " + ops::op_schema(overloads[0]).name +
                        "() matches these arguments; tried:" + why).c_str());
}
}  // namespace

nb::object call_op(const std::vector<OpId>& overloads, nb::handle self, nb::args args, nb::kwargs kwargs) {
  auto [op, out] = run_op(overloads, self, args, kwargs);
  return wrap_outputs(op, std::move(out));
}

void bind_ops(nb::module_& m, nb::handle tensor_cls) {
  // Group ops by public name, in ops.def order (max before max.dim).
  std::map<std::string, std::vector<OpId>> groups;
  std::vector<std::string> order;
  for (int i = 0; i < ops::kNumOps; i++) {
    const std::string& name = ops::op_schema(OpId(i)).name;
    if (!groups.count(name)) order.push_back(name);
    groups[name].push_back(OpId(i));
  }
  // PyTorch overloads kiln spells as separate ops.
  groups["max"].push_back(OpId::maximum);
  groups["min"].push_back(OpId::minimum);

  static std::deque<std::string> names;  // nanobind keeps pointers to function names
  nb::module_ fns = m.def_submodule("_ops", "every kiln op as a function");
  for (const std::string& name : order) {
    std::vector<OpId> ids = groups[name];
    std::string doc;
    for (OpId id : ids) doc += std::string(ops::op_info(id).schema) + "\n";
    names.push_back(name);
    const char* cname = names.back().c_str();
    fns.attr(cname) = nb::cpp_function(
        [ids](nb::args a, nb::kwargs k) { return call_op(ids, nb::handle(), a, k); }, nb::name(cname),
        nb::scope(fns));
    bool method = false, inplace = false;
    for (OpId id : ids) {
      method |= (ops::op_info(id).flags & ops::METHOD) != 0;
      inplace |= (ops::op_info(id).flags & ops::INPLACE) != 0;
    }
    if (method && !nb::hasattr(tensor_cls, cname)) {  // a property (x.mT) wins over the op
      nb::setattr(tensor_cls, cname,
                  nb::cpp_function([ids](nb::handle self, nb::args a, nb::kwargs k) { return call_op(ids, self, a, k); },
                                   nb::is_method(), nb::name(cname), nb::scope(tensor_cls)));
    }
    if (inplace) {
      names.push_back(name + "_");
      const char* iname = names.back().c_str();
      nb::setattr(tensor_cls, iname,
                  nb::cpp_function(
                      [ids, iname](nb::handle self, nb::args a, nb::kwargs k) {
                        // The result never becomes a Python object: x.add_(y) is a hot path.
                        auto [op, out] = run_op(ids, self, a, k);
                        KILN_CHECK(ops::op_schema(op).num_outputs == 1, "internal: ", iname, " of a multi-output op");
                        Tensor& t = nb::cast<Tensor&>(self);
                        ops::assign_inplace(t, out.at(0), iname);
                        return nb::borrow(self);
                      },
                      nb::is_method(), nb::name(iname), nb::scope(tensor_cls)));
    }
  }

  m.def("_op_registry", [] {
    nb::list out;
    for (int i = 0; i < ops::kNumOps; i++) {
      const ops::OpInfo& info = ops::op_info(OpId(i));
      nb::dict d;
      d["id"] = info.name;
      d["name"] = ops::op_schema(OpId(i)).name;
      d["schema"] = info.schema;
      d["kind"] = info.kind == ops::OpKind::PRIM ? "prim" : info.kind == ops::OpKind::VIEW ? "view" : "composite";
      d["family"] = ops::family_name(info.family);
      if (info.dtype_rule == ops::DTypeRule::NONE) d["dtype_rule"] = nb::none();
      else d["dtype_rule"] = ops::dtype_rule_name(info.dtype_rule);
      nb::list flags;
      const char* flag_names[] = {"diff", "method", "inplace", "scalar", "random", "datadep", "mutates"};
      for (int f = 0; f < 7; f++)
        if (info.flags & (1u << f)) flags.append(flag_names[f]);
      d["flags"] = flags;
      d["num_outputs"] = ops::op_schema(OpId(i)).num_outputs;
      out.append(d);
    }
    return out;
  }, "Every op in kiln's registry (ops.def): id, public name, schema, kind, family, dtype_rule (None: no rule), "
     "flags, num_outputs.");
}

}  // namespace kiln::py
