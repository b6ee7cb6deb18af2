// Grad mode, kiln.autograd.backward/grad, autocast and the random generator.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bind.h"

namespace kiln::py {
namespace {

TensorList tensor_seq(nb::handle h, const char* what, bool allow_none = false) {
  TensorList out;
  if (const Tensor* t = as_tensor(h)) return {*t};
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr()))
    throw nb::type_error((std::string(what) + " must be a Tensor or a sequence of Tensors").c_str());
  for (nb::handle e : h) {
    if (allow_none && e.is_none()) {
      out.emplace_back();
    } else if (const Tensor* t = as_tensor(e)) {
      out.push_back(*t);
    } else {
      throw nb::type_error((std::string(what) + " must contain only Tensors").c_str());
    }
  }
  return out;
}

// Autocast regions nest; Python enters and exits them through this stack.
thread_local std::vector<std::unique_ptr<AutocastGuard>> autocast_stack;

}  // namespace

void bind_autograd(nb::module_& m) {
  m.def("is_grad_enabled", &is_grad_enabled);
  m.def("set_grad_enabled", &set_grad_enabled, nb::arg("mode"));
  m.def("_backward", [](nb::handle tensors, nb::handle grads, bool retain_graph, bool create_graph) {
    TensorList g = grads.is_none() ? TensorList{} : tensor_seq(grads, "grad_tensors", true);
    backward(tensor_seq(tensors, "tensors"), g, retain_graph, create_graph);
  }, nb::arg("tensors"), nb::arg("grad_tensors").none(), nb::arg("retain_graph"), nb::arg("create_graph"));
  m.def("_grad", [](nb::handle outputs, nb::handle inputs, nb::handle grads, bool retain_graph, bool create_graph,
                    bool allow_unused) {
    TensorList g = grads.is_none() ? TensorList{} : tensor_seq(grads, "grad_outputs", true);
    TensorList r = grad(tensor_seq(outputs, "outputs"), tensor_seq(inputs, "inputs"), g, retain_graph, create_graph,
                        allow_unused);
    nb::list out;
    for (auto& t : r) out.append(t.defined() ? nb::cast(t) : nb::none());
    return nb::tuple(out);
  }, nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs").none(), nb::arg("retain_graph"),
     nb::arg("create_graph"), nb::arg("allow_unused"));
  m.def("_autocast_push", [](nb::handle dtype, bool enabled) {
    auto d = as_dtype(dtype);
    if (!d) throw nb::type_error("autocast: dtype must be a kiln.dtype");
    autocast_stack.push_back(std::make_unique<AutocastGuard>(*d, enabled));
  }, nb::arg("dtype"), nb::arg("enabled"));
  m.def("_autocast_pop", [] {
    if (!autocast_stack.empty()) autocast_stack.pop_back();
  });
  m.def("get_autocast_dtype", []() -> nb::object {
    auto d = autocast_dtype();
    return d ? dtype_object(*d) : nb::none();
  });
  // As torch.manual_seed: any int in [-2**63, 2**64); a negative seed is taken modulo 2**64.
  m.def("manual_seed", [](nb::handle seed) {
    if (PyBool_Check(seed.ptr()) || !PyIndex_Check(seed.ptr())) arg_type_error("manual_seed", "seed", "an int", seed);
    nb::object i = nb::steal(PyNumber_Index(seed.ptr()));
    if (!i.is_valid()) throw nb::python_error();
    unsigned long long v = PyLong_AsUnsignedLongLong(i.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      int overflow = 0;
      long long s = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      if (overflow)
        throw nb::value_error(("manual_seed(): argument 'seed' must be an int in [-2**63, 2**64 - 1], got " +
                               nb::cast<std::string>(nb::str(i))).c_str());
      v = static_cast<unsigned long long>(s);
    }
    manual_seed(uint64_t(v));
  }, nb::arg("seed"), "Seeds kiln's Philox generator (rand, randn, randint, randperm, dropout).");
  m.def("get_rng_state", [] {
    GeneratorState s = generator_state();
    return nb::make_tuple(s.seed, s.offset);
  });
  m.def("set_rng_state", [](uint64_t seed, uint64_t offset) { set_generator_state({seed, offset}); });
  m.def("result_type", [](nb::handle a, nb::handle b) {
    return dtype_object(kiln::result_type({to_tensor_or_number(a, "result_type(): a"), to_tensor_or_number(b, "result_type(): b")}));
  });
  m.def("promote_types", [](nb::handle a, nb::handle b) {
    auto x = as_dtype(a), y = as_dtype(b);
    if (!x || !y) throw nb::type_error("promote_types(): expected two kiln.dtype");
    return dtype_object(promote_types(*x, *y));
  });
  m.def("can_cast", [](nb::handle a, nb::handle b) {
    auto x = as_dtype(a), y = as_dtype(b);
    if (!x || !y) throw nb::type_error("can_cast(): expected two kiln.dtype");
    return can_cast(*x, *y);
  });
}

// kiln.cuda's answers where a GPU is present (python/kiln/cuda/__init__.py keeps the CPU
// build's answers where none is): kiln/cuda.h.
void bind_cuda(nb::module_& m) {
  nb::module_ c = m.def_submodule("_cuda", "kiln/cuda.h: the GPUs kiln sees");
  c.def("is_available", &cuda::is_available);
  c.def("unavailable_reason", [] { return cuda::unavailable_reason(); });
  c.def("device_count", &cuda::device_count);
  c.def("current_device", &cuda::current_device);
  c.def("set_device", &cuda::set_device, nb::arg("device"));
  c.def("get_device_name", &cuda::get_device_name, nb::arg("device") = -1);
  c.def("get_device_capability", &cuda::get_device_capability, nb::arg("device") = -1);
  c.def("synchronize", &cuda::synchronize, nb::arg("device") = -1, nb::call_guard<nb::gil_scoped_release>());
  c.def("memory_allocated", &cuda::memory_allocated, nb::arg("device") = -1);
  c.def("max_memory_allocated", &cuda::max_memory_allocated, nb::arg("device") = -1);
  c.def("memory_reserved", &cuda::memory_reserved, nb::arg("device") = -1);
  c.def("reset_peak_memory_stats", &cuda::reset_peak_memory_stats, nb::arg("device") = -1);
  c.def("empty_cache", &cuda::empty_cache, nb::arg("device") = -1);
}

void bind_runtime(nb::module_& m) {
  bind_cuda(m);
  m.def("save", [](nb::dict tensors, const std::string& path, nb::handle metadata) {
    TensorMap map;
    for (auto [k, v] : tensors) {
      const Tensor* t = as_tensor(v);
      if (!PyUnicode_Check(k.ptr()) || !t) throw nb::type_error("save(): expected a dict of str -> Tensor");
      map[nb::cast<std::string>(k)] = *t;
    }
    MetadataMap meta;
    if (!metadata.is_none()) {
      if (!PyDict_Check(metadata.ptr())) arg_type_error("save", "metadata", "a dict of str -> str, or None", metadata);
      for (auto [k, v] : nb::borrow<nb::dict>(metadata)) {
        if (!PyUnicode_Check(k.ptr()) || !PyUnicode_Check(v.ptr()))
          throw nb::type_error(("save(): argument 'metadata' must be a dict of str -> str, but it maps " + py_given(k) +
                                " to " + py_given(v)).c_str());
        meta[nb::cast<std::string>(k)] = nb::cast<std::string>(v);
      }
    }
    save_safetensors(map, path, meta);
  }, nb::arg("tensors"), nb::arg("path"), nb::arg("metadata").none() = nb::none(),
     "Writes a dict of tensors to a safetensors file (atomically).");
  m.def("load", [](const std::string& path, bool with_metadata, bool mmap) -> nb::object {
    MetadataMap meta;
    TensorMap map = load_safetensors(path, &meta, mmap);
    nb::dict d;
    for (auto& [k, v] : map) d[k.c_str()] = nb::cast(v);
    if (!with_metadata) return d;
    nb::dict md;
    for (auto& [k, v] : meta) md[k.c_str()] = v;
    return nb::make_tuple(d, md);
  }, nb::arg("path"), nb::arg("with_metadata") = false, nb::kw_only(), nb::arg("mmap") = false,
     "Reads every tensor of a safetensors file into a dict (copied; mmap=True maps the file instead).");
}

}  // namespace kiln::py
