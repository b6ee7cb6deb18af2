// kiln._C._tile: the tile IR's builder, text form and CPU backend for kiln.tile (python/kiln/tile).
// kiln.tile's @jit traces a Python function by calling it with Value proxies; every builder call
// takes its origin from the Python caller (the line of the user's kernel), so a shape error is
// reported at that line.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "core/tensor_impl.h"
#include "ops/custom.h"
#include "ops/fake_mode.h"
#include "tile/autotune.h"
#include "tile/builder.h"
#include "tile/cpu/kernel.h"
#include "tile/op.h"
#include "tile/passes/passes.h"
#include "tile/prims.h"

namespace kiln::py {
namespace {

using tile::Builder;
using tile::Operand;
using tile::Val;

// The Python side of a builder: the builder, and whether it has been finished.
struct PyBuilder {
  std::unique_ptr<Builder> b;
  explicit PyBuilder(const std::string& name) : b(std::make_unique<Builder>(name)) {}
  Builder& get() {
    if (!b) throw nb::value_error("kiln.tile: this kernel's builder is finished");
    return *b;
  }
};

// A traced value: the handle and (to keep the builder alive) its Python builder.
struct PyVal {
  Val v;
  nb::object builder;
};

// Sets the builder's origin to the Python caller's line for one call.
struct PyOrigin {
  Builder& b;
  explicit PyOrigin(Builder& builder) : b(builder) {
    auto [file, line] = python_caller();
    b.set_origin(tile::Origin{file, line, {}});
  }
  ~PyOrigin() { b.set_origin(std::nullopt); }
};

Builder& builder_of(const PyVal& v) { return nb::cast<PyBuilder&>(v.builder).get(); }

// A Python operand: a traced value or a number.
Operand operand(nb::handle h, const char* what) {
  if (nb::isinstance<PyVal>(h)) return Operand(nb::cast<const PyVal&>(h).v);
  if (PyBool_Check(h.ptr())) return Operand(h.ptr() == Py_True);
  if (is_py_number(h) || PyIndex_Check(h.ptr())) return Operand(to_scalar(h));
  throw nb::type_error(("kiln.tile: " + std::string(what) + " must be a traced value or a number, not " +
                        py_type_name(h)).c_str());
}

std::optional<Operand> opt_operand(nb::handle h, const char* what) {
  if (h.is_none()) return std::nullopt;
  return operand(h, what);
}

DType dtype_arg(nb::handle h) {
  auto d = as_dtype(h);
  if (!d) throw nb::type_error(("kiln.tile: expected a kiln dtype, not " + py_type_name(h)).c_str());
  return *d;
}

std::vector<int64_t> int_vector(nb::handle seq) {
  std::vector<int64_t> v;
  if (PyLong_Check(seq.ptr())) return {nb::cast<int64_t>(seq)};
  for (nb::handle h : seq) v.push_back(nb::cast<int64_t>(h));
  return v;
}

nb::object wrap(const Val& v, nb::object builder) {
  if (!v.defined()) return nb::none();
  return nb::cast(PyVal{v, std::move(builder)});
}

nb::list wrap_all(const std::vector<Val>& vs, const nb::object& builder) {
  nb::list l;
  for (const Val& v : vs) l.append(wrap(v, builder));
  return l;
}

std::vector<Val> vals(nb::handle seq, Builder& b, const std::vector<Val>* like, const char* what) {
  std::vector<Val> out;
  size_t i = 0;
  for (nb::handle h : seq) {
    if (nb::isinstance<PyVal>(h)) out.push_back(nb::cast<const PyVal&>(h).v);
    else if (like && i < like->size()) out.push_back(b.cast(operand(h, what), (*like)[i].dtype()));
    else out.push_back(b.constant(to_scalar(h)));
    ++i;
  }
  return out;
}

// A binary operator (reflected: the value is the right operand).
template <ops::OpId op, bool reflected = false>
nb::object binary(const PyVal& self, nb::handle other) {
  if (!nb::isinstance<PyVal>(other) && !is_py_number(other)) return nb::borrow(Py_NotImplemented);
  Builder& b = builder_of(self);
  PyOrigin o(b);
  const Operand x(self.v), y = operand(other, "an operand");
  return wrap(reflected ? b.binary(op, y, x, SourceLoc::current()) : b.binary(op, x, y, SourceLoc::current()), self.builder);
}

template <ops::OpId op>
nb::object unary(const PyVal& self) {
  Builder& b = builder_of(self);
  PyOrigin o(b);
  return wrap(b.unary(op, Operand(self.v), SourceLoc::current()), self.builder);
}

// x[None, :], x[:, None], x[..., None]: only new axes and whole dims.
nb::object getitem(const PyVal& self, nb::handle index) {
  Builder& b = builder_of(self);
  PyOrigin o(b);
  std::vector<nb::handle> items;
  if (PyTuple_Check(index.ptr())) for (nb::handle h : index) items.push_back(h);
  else items.push_back(index);
  const int64_t rank = self.v.type().rank();
  int64_t kept = 0;
  for (nb::handle h : items) kept += !h.is_none() && h.ptr() != Py_Ellipsis;
  Val v = self.v;
  int64_t axis = 0;
  for (nb::handle h : items) {
    if (h.is_none()) {
      v = b.expand_dims(v, axis++);
    } else if (h.ptr() == Py_Ellipsis) {
      axis += rank - kept;
    } else if (PySlice_Check(h.ptr()) && nb::getattr(h, "start").is_none() && nb::getattr(h, "stop").is_none() &&
               nb::getattr(h, "step").is_none()) {
      ++axis;
    } else {
      throw nb::type_error("kiln.tile: a value is indexed only with None (a new axis), : and ...");
    }
  }
  return wrap(v, self.builder);
}

// The Python objects of kiln.tile.op's ops (never deleted: the registry's functions point at them).
std::vector<nb::object*>& python_ops() {
  static std::vector<nb::object*> v;
  return v;
}

tile::cpu::Grid grid_of(nb::handle g) {
  std::vector<int64_t> d = int_vector(g);
  if (d.empty() || d.size() > 3) throw nb::value_error("kiln.tile: a grid has 1 to 3 dims");
  d.resize(3, 1);
  return tile::cpu::Grid(d[0], d[1], d[2]);
}

}  // namespace

void bind_tile(nb::module_& m) {
  nb::module_ t = m.def_submodule("_tile", "kiln's tile IR: builder, text form, CPU backend (docs/tile.md)");

  nb::class_<PyVal>(t, "Value", "A traced value of a kiln.tile kernel: a scalar or a block, of data or pointers.")
      .def_prop_ro("dtype", [](const PyVal& v) { return dtype_object(v.v.dtype()); })
      .def_prop_ro("shape", [](const PyVal& v) {
        nb::list l;
        for (int64_t d : v.v.shape()) l.append(d);
        return nb::tuple(l);
      })
      .def_prop_ro("is_pointer", [](const PyVal& v) { return v.v.type().ptr; })
      .def_prop_ro("type", [](const PyVal& v) { return v.v.type().str(); })
      .def("__repr__", [](const PyVal& v) { return "<kiln.tile value " + v.v.type().str() + ">"; })
      .def("__bool__", [](const PyVal&) -> bool {
        throw nb::type_error(
            "kiln.tile: a traced value has no Python truth value (the kernel is traced once, not run): "
            "use kiln.tile.where for a choice per element, kiln.tile.cond for a branch, & | ~ for masks");
      })
      .def("__index__", [](const PyVal&) -> int64_t {
        throw nb::type_error("kiln.tile: a traced value is not a Python int (use constexpr parameters for sizes)");
      })
      .def("__add__", binary<ops::OpId::add>).def("__radd__", binary<ops::OpId::add, true>)
      .def("__sub__", binary<ops::OpId::sub>).def("__rsub__", binary<ops::OpId::sub, true>)
      .def("__mul__", binary<ops::OpId::mul>).def("__rmul__", binary<ops::OpId::mul, true>)
      .def("__truediv__", binary<ops::OpId::div>).def("__rtruediv__", binary<ops::OpId::div, true>)
      .def("__floordiv__", binary<ops::OpId::floor_divide>).def("__rfloordiv__", binary<ops::OpId::floor_divide, true>)
      .def("__mod__", binary<ops::OpId::remainder>).def("__rmod__", binary<ops::OpId::remainder, true>)
      .def("__pow__", binary<ops::OpId::pow>).def("__rpow__", binary<ops::OpId::pow, true>)
      .def("__lt__", binary<ops::OpId::lt>).def("__le__", binary<ops::OpId::le>)
      .def("__gt__", binary<ops::OpId::gt>).def("__ge__", binary<ops::OpId::ge>)
      .def("__eq__", binary<ops::OpId::eq>).def("__ne__", binary<ops::OpId::ne>)
      .def("__and__", binary<ops::OpId::bitwise_and>).def("__rand__", binary<ops::OpId::bitwise_and, true>)
      .def("__or__", binary<ops::OpId::bitwise_or>).def("__ror__", binary<ops::OpId::bitwise_or, true>)
      .def("__xor__", binary<ops::OpId::bitwise_xor>).def("__rxor__", binary<ops::OpId::bitwise_xor, true>)
      .def("__lshift__", binary<ops::OpId::shift_left>).def("__rlshift__", binary<ops::OpId::shift_left, true>)
      .def("__rshift__", binary<ops::OpId::shift_right_arithmetic>)
      .def("__rrshift__", binary<ops::OpId::shift_right_arithmetic, true>)
      .def("__neg__", unary<ops::OpId::neg>)
      .def("__invert__", unary<ops::OpId::bitwise_not>)
      .def("__abs__", unary<ops::OpId::abs>)
      .def("__getitem__", getitem)
      .def("__hash__", [](const PyVal& v) { return reinterpret_cast<intptr_t>(v.v.value()); });

  nb::class_<tile::Program>(t, "Program", "A tile kernel in the IR (print it for the text form).")
      .def("__str__", [](const tile::Program& p) { return tile::print(p); })
      .def_prop_ro("name", [](const tile::Program& p) { return p.name; });

  nb::class_<PyBuilder>(t, "Builder")
      .def(nb::init<const std::string&>())
      .def("arg_ptr", [](nb::object self, const std::string& n, nb::handle d) {
        return wrap(nb::cast<PyBuilder&>(self).get().arg_ptr(n, dtype_arg(d)), self);
      })
      .def("arg_int", [](nb::object self, const std::string& n, nb::handle d) {
        return wrap(nb::cast<PyBuilder&>(self).get().arg_int(n, dtype_arg(d)), self);
      })
      .def("arg_float", [](nb::object self, const std::string& n, nb::handle d) {
        return wrap(nb::cast<PyBuilder&>(self).get().arg_float(n, dtype_arg(d)), self);
      })
      .def("constexpr", [](PyBuilder& self, const std::string& n, nb::handle v) {
        self.get().constexpr_value(n, to_scalar(v));
      })
      .def("set_meta", [](PyBuilder& self, int num_warps, int num_stages) {
        self.get().set_num_warps(num_warps);
        self.get().set_num_stages(num_stages);
      })
      .def("program_id", [](nb::object self, int axis) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.program_id(axis), self);
      })
      .def("num_programs", [](nb::object self, int axis) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.num_programs(axis), self);
      })
      .def("arange", [](nb::object self, int64_t start, int64_t end) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.arange(start, end), self);
      })
      .def("full", [](nb::object self, nb::handle shape, nb::handle value, nb::handle d) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const std::vector<int64_t> s = int_vector(shape);
        if (s.empty()) return wrap(b.cast(operand(value, "the value"), dtype_arg(d)), self);
        return wrap(b.full(s, to_scalar(value), dtype_arg(d)), self);
      })
      .def("load", [](nb::object self, nb::handle ptr, nb::handle mask, nb::handle other) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const Operand p = operand(ptr, "the pointer");
        auto m = opt_operand(mask, "the mask"), v = opt_operand(other, "other");
        if (v && !m) throw nb::value_error("kiln.tile.load: other is only read where the mask is off: pass a mask too");
        return wrap(v ? b.load(p, *m, *v) : m ? b.load(p, *m) : b.load(p), self);
      }, nb::arg("ptr"), nb::arg("mask").none(), nb::arg("other").none())
      .def("store", [](nb::object self, nb::handle ptr, nb::handle value, nb::handle mask) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const Operand p = operand(ptr, "the pointer"), v = operand(value, "the value");
        if (auto m = opt_operand(mask, "the mask")) b.store(p, v, *m);
        else b.store(p, v);
      }, nb::arg("ptr"), nb::arg("value"), nb::arg("mask").none())
      .def("atomic_add", [](nb::object self, nb::handle ptr, nb::handle value, nb::handle mask) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const Operand p = operand(ptr, "the pointer"), v = operand(value, "the value");
        auto m = opt_operand(mask, "the mask");
        return wrap(m ? b.atomic_add(p, v, *m) : b.atomic_add(p, v), self);
      }, nb::arg("ptr"), nb::arg("value"), nb::arg("mask").none())
      .def("cast", [](nb::object self, nb::handle x, nb::handle d) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.cast(operand(x, "the value"), dtype_arg(d)), self);
      })
      .def("call", [](nb::object self, const std::string& name, nb::args args, std::optional<std::string> rounding) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const ops::OpInfo* info = ops::find_op(name);
        if (!info || !tile::is_prim(info->id)) throw nb::value_error(("kiln.tile: " + name + " is not a pointwise prim").c_str());
        std::vector<Operand> xs;
        for (nb::handle h : args) xs.push_back(operand(h, "an operand"));
        tile::Rounding r = tile::Rounding::None;
        if (rounding) {
          if (*rounding == "trunc") r = tile::Rounding::Trunc;
          else if (*rounding == "floor") r = tile::Rounding::Floor;
          else throw nb::value_error("kiln.tile: rounding_mode is None, 'trunc' or 'floor'");
        }
        return wrap(b.call(info->id, xs, r), self);
      }, nb::arg("name"), nb::arg("args"), nb::arg("rounding") = nb::none())
      .def("cdiv", [](nb::object self, nb::handle a, nb::handle c) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.cdiv(operand(a, "a"), operand(c, "b")), self);
      })
      .def("reduce", [](nb::object self, const std::string& kind, nb::handle x, std::optional<int64_t> axis) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        static const std::map<std::string, tile::ReduceKind> kinds = {
            {"sum", tile::ReduceKind::Sum}, {"prod", tile::ReduceKind::Prod}, {"max", tile::ReduceKind::Max},
            {"min", tile::ReduceKind::Min}, {"argmax", tile::ReduceKind::Argmax}, {"argmin", tile::ReduceKind::Argmin}};
        return wrap(b.reduce(kinds.at(kind), operand(x, "the value"), axis), self);
      }, nb::arg("kind"), nb::arg("x"), nb::arg("axis").none())
      .def("scan", [](nb::object self, const std::string& kind, nb::handle x, int64_t axis) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        static const std::map<std::string, tile::ScanKind> kinds = {
            {"cumsum", tile::ScanKind::Cumsum}, {"cumprod", tile::ScanKind::Cumprod},
            {"cummax", tile::ScanKind::Cummax}, {"cummin", tile::ScanKind::Cummin}};
        return wrap(b.scan(kinds.at(kind), operand(x, "the value"), axis), self);
      })
      .def("dot", [](nb::object self, nb::handle a, nb::handle c, nb::handle acc) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const Operand x = operand(a, "a"), y = operand(c, "b");
        if (acc.is_none()) return wrap(b.dot(x, y), self);
        return wrap(b.dot(x, y, operand(acc, "acc")), self);
      }, nb::arg("a"), nb::arg("b"), nb::arg("acc").none())
      .def("expand_dims", [](nb::object self, nb::handle x, int64_t axis) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.expand_dims(operand(x, "the value"), axis), self);
      })
      .def("broadcast_to", [](nb::object self, nb::handle x, nb::handle shape) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.broadcast_to(operand(x, "the value"), int_vector(shape)), self);
      })
      .def("reshape", [](nb::object self, nb::handle x, nb::handle shape) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.reshape(operand(x, "the value"), int_vector(shape)), self);
      })
      .def("permute", [](nb::object self, nb::handle x, nb::handle order) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        return wrap(b.permute(operand(x, "the value"), int_vector(order)), self);
      })
      .def("for_loop", [](nb::object self, nb::handle lo, nb::handle hi, nb::handle step, nb::handle init, nb::callable body) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const tile::Origin here{python_caller().first, python_caller().second, {}};
        std::vector<Val> start = vals(init, b, nullptr, "a carried value");
        auto out = b.for_loop(operand(lo, "lo"), operand(hi, "hi"), operand(step, "step"), start,
                              [&](Val iv, const std::vector<Val>& carried) {
                                nb::object r = body(wrap(iv, self), wrap_all(carried, self));
                                b.set_origin(here);  // the yield: the loop's line
                                return vals(r, b, &carried, "a value the body returns");
                              });
        return wrap_all(out, self);
      })
      .def("if_else", [](nb::object self, nb::handle cond, nb::callable then_fn, nb::callable else_fn) {
        Builder& b = nb::cast<PyBuilder&>(self).get();
        PyOrigin o(b);
        const tile::Origin here{python_caller().first, python_caller().second, {}};
        auto branch = [&](nb::callable& f) {
          return [&, f]() {
            nb::object r = f();
            b.set_origin(here);
            return vals(r, b, nullptr, "a value a branch returns");
          };
        };
        return wrap_all(b.if_else(operand(cond, "the condition"), branch(then_fn), branch(else_fn)), self);
      })
      .def("finish", [](PyBuilder& self) {
        tile::Program p = self.get().finish();
        self.b.reset();
        return p;
      });

  t.def("parse", [](const std::string& text) { return tile::parse(text); });
  t.def("run_pipeline", &tile::run_pipeline);
  t.def("prims", [] {
    nb::list l;
    for (int i = 0; i < ops::kNumOps; ++i)
      if (tile::is_prim(ops::OpId(i))) l.append(nb::make_tuple(ops::op_info(ops::OpId(i)).name, tile::prim_arity(ops::OpId(i))));
    return l;
  });

  nb::class_<tile::cpu::Kernel>(t, "Kernel", "A tile kernel compiled for the CPU.")
      .def_prop_ro("name", &tile::cpu::Kernel::name)
      .def_prop_ro("ir", &tile::cpu::Kernel::ir)
      .def_prop_ro("source", &tile::cpu::Kernel::source)
      .def_prop_ro("source_path", [](const tile::cpu::Kernel& k) { return k.library().source_path(); })
      .def_prop_ro("compile_seconds", [](const tile::cpu::Kernel& k) { return k.library().compile_seconds(); })
      .def_prop_ro("from_cache", [](const tile::cpu::Kernel& k) { return k.library().from_cache(); })
      .def_prop_ro("library_path", [](const tile::cpu::Kernel& k) { return k.library().library_path(); })
      .def("launch", [](const tile::cpu::Kernel& k, nb::handle grid, nb::handle args) {
        // No allocation: the arguments go into a fixed array of the kernel's maximum arity.
        const tile::cpu::Grid g = grid_of(grid);
        alignas(tile::cpu::Arg) unsigned char storage[64 * sizeof(tile::cpu::Arg)];
        auto* a = reinterpret_cast<tile::cpu::Arg*>(storage);
        size_t n = 0;
        for (nb::handle h : args) {
          if (n == 64) throw nb::value_error("kiln.tile: more than 64 kernel arguments");
          if (const Tensor* t = as_tensor(h)) new (&a[n++]) tile::cpu::Arg(*t);
          else if (PyFloat_Check(h.ptr())) new (&a[n++]) tile::cpu::Arg(PyFloat_AsDouble(h.ptr()));
          else if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) new (&a[n++]) tile::cpu::Arg(nb::cast<int64_t>(h));
          else throw nb::type_error(("kiln.tile: cannot pass a " + py_type_name(h) + " to a kernel").c_str());
        }
        nb::gil_scoped_release release;
        k.launch(g, std::span<const tile::cpu::Arg>(a, n));
      });
  t.def("compile", [](tile::Program& p) { return tile::cpu::compile(std::move(p)); }, nb::arg("program"),
        "Compiles a program for the CPU (the program is used up).");
  // kiln.tile.op: a custom op (ops/custom.h) whose meta, kernel and derivative are the methods
  // _meta_specs, _run and _run_backward of a Python kiln.tile.CustomOp. They run with the GIL
  // (a compiled graph may run without it); the meta sees fake inputs under fake mode, so it
  // allocates nothing; a Python exception from the meta becomes a kiln.Error naming the op
  // (capture then breaks the graph there, and the eager rerun raises it).
  t.def("register_op", [](const std::string& name, nb::object pyop) {
    // The registry outlives the interpreter (static destructors run after it ends), so the
    // Python op is held through a pointer the registry keeps, and let go at exit (below).
    auto* self = new nb::object(std::move(pyop));
    python_ops().push_back(self);
    // A tile op (tile/op.h) whose program, grid and ints are those of the one kernel launch the
    // Python function makes (CustomOp._launch_for, run on fake inputs), so the compiler lowers a
    // pointwise-shaped kernel as a function of the index and fuses its neighbours into it, as for
    // a C++ tile op. A function that does anything else gives an empty program: an extern call.
    tile::TileOpDef def;
    def.name = name;
    auto launch = [self](const TensorList& inputs) -> nb::object {  // (with the GIL)
      ops::FakeModeScope fake;
      return self->attr("_launch_for")(inputs);
    };
    def.program = [launch, name](const TensorList& inputs) {
      nb::gil_scoped_acquire gil;
      nb::object l = launch(inputs);
      if (l.is_none()) return tile::Program(name);
      return std::move(nb::cast<tile::Program&>(l[0]));  // (a fresh trace: its object is used up)
    };
    def.grid = [launch](const TensorList& inputs, const tile::Meta&) {
      nb::gil_scoped_acquire gil;
      nb::object l = launch(inputs);
      return l.is_none() ? tile::cpu::Grid(1) : grid_of(l[1]);
    };
    def.ints = [launch](const TensorList& inputs) {
      nb::gil_scoped_acquire gil;
      nb::object l = launch(inputs);
      return l.is_none() ? std::vector<int64_t>{} : int_vector(l[2]);
    };
    def.meta = [self](const TensorList& inputs, const std::vector<double>& scalars) {
      nb::gil_scoped_acquire gil;
      TensorList fakes;
      for (const Tensor& t : inputs) fakes.push_back(t.is_fake() ? t : make_fake(t.spec()));
      std::vector<TensorSpec> specs;
      try {
        ops::FakeModeScope fake;
        for (nb::handle h : self->attr("_meta_specs")(fakes, scalars)) {
          TensorSpec s = nb::cast<const Tensor&>(h).spec();
          s.strides.clear();  // the outputs' sizes and dtypes are the meta's; their layout is the kernel's
          s.offset = 0;
          specs.push_back(std::move(s));
        }
      } catch (nb::python_error& e) {
        if (!e.matches(PyExc_Exception)) throw;
        Error::Info info;
        info.message = nb::cast<std::string>(nb::str(e.value()));
        throw Error(std::move(info));
      }
      return specs;
    };
    def.derivative = [self](const ops::GradCtx& g) {
      nb::gil_scoped_acquire gil;
      nb::list needs;
      for (size_t i = 0; i < g.inputs.size(); ++i) needs.append(g.needs(i));
      // ctx.outputs: read through the version check (an output modified in place since the
      // forward is an error, as for every saved tensor).
      TensorList outputs;
      for (size_t i = 0; i < g.outputs.size(); ++i) outputs.push_back(g.outputs[i]);
      TensorList grads;
      for (nb::handle h : self->attr("_run_backward")(g.inputs, outputs, g.grads, g.args.opt_f64s(2).value_or(std::vector<double>{}), needs))
        grads.push_back(h.is_none() ? Tensor() : nb::cast<const Tensor&>(h));
      return grads;
    };
    auto op = std::make_shared<tile::TileOp>(std::move(def));
    // Eagerly (and as an extern) the op runs the Python function itself, not the traced kernel.
    op->kernel = [self](const TensorList& inputs, const std::vector<double>& scalars, const std::vector<TensorSpec>&) {
      nb::gil_scoped_acquire gil;
      TensorList in, out;  // kernels read their inputs' memory in order: contiguous ones
      for (const Tensor& t : inputs) in.push_back(t.is_contiguous() ? t : t.contiguous());
      for (nb::handle h : self->attr("_run")(in, scalars)) out.push_back(nb::cast<const Tensor&>(h));
      return out;
    };
    ops::register_custom_op(std::move(op));
  }, nb::arg("name"), nb::arg("op"));
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
    for (nb::object* o : python_ops()) *o = nb::object();
  }));

  // kiln.tile.autotune's timing: the one tuner (tile/autotune.h). configs: [(constexpr pairs,
  // num_warps, num_stages)]; run(i) launches config i once.
  t.def("tune", [](const std::string& label, const std::string& kernel, const std::string& key, nb::handle configs,
                   nb::callable run, int warmup, int repeats) {
    std::vector<tile::Config> cs;
    for (nb::handle c : configs) {
      tile::Config cfg;
      for (nb::handle kv : c[0]) cfg.constexprs.emplace_back(nb::cast<std::string>(kv[0]), to_scalar(kv[1]));
      cfg.num_warps = nb::cast<int>(c[1]);
      cfg.num_stages = nb::cast<int>(c[2]);
      cs.push_back(std::move(cfg));
    }
    // A kiln.Error from a config's launch (a kernel that does not build for it) skips that config,
    // as in C++; any other Python exception ends the tuning.
    nb::object kiln_error = nb::module_::import_("kiln._C").attr("Error");
    auto launch = [&](size_t i) {
      try {
        run(i);
      } catch (nb::python_error& e) {
        if (!e.matches(kiln_error)) throw;
        Error::Info info;
        info.op = "tile.autotune";
        info.message = e.what();
        throw Error(std::move(info));
      }
    };
    return tile::tune(label, kernel, key, cs, launch, tile::TuneOptions{warmup, repeats});
  }, nb::arg("label"), nb::arg("kernel"), nb::arg("key"), nb::arg("configs"), nb::arg("run"), nb::arg("warmup") = 2,
     nb::arg("repeats") = 7);
}

}  // namespace kiln::py
