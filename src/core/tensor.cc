// Storage, TensorImpl and the Tensor methods that need nothing above core: metadata and reading
// one element. The methods that run ops live in ops (src/ops/tensor_ops.cc), the autograd ones
// in autograd (src/autograd/engine.cc).
#include <kiln/tensor.h>

#include <algorithm>

#include "core/call_site.h"
#include "core/element.h"
#include "core/tensor_impl.h"
#include "runtime/device.h"

namespace kiln {

// ------------------------------------------------------------------------------ Storage
Storage::~Storage() {
  if (owned && data) runtime::find_device(device.type)->deallocate(data, nbytes, device.index);
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  runtime::DeviceInterface& dev = runtime::device_interface(device.type);  // a kiln::Error if none
  auto s = std::make_shared<Storage>();
  s->nbytes = nbytes;
  s->device = device;
  if (nbytes > 0) {
    // Sizes past PTRDIFF_MAX cannot be allocated (and would overflow the allocator's rounding).
    if (nbytes <= size_t(PTRDIFF_MAX)) s->data = dev.allocate(nbytes, device.index);
    KILN_CHECK_HINT(s->data, "use smaller tensors, or free memory (del tensors you no longer need)",
                    "out of memory allocating ", nbytes, " bytes (", double(nbytes) / double(1 << 30), " GiB)",
                    device.is_cpu() ? "" : " on " + device.str());
    s->owned = true;
  }
  return s;
}

std::shared_ptr<Storage> Storage::make_fake(Device device) {
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->fake = true;
  return s;
}

// ------------------------------------------------------------------------------ TensorImpl
TensorImpl::TensorImpl() = default;
TensorImpl::~TensorImpl() = default;

int64_t numel_of(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)  // in order, as PyTorch: a later 0 does not excuse an overflow before it
    KILN_CHECK_HINT(!__builtin_mul_overflow(n, s, &n), "no tensor can have that many elements",
                    "shape ", shape_str(sizes), " has more elements than an int64 can count (numel overflows)");
  return n;
}

size_t nbytes_of(const Shape& sizes, DType dtype) {
  int64_t bytes;
  KILN_CHECK_HINT(!__builtin_mul_overflow(numel_of(sizes), int64_t(itemsize(dtype)), &bytes),
                  "no tensor can have that many bytes", "shape ", shape_str(sizes), " of ", name(dtype),
                  " needs more than ", INT64_MAX, " bytes (its byte size overflows)");
  return size_t(bytes);
}

StorageExtent storage_extent(const Shape& sizes, const Shape& strides, int64_t offset) {
  StorageExtent e{offset, offset};
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return StorageExtent{0, -1};
    int64_t reach;
    KILN_CHECK(!__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) &&
                   !__builtin_add_overflow(reach < 0 ? e.first : e.last, reach, reach < 0 ? &e.first : &e.last),
               "sizes ", shape_str(sizes), " with strides ", shape_str(strides), " reach past what an int64 can address");
  }
  return e;
}

bool has_internal_overlap(const TensorImpl& t) {
  if (t.sym) return false;
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] > 1 && t.strides[d] == 0) return true;
  return false;
}

void check_bool_bytes(const TensorImpl& t, const char* source) {
  if (t.dtype != kBool || t.storage->fake || !t.device().is_cpu()) return;
  const int64_t n = t.numel();
  const auto* base = reinterpret_cast<const uint8_t*>(t.data());
  Shape index(t.sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * t.strides[d];
    KILN_CHECK_HINT(base[at] <= 1, "make a proper bool array first, e.g. numpy: (a.view(numpy.uint8) != 0)",
                    source, ": a bool tensor holds the byte ", int(base[at]), " at element ", i,
                    "; bool elements must be the bytes 0 (false) or 1 (true)");
    for (size_t d = index.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
  }
}

namespace {
// Every view stays inside its storage (PyTorch's setStorage check): as_strided, and whatever else
// makes a layout, can then never read or write out of bounds.
void check_in_storage(const TensorImpl& t) {
  const Storage& st = *t.storage;
  if (st.fake || t.sym) return;
  const StorageExtent e = storage_extent(t.sizes, t.strides, t.offset);
  if (e.last < e.first) return;  // no elements
  const int64_t item = int64_t(itemsize(t.dtype));
  KILN_CHECK_HINT(e.first >= 0 && e.last < int64_t(st.nbytes) / item,
                  "sizes, strides and offset must stay inside the storage",
                  "a view with sizes ", shape_str(t.sizes), ", strides ", shape_str(t.strides), " and storage offset ",
                  t.offset, " reaches elements [", e.first, ", ", e.last, "] of a storage of ",
                  int64_t(st.nbytes) / item, " elements (", st.nbytes, " bytes) of ", name(t.dtype));
}
}  // namespace

int64_t TensorImpl::numel() const { return numel_of(sizes); }

bool TensorImpl::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

void TensorImpl::adopt_data(const TensorImpl& src) {
  storage = src.storage;
  sizes = src.sizes;
  strides = src.strides;
  offset = src.offset;
  dtype = src.dtype;
  sym.reset();
  if (src.sym) sym.reset(new SymLayout(*src.sym));
}

TensorHooks& tensor_hooks() {
  static thread_local TensorHooks hooks;
  return hooks;
}

char* TensorImpl::data() const {
  if (storage->fake && tensor_hooks().fake_data) tensor_hooks().fake_data(this);
  KILN_CHECK(!storage->fake, "this is a fake tensor (metadata only, as seen while tracing): it has no data",
             " to read");
  return static_cast<char*>(storage->data) + offset * int64_t(itemsize(dtype));
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    KILN_CHECK(!__builtin_mul_overflow(s, std::max<int64_t>(sizes[i], 1), &s), "the strides of shape ",
               shape_str(sizes), " overflow an int64");
  }
  return st;
}

SymShape contiguous_strides(const SymShape& sizes) {
  SymShape st(sizes.size());
  SymInt s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    st[i] = s;
    s = s * (sizes[i].is_symbolic() ? sizes[i] : SymInt(std::max<int64_t>(sizes[i].hint(), 1)));
  }
  return st;
}

namespace {
// Gives impl (sizes set) contiguous strides and fresh storage.
Tensor finish_contiguous(std::shared_ptr<TensorImpl> impl, DType dtype, Device device) {
  for (int64_t s : impl->sizes) KILN_CHECK(s >= 0, "negative dimension in shape ", shape_str(impl->sizes));
  impl->strides = contiguous_strides(impl->sizes);
  impl->dtype = dtype;
  impl->storage = Storage::allocate(nbytes_of(impl->sizes, dtype), device);
  return Tensor(std::move(impl));
}
}  // namespace

Tensor make_tensor(const Shape& sizes, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  return finish_contiguous(std::move(impl), dtype, device);
}

namespace {
bool spec_symbolic(const TensorSpec& s) {
  for (auto& x : s.sizes)
    if (x.is_symbolic()) return true;
  for (auto& x : s.strides)
    if (x.is_symbolic()) return true;
  return s.offset.is_symbolic();
}

void set_layout(TensorImpl& impl, const TensorSpec& spec) {
  // Views (every x.view(), x[i]) come through here: no copy of the spec's strides when given.
  SymShape computed;
  if (spec.strides.empty()) computed = contiguous_strides(spec.sizes);
  const SymShape& strides = spec.strides.empty() ? computed : spec.strides;
  impl.sizes.resize(spec.sizes.size());
  impl.strides.resize(strides.size());
  for (size_t i = 0; i < spec.sizes.size(); ++i) impl.sizes[i] = spec.sizes[i].hint();
  for (size_t i = 0; i < strides.size(); ++i) impl.strides[i] = strides[i].hint();
  impl.offset = spec.offset.hint();
  impl.dtype = spec.dtype;
  if (spec_symbolic(spec)) impl.sym.reset(new SymLayout{spec.sizes, strides, spec.offset});
}
}  // namespace

Tensor make_fake(const TensorSpec& spec) {
  auto impl = std::make_shared<TensorImpl>();
  set_layout(*impl, spec);
  impl->storage = Storage::make_fake(spec.device);
  numel_of(impl->sizes);  // a fake tensor is checked as a real one would be
  return Tensor(std::move(impl));
}

Tensor make_tensor(const TensorSpec& spec) {
  if (spec_symbolic(spec)) return make_fake(spec);
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes.reserve(spec.sizes.size());
  for (auto& s : spec.sizes) impl->sizes.push_back(s.hint());  // concrete: hint() is the value
  return finish_contiguous(std::move(impl), spec.dtype, spec.device);
}

Tensor make_view(const Tensor& base, const TensorSpec& spec) {
  auto impl = std::make_shared<TensorImpl>();
  set_layout(*impl, spec);
  impl->storage = base.impl()->storage;
  numel_of(impl->sizes);
  check_in_storage(*impl);
  return Tensor(std::move(impl));
}

Tensor wrap_scalar(Scalar s, Device device) {
  Tensor t = make_tensor({}, s.dtype(), device);
  if (device.is_cpu()) {
    write_scalar(t.data_ptr(), t.dtype(), s);
  } else {
    alignas(8) char host[8];
    write_scalar(host, t.dtype(), s);
    runtime::copy_bytes(t.data_ptr(), device, host, kCPU, t.element_size());
  }
  t.impl()->wrapped_number = true;
  return t;
}

// ------------------------------------------------------------------------------ Tensor
TensorImpl* Tensor::impl() const {
  KILN_CHECK(impl_, "use of an undefined tensor (default-constructed, moved-from or released)");
  return impl_.get();
}

int64_t Tensor::dim() const { return int64_t(impl()->sizes.size()); }

// Symbolic tensors answer concrete questions only while capture can specialize them.
static bool concretized(const TensorImpl* t) {
  if (!t->sym) return true;
  if (!tensor_hooks().concretize) return false;
  tensor_hooks().concretize(t);
  return true;
}

const Shape& Tensor::sizes() const {
  KILN_CHECK(concretized(impl()), "sizes() of a tensor with symbolic sizes ", shape_str(impl_->sym->sizes),
             "; use sym_sizes()");
  return impl_->sizes;
}
const Shape& Tensor::strides() const {
  KILN_CHECK(concretized(impl()), "strides() of a tensor with symbolic layout; use sym_strides()");
  return impl_->strides;
}

// The dim of a size or stride asked for: a 0-d tensor has none (its sizes() is empty).
static int64_t wrap_dim_for(const Tensor& t, int64_t d) {
  int64_t n = t.dim();
  KILN_CHECK_HINT(d >= -n && d < n, "a dim is in [-ndim, ndim)", "dimension ", d, " out of range for a ", n,
                  "-d tensor");
  return d < 0 ? d + n : d;
}

int64_t Tensor::size(int64_t d) const { return sizes()[size_t(wrap_dim_for(*this, d))]; }
int64_t Tensor::stride(int64_t d) const { return strides()[size_t(wrap_dim_for(*this, d))]; }
int64_t Tensor::storage_offset() const {
  KILN_CHECK(concretized(impl()), "storage_offset() of a symbolic tensor");
  return impl_->offset;
}
int64_t Tensor::numel() const { return numel_of(sizes()); }

SymShape Tensor::sym_sizes() const {
  if (impl()->sym) return impl_->sym->sizes;
  return SymShape(impl_->sizes.begin(), impl_->sizes.end());
}
SymShape Tensor::sym_strides() const {
  if (impl()->sym) return impl_->sym->strides;
  return SymShape(impl_->strides.begin(), impl_->strides.end());
}
SymInt Tensor::sym_size(int64_t d) const { return sym_sizes()[size_t(wrap_dim_for(*this, d))]; }
SymInt Tensor::sym_numel() const {
  SymInt n = 1;
  for (auto& s : sym_sizes()) n = n * s;
  return n;
}
SymInt Tensor::sym_storage_offset() const { return impl()->sym ? impl_->sym->offset : SymInt(impl_->offset); }
TensorSpec Tensor::spec() const { return TensorSpec{sym_sizes(), sym_strides(), sym_storage_offset(), dtype(), device()}; }

DType Tensor::dtype() const { return impl()->dtype; }
Device Tensor::device() const { return impl()->device(); }
bool Tensor::is_contiguous() const { return impl()->is_contiguous(); }
bool Tensor::is_fake() const { return impl()->storage->fake; }
bool Tensor::is_wrapped_number() const { return impl()->wrapped_number; }
bool Tensor::shares_storage(const Tensor& o) const { return impl()->storage == o.impl()->storage; }

void* Tensor::data_ptr() const { return impl()->data(); }

// The user's code reads values (item(), to_vector()): capture wants to know (see TensorHooks).
void note_values_read(const TensorImpl* t) {
  if (!t->storage->fake && tensor_hooks().real_data) tensor_hooks().real_data(t);
}

Scalar Tensor::item_scalar(SourceLoc loc) const {
  CallSite site(loc);
  note_values_read(impl());
  KILN_CHECK_HINT(numel() == 1, "reduce it first (sum(), mean(), ...) or index one element",
                  "item(): a tensor with ", numel(), " elements (shape ", shape_str(sizes()),
                  ") cannot be converted to a number");
  if (device().is_cpu()) return read_scalar(data_ptr(), dtype());
  alignas(8) char host[8];
  runtime::copy_bytes(host, kCPU, data_ptr(), device(), element_size());
  return read_scalar(host, dtype());
}

template <class T>
T Tensor::item(SourceLoc loc) const {
  Scalar s = item_scalar(loc);  // the caller's line: capture reports graph breaks there
  if constexpr (std::is_same_v<T, bool>) return s.to_bool();
  else if constexpr (std::is_floating_point_v<T>) return T(s.to_double());
  else return T(s.to_int());
}

#define KILN_INSTANTIATE(T) template T Tensor::item<T>(SourceLoc) const;
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(bool)
#undef KILN_INSTANTIATE

}  // namespace kiln
