#include "runtime/cuda/cublas_lt.h"

#include <kiln/error.h>

#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "runtime/cuda/library.h"

namespace kiln::runtime::cuda::blaslt {
namespace {

// cuBLASLt's C API as kiln declares it: the ABI of cublasLt.h, cublas_api.h and library_types.h
// (CUDA 13.0's headers; the values are the same in cuBLAS 12). Every enum there is an int, every
// handle and descriptor a pointer to an opaque struct.
using Status = int;                                 // cublasStatus_t
using Handle = struct HandleOpaque*;                // cublasLtHandle_t
using MatmulDesc = struct MatmulDescOpaque*;        // cublasLtMatmulDesc_t
using Layout = struct LayoutOpaque*;                // cublasLtMatrixLayout_t
using Preference = struct PreferenceOpaque*;        // cublasLtMatmulPreference_t
constexpr Status kSuccess = 0, kNotSupported = 15;  // CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_SUPPORTED

// cudaDataType_t (library_types.h)
constexpr int kR16F = 2, kR16BF = 14, kR32F = 0, kR64F = 1;
// cublasComputeType_t (cublas_api.h)
constexpr int kCompute32F = 68, kCompute64F = 70;
// cublasOperation_t (cublas_api.h)
constexpr int32_t kOpN = 0, kOpT = 1;
// cublasLtMatmulDescAttributes_t (cublasLt.h)
constexpr int kDescTransA = 3, kDescTransB = 4;
// cublasLtMatrixLayoutAttribute_t (cublasLt.h): BATCH_COUNT is an int32_t, the offset an int64_t
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
// cublasLtMatmulPreferenceAttributes_t (cublasLt.h): the workspace a uint64_t, alignments uint32_t
constexpr int kPrefMaxWorkspaceBytes = 1, kPrefMinAlignmentA = 5, kPrefMinAlignmentB = 6, kPrefMinAlignmentC = 7,
              kPrefMinAlignmentD = 8;

// cublasLtMatmulAlgo_t: 8 opaque 64-bit words.
struct Algo {
  uint64_t data[8];
};
// cublasLtMatmulHeuristicResult_t.
struct HeuristicResult {
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};
static_assert(sizeof(Algo) == 64 && sizeof(HeuristicResult) == 96, "the layout of cublasLt.h's structs");

struct Api {
  Status (*create)(Handle*);
  size_t (*get_version)();
  const char* (*get_status_string)(Status);
  const char* (*get_status_name)(Status);  // optional: only for messages
  Status (*desc_create)(MatmulDesc*, int compute, int scale_type);
  Status (*desc_set)(MatmulDesc, int attr, const void* buf, size_t size);
  Status (*desc_destroy)(MatmulDesc);
  Status (*layout_create)(Layout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layout_set)(Layout, int attr, const void* buf, size_t size);
  Status (*layout_destroy)(Layout);
  Status (*pref_create)(Preference*);
  Status (*pref_set)(Preference, int attr, const void* buf, size_t size);
  Status (*pref_destroy)(Preference);
  Status (*heuristic)(Handle, MatmulDesc, Layout a, Layout b, Layout c, Layout d, Preference, int requested,
                      HeuristicResult* results, int* returned);
  Status (*matmul)(Handle, MatmulDesc, const void* alpha, const void* a, Layout, const void* b, Layout,
                   const void* beta, const void* c, Layout, void* d, Layout, const Algo*, void* workspace,
                   size_t workspace_bytes, Stream);
};

// What cuBLASLt may use besides the operands: 32 MiB, cuBLAS's own choice for Hopper. One per
// device and stream, since products queued on two streams may run at once.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct Loaded {
  Library lib{"cuBLASLt", library_candidates("KILN_CUBLASLT_LIBRARY",
                                             {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})};
  Api api{};
  bool ok = false;
  std::mutex m;
  std::map<int, Handle> handles;                       // per device
  std::map<std::pair<int, Stream>, void*> workspaces;  // per device and stream; kept for the process
  Loaded() {
    Api& a = api;
    ok = lib.ok() && lib.get(a.create, "cublasLtCreate") && lib.get(a.get_version, "cublasLtGetVersion") &&
         lib.get(a.get_status_string, "cublasLtGetStatusString") &&
         lib.get(a.desc_create, "cublasLtMatmulDescCreate") && lib.get(a.desc_set, "cublasLtMatmulDescSetAttribute") &&
         lib.get(a.desc_destroy, "cublasLtMatmulDescDestroy") &&
         lib.get(a.layout_create, "cublasLtMatrixLayoutCreate") &&
         lib.get(a.layout_set, "cublasLtMatrixLayoutSetAttribute") &&
         lib.get(a.layout_destroy, "cublasLtMatrixLayoutDestroy") &&
         lib.get(a.pref_create, "cublasLtMatmulPreferenceCreate") &&
         lib.get(a.pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
         lib.get(a.pref_destroy, "cublasLtMatmulPreferenceDestroy") &&
         lib.get(a.heuristic, "cublasLtMatmulAlgoGetHeuristic") && lib.get(a.matmul, "cublasLtMatmul");
    // Optional: without it a failure shows the status number and text only.
    if (ok) a.get_status_name = reinterpret_cast<decltype(a.get_status_name)>(lib.symbol("cublasLtGetStatusName"));
  }
};

Loaded& loaded() {
  static Loaded* l = new Loaded;  // never destroyed: products may be queued during static destruction
  return *l;
}

const Api& api() {
  Loaded& l = loaded();
  KILN_CHECK_HINT(l.ok,
                  "install cuBLAS (the CUDA toolkit's libcublasLt.so.13, or a pip wheel's nvidia-cublas) or set "
                  "KILN_CUBLASLT_LIBRARY to its path",
                  l.lib.error());
  return l.api;
}

void check(Status s, const char* call) {
  if (s == kSuccess) return;
  const Api& a = loaded().api;
  const char* name = a.get_status_name ? a.get_status_name(s) : nullptr;
  const char* text = a.get_status_string(s);
  kiln::detail::fail(kiln::detail::cat("cuBLASLt ", call, " failed: ", name ? name : "status", " (", s, ")",
                                       text ? std::string(": ") + text : std::string()));
}

// Each descriptor destroyed when it goes out of scope, whatever raised.
template <class T, Status (*Api::*destroy)(T)>
struct Owned {
  T p = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (p) (loaded().api.*destroy)(p);
  }
};
using OwnedDesc = Owned<MatmulDesc, &Api::desc_destroy>;
using OwnedLayout = Owned<Layout, &Api::layout_destroy>;
using OwnedPreference = Owned<Preference, &Api::pref_destroy>;

// The handle of a device (made with the device current: cuBLASLt runs on its primary context).
Handle handle_for(int device) {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> g(l.m);
  Handle& h = l.handles[device];
  if (!h) check(l.api.create(&h), "cublasLtCreate");
  return h;
}

// The workspace of a device and stream, allocated once; none (0 bytes) when the device has no room
// for it now (cuBLASLt then picks an algorithm that needs none; the next product asks again).
std::pair<void*, size_t> workspace_for(int device, Stream stream) {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> g(l.m);
  void*& w = l.workspaces[{device, stream}];
  if (!w) w = mem_alloc(kWorkspaceBytes, device);
  return {w, w ? kWorkspaceBytes : 0};
}

int data_type(DType t) {
  switch (t) {
    case DType::Float16: return kR16F;
    case DType::BFloat16: return kR16BF;
    case DType::Float32: return kR32F;
    case DType::Float64: return kR64F;
    default: break;
  }
  kiln::detail::fail(kiln::detail::cat("cuBLASLt matmul: ", name(t), " is not supported"),
                     "cuBLASLt multiplies float16, bfloat16, float32 and float64 matrices");
}

// The largest power of two (at most 256, cuBLASLt's default requirement) dividing the address of
// every batch's matrix: algorithms that need more are left out of the heuristic's choice.
uint32_t alignment(const void* p, int64_t batch_stride, int64_t batch, size_t itemsize) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256;
  if (batch > 1) bits |= uint64_t(batch_stride) * itemsize;
  return uint32_t(bits & (~bits + 1));
}

void set_batch(Layout layout, int64_t batch, int64_t stride) {
  if (batch == 1) return;
  const int32_t count = int32_t(batch);
  const Api& a = loaded().api;
  check(a.layout_set(layout, kLayoutBatchCount, &count, sizeof count), "cublasLtMatrixLayoutSetAttribute");
  check(a.layout_set(layout, kLayoutStridedBatchOffset, &stride, sizeof stride), "cublasLtMatrixLayoutSetAttribute");
}

}  // namespace

bool available() { return loaded().ok; }
const std::string& unavailable_reason() {
  static const std::string none;
  return available() ? none : loaded().lib.error();
}
const std::string& library_path() { return loaded().lib.path(); }

size_t version() { return available() ? loaded().api.get_version() : 0; }

void matmul(const Gemm& g) {
  const Api& a = api();
  const int type = data_type(g.dtype);
  KILN_CHECK(g.m >= 1 && g.n >= 1 && g.k >= 1 && g.m <= INT32_MAX && g.n <= INT32_MAX && g.k <= INT32_MAX,
             "cuBLASLt matmul: m, n and k must be in [1, 2^31), got ", g.m, ", ", g.n, ", ", g.k);
  KILN_CHECK(g.batch >= 1 && g.batch <= INT32_MAX, "cuBLASLt matmul: a batch of ", g.batch,
             " products (at most 2^31 - 1 in one call)");
  // Column-major storage: the rows of A, B and D as stored bound their leading dimensions.
  const int64_t a_rows = g.a.transpose ? g.k : g.m, a_cols = g.a.transpose ? g.m : g.k;
  const int64_t b_rows = g.b.transpose ? g.n : g.k, b_cols = g.b.transpose ? g.k : g.n;
  KILN_CHECK(g.a.ld >= a_rows && g.b.ld >= b_rows && g.d.ld >= g.m, "cuBLASLt matmul: leading dimensions ", g.a.ld,
             ", ", g.b.ld, ", ", g.d.ld, " are below the stored rows ", a_rows, ", ", b_rows, ", ", g.m);
  set_device(g.device);

  const bool f64 = g.dtype == DType::Float64;
  OwnedDesc desc;
  check(a.desc_create(&desc.p, f64 ? kCompute64F : kCompute32F, f64 ? kR64F : kR32F), "cublasLtMatmulDescCreate");
  const int32_t trans_a = g.a.transpose ? kOpT : kOpN, trans_b = g.b.transpose ? kOpT : kOpN;
  check(a.desc_set(desc.p, kDescTransA, &trans_a, sizeof trans_a), "cublasLtMatmulDescSetAttribute");
  check(a.desc_set(desc.p, kDescTransB, &trans_b, sizeof trans_b), "cublasLtMatmulDescSetAttribute");

  OwnedLayout la, lb, ld;
  check(a.layout_create(&la.p, type, uint64_t(a_rows), uint64_t(a_cols), g.a.ld), "cublasLtMatrixLayoutCreate");
  check(a.layout_create(&lb.p, type, uint64_t(b_rows), uint64_t(b_cols), g.b.ld), "cublasLtMatrixLayoutCreate");
  check(a.layout_create(&ld.p, type, uint64_t(g.m), uint64_t(g.n), g.d.ld), "cublasLtMatrixLayoutCreate");
  set_batch(la.p, g.batch, g.a.batch_stride);
  set_batch(lb.p, g.batch, g.b.batch_stride);
  set_batch(ld.p, g.batch, g.d.batch_stride);

  const Handle handle = handle_for(g.device);
  const auto [workspace, workspace_bytes] = workspace_for(g.device, g.stream);
  OwnedPreference pref;
  check(a.pref_create(&pref.p), "cublasLtMatmulPreferenceCreate");
  const uint64_t max_workspace = workspace_bytes;
  check(a.pref_set(pref.p, kPrefMaxWorkspaceBytes, &max_workspace, sizeof max_workspace),
        "cublasLtMatmulPreferenceSetAttribute");
  const size_t itemsize = kiln::itemsize(g.dtype);
  const uint32_t align_a = alignment(g.a.data, g.a.batch_stride, g.batch, itemsize);
  const uint32_t align_b = alignment(g.b.data, g.b.batch_stride, g.batch, itemsize);
  const uint32_t align_d = alignment(g.d.data, g.d.batch_stride, g.batch, itemsize);
  for (auto [attr, value] : {std::pair{kPrefMinAlignmentA, align_a}, std::pair{kPrefMinAlignmentB, align_b},
                             std::pair{kPrefMinAlignmentC, align_d}, std::pair{kPrefMinAlignmentD, align_d}})
    check(a.pref_set(pref.p, attr, &value, sizeof value), "cublasLtMatmulPreferenceSetAttribute");

  HeuristicResult best{};
  int found = 0;
  const Status asked = a.heuristic(handle, desc.p, la.p, lb.p, ld.p, ld.p, pref.p, 1, &best, &found);
  if (asked != kNotSupported) check(asked, "cublasLtMatmulAlgoGetHeuristic");
  KILN_CHECK(asked == kSuccess && found > 0 && best.state == kSuccess, "cuBLASLt has no algorithm for a ",
             name(g.dtype), " product of ", g.m, " x ", g.k, " by ", g.k, " x ", g.n, " (batch ", g.batch,
             ", transposes ", g.a.transpose, "/", g.b.transpose, ", leading dimensions ", g.a.ld, "/", g.b.ld, "/",
             g.d.ld, ", alignments ", align_a, "/", align_b, "/", align_d, " bytes)");

  // alpha and beta are of the scale type: double for float64, float otherwise.
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  check(a.matmul(handle, desc.p, alpha, g.a.data, la.p, g.b.data, lb.p, beta, g.d.data, ld.p, g.d.data, ld.p,
                 &best.algo, workspace, workspace_bytes, g.stream),
        "cublasLtMatmul");
}

}  // namespace kiln::runtime::cuda::blaslt
