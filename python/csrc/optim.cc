// The C++ optimizers behind kiln.optim (the Python classes keep torch's param_groups dicts and
// push their options here before each step).
#include <nanobind/stl/string.h>

#include <kiln/optim.h>

#include <memory>

#include "bind.h"

namespace kiln::py {
namespace {

std::vector<Tensor> params_of(nb::handle seq) {
  std::vector<Tensor> out;
  for (nb::handle e : seq) {
    const Tensor* t = as_tensor(e);
    if (!t) throw nb::type_error("optimizer params must be Tensors");
    out.push_back(*t);
  }
  return out;
}

// An option's value: a number (or a one-element tensor, as torch allows for lr).
double option_number(nb::handle x, const char* name) {
  if (PyBool_Check(x.ptr()) || !(is_py_number(x) || PyIndex_Check(x.ptr()) || as_tensor(x) ||
                                 PyObject_HasAttrString(x.ptr(), "__float__")))
    throw nb::type_error(("optimizer option '" + std::string(name) + "' must be a number, not " + py_given(x)).c_str());
  return to_scalar(x).to_double();
}

bool option_bool(nb::handle x, const char* name) {
  if (!PyBool_Check(x.ptr()))
    throw nb::type_error(("optimizer option '" + std::string(name) + "' must be a bool, not " + py_given(x)).c_str());
  return x.ptr() == Py_True;
}

// Copies the entries of a Python dict into an options struct (fields it does not name stay).
template <class Options>
void set_options(Options& o, nb::handle d) {
  o.visit([&](const char* n, auto& v) {
    if (!PyMapping_HasKeyString(d.ptr(), n)) return;
    nb::object x = d[n];
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, double>) {
      v = option_number(x, n);
    } else if constexpr (std::is_same_v<V, bool>) {
      v = option_bool(x, n);
    } else {
      if (!PySequence_Check(x.ptr()) || PySequence_Size(x.ptr()) != 2)
        throw nb::type_error(("optimizer option '" + std::string(n) + "' must be a pair of numbers, not " + py_given(x)).c_str());
      v = {option_number(x[0], n), option_number(x[1], n)};
    }
  });
  // Not a visited option (it stays out of the C++ state_dict), but a param_groups key in Python.
  if constexpr (requires { o.capturable; })
    if (PyMapping_HasKeyString(d.ptr(), "capturable")) o.capturable = option_bool(d["capturable"], "capturable");
}

struct PyOptimizer {
  std::unique_ptr<optim::Optimizer> opt;
  std::function<void(size_t, nb::handle)> configure;  // group index, options dict
  std::function<void(nb::handle)> add_group;           // a group dict with "params"
};

template <class Opt, class Options>
PyOptimizer make(nb::list groups) {
  PyOptimizer p;
  for (size_t g = 0; g < groups.size(); g++) {
    nb::handle group = groups[g];
    Options o;
    set_options(o, group);
    std::vector<Tensor> ps = params_of(group["params"]);
    if (g == 0) p.opt = std::make_unique<Opt>(ps, o);
    else static_cast<Opt*>(p.opt.get())->add_param_group(ps, o);
  }
  Opt* raw = static_cast<Opt*>(p.opt.get());
  p.configure = [raw](size_t g, nb::handle d) {
    Options o = raw->options(g);
    set_options(o, d);
    o.check();
    raw->options(g) = o;
  };
  p.add_group = [raw](nb::handle group) {
    Options o;
    set_options(o, group);
    o.check();
    raw->add_param_group(params_of(group["params"]), o);
  };
  return p;
}

}  // namespace

void bind_optim(nb::module_& m) {
  nb::class_<PyOptimizer>(m, "_Optimizer")
      .def("__init__", [](PyOptimizer* self, const std::string& kind, nb::list groups) {
        if (groups.size() == 0) throw nb::value_error("optimizer got an empty parameter list");
        if (kind == "sgd") new (self) PyOptimizer(make<optim::SGD, optim::SGDOptions>(groups));
        else if (kind == "adam") new (self) PyOptimizer(make<optim::Adam, optim::AdamOptions>(groups));
        else if (kind == "adamw") new (self) PyOptimizer(make<optim::AdamW, optim::AdamWOptions>(groups));
        else if (kind == "adadelta") new (self) PyOptimizer(make<optim::Adadelta, optim::AdadeltaOptions>(groups));
        else if (kind == "adagrad") new (self) PyOptimizer(make<optim::Adagrad, optim::AdagradOptions>(groups));
        else if (kind == "rmsprop") new (self) PyOptimizer(make<optim::RMSprop, optim::RMSpropOptions>(groups));
        else if (kind == "nadam") new (self) PyOptimizer(make<optim::NAdam, optim::NAdamOptions>(groups));
        else if (kind == "radam") new (self) PyOptimizer(make<optim::RAdam, optim::RAdamOptions>(groups));
        else throw nb::value_error(("unknown optimizer kind " + kind).c_str());
      })
      .def("configure", [](PyOptimizer& p, size_t group, nb::handle options) { p.configure(group, options); })
      .def("add_param_group", [](PyOptimizer& p, nb::handle group) { p.add_group(group); })
      .def("step", [](PyOptimizer& p) { p.opt->step(); })
      .def("zero_grad", [](PyOptimizer& p, bool set_to_none) { p.opt->zero_grad(set_to_none); },
           nb::arg("set_to_none") = true)
      .def("state_dict", [](PyOptimizer& p) {
        nb::dict d;
        for (auto& [k, v] : p.opt->state_dict()) d[k.c_str()] = nb::cast(v);
        return d;
      })
      .def("load_state_dict", [](PyOptimizer& p, nb::dict d) {
        TensorMap map;
        for (auto [k, v] : d) {
          const Tensor* t = as_tensor(v);
          if (!t) throw nb::type_error("load_state_dict(): values must be Tensors");
          map[nb::cast<std::string>(k)] = *t;
        }
        p.opt->load_state_dict(map);
      })
      .def("state", [](PyOptimizer& p, size_t index) {
        nb::dict d;
        for (auto& [k, v] : p.opt->state(index)) d[k.c_str()] = nb::cast(v);
        return d;
      });
}

}  // namespace kiln::py
