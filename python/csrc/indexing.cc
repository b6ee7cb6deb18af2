// x[i] and x[i] = v with PyTorch's rules: ints, slices, None and ... make views; integer and
// boolean tensors (or lists) index by value (one `index` / `index_put` op over all of them).
#include "bind.h"

namespace kiln::py {

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype);

namespace {

bool is_advanced(nb::handle h) {
  return as_tensor(h) || PyList_Check(h.ptr()) || (!PyTuple_Check(h.ptr()) && PyObject_HasAttrString(h.ptr(), "__array__"));
}

// How many dims of the indexed tensor an index item consumes.
int64_t dims_used(nb::handle h) {
  if (h.is_none() || h.ptr() == Py_Ellipsis || PyBool_Check(h.ptr())) return 0;
  if (const Tensor* t = as_tensor(h)) return t->dtype() == kBool ? t->dim() : 1;
  return 1;
}

struct Indexed {
  Tensor view;              // after ints, slices, None and ...
  std::vector<Tensor> adv;  // per dim of view: the index tensor or undefined
  bool any_adv = false;
};

Indexed apply_index(const Tensor& self, nb::handle index) {
  nb::tuple items = PyTuple_Check(index.ptr()) ? nb::borrow<nb::tuple>(index) : nb::make_tuple(index);
  int64_t used = 0;
  int ellipses = 0;
  for (nb::handle h : items) used += dims_used(h), ellipses += h.ptr() == Py_Ellipsis;
  KILN_CHECK(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  KILN_CHECK_HINT(used <= self.dim(), "index with at most as many items as the tensor has dims",
                  "too many indices for a tensor of dimension ", self.dim(), " (got ", used, ")");
  Indexed r{self, {}, false};
  int64_t d = 0;
  auto pad_adv = [&](int64_t upto) {
    while (int64_t(r.adv.size()) < upto) r.adv.emplace_back();
  };
  for (nb::handle h : items) {
    if (h.ptr() == Py_Ellipsis) {
      d += self.dim() - used;
      continue;
    }
    if (h.is_none() || PyBool_Check(h.ptr())) {
      r.view = kiln::unsqueeze(r.view, d);
      if (h.ptr() == Py_False) r.view = kiln::slice(r.view, d, 0, 0);
      d++;  // index entries exist only left of d, so nothing shifts
      continue;
    }
    if (PySlice_Check(h.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(h.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      KILN_CHECK_HINT(step > 0, "use flip() to reverse a dim", "slice step must be positive, got ", step);
      int64_t n = r.view.size(d);
      PySlice_AdjustIndices(n, &start, &stop, step);
      if (!(start == 0 && stop == n && step == 1)) r.view = kiln::slice(r.view, d, start, std::max(start, stop), step);
      d++;
      continue;
    }
    // Python ints first: is_advanced's __array__ lookup is a failed attribute search for them.
    if (PyLong_Check(h.ptr()) || (PyIndex_Check(h.ptr()) && !is_advanced(h))) {
      nb::object i = nb::steal(PyNumber_Index(h.ptr()));
      if (!i.is_valid()) throw nb::python_error();
      int overflow = 0;
      int64_t v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      int64_t n = r.view.size(d);
      // IndexError, as PyTorch: Python's sequence protocol (iteration via __getitem__) relies on it.
      if (overflow || v < -n || v >= n)
        throw nb::index_error(("index " + nb::cast<std::string>(nb::str(i)) + " is out of bounds for dimension " +
                               std::to_string(d) + " with size " + std::to_string(n))
                                  .c_str());
      r.view = kiln::select(r.view, d, v);
      continue;
    }
    if (is_advanced(h)) {
      // An empty list indexes by position (int64), as PyTorch: nothing picked.
      const bool empty_list = PyList_Check(h.ptr()) && PyList_Size(h.ptr()) == 0;
      Tensor t = as_tensor(h) ? *as_tensor(h) : tensor_from_data(h, empty_list ? std::optional<DType>(kInt64) : std::nullopt);
      KILN_CHECK_HINT(t.dtype() == kBool || is_integral(t.dtype()), "index with integer or boolean tensors",
                      "tensors used as indices must be integer or boolean, got ", name(t.dtype()));
      if (t.dtype() == kBool && t.dim() == 0) {  // x[mask_scalar]: like None, then keep or drop everything
        r.view = kiln::unsqueeze(r.view, d);
        pad_adv(d + 1);
        r.adv[d] = t.unsqueeze(0);
        r.any_adv = true;
        d++;
        continue;
      }
      pad_adv(d + 1);
      r.adv[d] = t;
      r.any_adv = true;
      d += t.dtype() == kBool ? t.dim() : 1;
      continue;
    }
    throw nb::type_error(("only integers, slices, None, ..., and integer or boolean tensors are valid indices, not " +
                          py_type_name(h))
                             .c_str());
  }
  return r;
}

}  // namespace

Tensor index_get(const Tensor& self, nb::handle index) {
  // x[i] with a plain int: straight to select (no tuple, no per-item classification).
  if (PyLong_CheckExact(index.ptr()) && self.dim() > 0) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    const int64_t n = self.size(0);
    if (!overflow && v >= -n && v < n) return kiln::select(self, 0, int64_t(v));
  }
  Indexed r = apply_index(self, index);
  if (!r.any_adv) return r.view;
  return kiln::index(r.view, r.adv);
}

void index_set(Tensor& self, nb::handle index, nb::handle value) {
  Indexed r = apply_index(self, index);
  Tensor v = as_tensor(value) ? *as_tensor(value) : is_py_number(value) ? ops::scalar_to_tensor(to_scalar(value))
                                                                         : tensor_from_data(value, self.dtype());
  if (!r.any_adv) {
    while (v.dim() > r.view.dim() && v.size(0) == 1) v = kiln::squeeze(v, std::vector<int64_t>{0});  // as PyTorch
    kiln::copy_(r.view, v);
    return;
  }
  if (v.dtype() != r.view.dtype()) v = v.to(r.view.dtype());
  // As an in-place method: index_put saved self, which the write below overwrites, so it must keep
  // its own copy (its gradient for self needs only the indices, but the saved-version check is generic).
  ops::assign_inplace(r.view, kiln::index_put(r.view, r.adv, v, false), "__setitem__");
}

}  // namespace kiln::py
