// Host-side pieces every kernel launcher shares: argument checks that throw ArgumentError
// naming the argument, tensor maps for a view (cached), and the device's multiprocessor
// count. Header-only; used by kernels/*/ and by the benchmark baselines.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "tmakit/core/cluster_launch.hpp"
#include "tmakit/core/cuda_check.hpp"
#include "tmakit/host/encode.hpp"
#include "tmakit/host/tensor_map_cache.hpp"
#include "tmakit/kernels/detail/plain_path.hpp"  // kMaxExtent
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::detail {

inline std::string hex_address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// A view's element type: one of whole bytes (Blackwell's packed types and values past the
// enum are refused, named).
inline void require_whole_byte_type(const std::string& view_name, DataType t) {
  if (element_bytes(t) != 0) return;
  throw ArgumentError(view_name + ".type",
                      is_packed(t) ? std::string(name(t)) +
                                         " packs values smaller than a byte; the kernels take "
                                         "types of whole bytes"
                                   : std::to_string(static_cast<int>(t)) + " is not a DataType");
}

// A value per device (ids 0..63), computed by `compute(device)` the first time the current
// device asks and remembered; devices past 63 compute it every time. T{} means "not yet
// known", so `compute` must not return it. Thread-safe: two threads may both compute a
// value the first time; both get a correct one.
// NOTE: per device, not per process: attributes and limits belong to a device's context,
// and a process may use several GPUs (one set-up per process made every kernel fail on the
// second device). A cudaDeviceReset discards them while these stay: launches after a reset
// then fail with a CudaError (nothing is written).
template <class T>
class PerDevice {
 public:
  template <class F>
  T get(F&& compute) {
    int device = 0;
    TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
    if (device < 0 || device >= kSlots) return compute(device);
    T v = slots_[device].load(std::memory_order_acquire);
    if (v != T{}) return v;
    v = compute(device);
    slots_[device].store(v, std::memory_order_release);
    return v;
  }

 private:
  static constexpr int kSlots = 64;
  std::atomic<T> slots_[kSlots] = {};
};

// The strides and the whole span of a view with extents >= 1: a row stride under 2^40 bytes
// (TMA rule T6), and at most 2^48 bytes from the first element to the last. Also for views
// that are not TMA operands (the GEMM's D), before any overlap check.
// NOTE: in 128 bits, before any 64-bit product of the view's sizes: up to 2^31 rows of up to
// 2^40 bytes would wrap (and an overlap check on a wrapped span would miss real overlap)
template <class P>
void check_span(const char* name, const BasicTensorRef<P>& v) {
  const std::string n(name);
  // (one row of one image, or of images placed by their own stride: the row stride is never
  // followed)
  const bool rows_stepped = v.rows > 1 || (v.batch > 1 && v.image_stride_bytes == 0);
  if (rows_stepped && v.row_pitch() >= (1ull << 40)) {
    throw ArgumentError(n + ".row_stride_bytes",
                        std::to_string(v.row_pitch()) + " bytes between rows" +
                            (v.row_stride_bytes == 0 ? " (rows back to back, none given)" : "") +
                            " is 2^40 or more (TMA rule T6)");
  }
  __extension__ typedef unsigned __int128 Wide;  // (a GCC/Clang extension: -Wpedantic)
  const Wide image_bytes = v.image_stride_bytes != 0
                               ? static_cast<Wide>(v.image_stride_bytes)
                               : static_cast<Wide>(v.rows) * v.row_pitch();
  const Wide span = static_cast<Wide>(v.batch - 1) * image_bytes +
                    static_cast<Wide>(v.rows - 1) * v.row_pitch() +
                    static_cast<Wide>(v.cols) * v.element_size();
  if (span > (static_cast<Wide>(1) << 48)) {
    throw ArgumentError(n, "spans more than 2^48 bytes (rows, strides and batch together); no "
                           "device memory is that large");
  }
  // NOTE: a view reaching past 2^57, where the GPU's virtual addresses end (rule X2's bound),
  // lies in no allocation, and near 2^64 the kernels' 64-bit addressing would wrap
  if (static_cast<Wide>(reinterpret_cast<std::uintptr_t>(v.data)) + span >
      (static_cast<Wide>(1) << 57)) {
    throw ArgumentError(n + ".data", hex_address(v.data) +
                                         " and the view's bytes after it reach past 2^57, "
                                         "where the GPU's virtual addresses end");
  }
}

// Checks one view: pointer, alignment, extents, strides. `name` is "in" or "out".
template <class P>
void check_view(const char* name, const BasicTensorRef<P>& v, bool batch_allowed) {
  const std::string n(name);
  if (v.data == nullptr) throw ArgumentError(n + ".data", "is null; pass a device pointer");
  if (reinterpret_cast<std::uintptr_t>(v.data) % 16 != 0) {
    throw ArgumentError(n + ".data", hex_address(v.data) +
                                         " is not 16-byte aligned (TMA rule T4); cudaMalloc "
                                         "returns aligned memory, offsets must be multiples "
                                         "of 16 bytes");
  }
  require_whole_byte_type(n, v.type);
  const auto extent = [&](const char* field, std::uint64_t value) {
    if (value == 0) throw ArgumentError(n + "." + field, "is 0; every extent must be >= 1");
    if (value > kMaxExtent) {
      throw ArgumentError(n + "." + field, std::to_string(value) +
                                               " exceeds 2^31 - 4096: TMA's coordinates are "
                                               "signed 32-bit, and the kernels' tile arithmetic "
                                               "needs a tile's width to spare");
    }
  };
  extent("rows", v.rows);
  extent("cols", v.cols);
  extent("batch", v.batch);
  if (!batch_allowed && v.batch != 1) {
    throw ArgumentError(n + ".batch", std::to_string(v.batch) +
                                          " images given; this kernel takes one matrix");
  }
  const std::uint64_t row_bytes = v.cols * v.element_size();
  // NOTE: one row of one image: its stride is never followed (the map takes the row's bytes)
  if (v.row_stride_bytes != 0 && v.row_stride_bytes < row_bytes && (v.rows > 1 || v.batch > 1)) {
    throw ArgumentError(n + ".row_stride_bytes",
                        std::to_string(v.row_stride_bytes) + " is less than a row's " +
                            std::to_string(row_bytes) + " bytes");
  }
  if (v.rows > 1 && v.row_pitch() % 16 != 0) {
    throw ArgumentError(n + ".row_stride_bytes",
                        std::to_string(v.row_pitch()) +
                            " bytes between rows is not a multiple of 16 (TMA rule T6); pad "
                            "rows to " + std::to_string((v.row_pitch() + 15) / 16 * 16) +
                            " bytes and pass that stride");
  }
  check_span(name, v);
  if (v.image_stride_bytes != 0 && v.image_stride_bytes < v.rows * v.row_pitch()) {
    throw ArgumentError(n + ".image_stride_bytes",
                        std::to_string(v.image_stride_bytes) + " is less than an image's " +
                            std::to_string(v.rows * v.row_pitch()) + " bytes");
  }
  if (v.batch > 1 && v.image_pitch() % 16 != 0) {
    throw ArgumentError(n + ".image_stride_bytes",
                        std::to_string(v.image_pitch()) +
                            " bytes between images is not a multiple of 16 (TMA rule T6)");
  }
  if (v.batch > 1 && v.image_pitch() >= (1ull << 40)) {
    throw ArgumentError(n + ".image_stride_bytes", std::to_string(v.image_pitch()) +
                                                       " bytes between images is 2^40 or more "
                                                       "(TMA rule T6)");
  }
}

// Throws ArgumentError naming `arg_name` unless the current device can use the memory at `p`:
// memory of the current device, managed memory, mapped pinned host memory, or another
// device's memory with peer access enabled. Memory from malloc or new (the kernel would fault,
// leave the output half written and every later CUDA call of the process failing), pinned
// memory that is not mapped, and another device's memory without peer access are refused.
// NOTE: an answer of "usable" is remembered per thread for the last kKnownPointers (device,
// pointer) pairs, so a launcher called again on the same buffers asks the driver nothing;
// refusals are never remembered. Freed memory is not noticed (as without the check).
inline void require_device_pointer(const void* p, const char* arg_name) {
  constexpr int kKnownPointers = 16;
  struct Known {
    const void* pointer = nullptr;
    int device = -1;
  };
  thread_local Known known[kKnownPointers];
  thread_local int next = 0;
  int device = 0;
  TMAKIT_CUDA_CHECK(cudaGetDevice(&device));
  for (const Known& k : known) {
    if (k.pointer == p && k.device == device) return;
  }
  const std::string name(arg_name);
  cudaPointerAttributes a{};
  if (const cudaError_t e = cudaPointerGetAttributes(&a, p); e != cudaSuccess) {
    (void)cudaGetLastError();  // NOTE: not sticky; cleared so the next call does not see it
    throw ArgumentError(name, hex_address(p) + " is not memory the CUDA driver knows (" +
                                  cudaGetErrorName(e) + "); pass memory from cudaMalloc");
  }
  switch (a.type) {
    case cudaMemoryTypeUnregistered:
      throw ArgumentError(name, hex_address(p) +
                                    " is host memory the GPU cannot reach (malloc, new or the "
                                    "stack); pass memory from cudaMalloc, or cudaHostRegister "
                                    "this memory with cudaHostRegisterMapped");
    case cudaMemoryTypeHost:
      if (a.devicePointer != p) {
        throw ArgumentError(name, hex_address(p) +
                                      " is pinned host memory that is not mapped into the "
                                      "device's address space; allocate it with "
                                      "cudaHostAllocMapped or pass device memory");
      }
      break;
    case cudaMemoryTypeDevice:
      if (a.device != device) {
        int can = 0;
        TMAKIT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, a.device));
        // NOTE: whether peer access is enabled has no query of its own: enabling it answers
        // "already enabled" when it is; when it was not, it is disabled again at once, so the
        // check changes nothing.
        cudaError_t e = cudaErrorPeerAccessUnsupported;
        if (can) {
          e = cudaDeviceEnablePeerAccess(a.device, 0);
          if (e == cudaSuccess) (void)cudaDeviceDisablePeerAccess(a.device);
        }
        (void)cudaGetLastError();
        if (e != cudaErrorPeerAccessAlreadyEnabled) {
          throw ArgumentError(
              name,
              hex_address(p) + " is memory of device " + std::to_string(a.device) +
                  " and the launch runs on device " + std::to_string(device) +
                  (can ? ", which has no peer access to it; call cudaDeviceEnablePeerAccess(" +
                             std::to_string(a.device) + ", 0) first"
                       : ", which cannot reach it; cudaSetDevice(" + std::to_string(a.device) +
                             ") first or copy the data over"));
        }
      }
      break;
    case cudaMemoryTypeManaged:
      break;
  }
  known[next] = {p, device};
  next = (next + 1) % kKnownPointers;
}

// True when the byte ranges [data, data + span) of the two views intersect.
// NOTE: conservative for interleaved views (rows of one between rows of the other): those
// share no byte yet count as overlapping.
template <class A, class B>
bool overlaps(const BasicTensorRef<A>& a, const BasicTensorRef<B>& b) {
  const auto a0 = reinterpret_cast<std::uintptr_t>(a.data);
  const auto b0 = reinterpret_cast<std::uintptr_t>(b.data);
  return a0 < b0 + b.span_bytes() && b0 < a0 + a.span_bytes();
}

// The tensor-map spec of a view: dims {cols, rows[, batch]} (rank 3 only for a batch).
// NOTE: a single row's stride is never followed, so the map gets the row's bytes rounded up to
// 16 (T6) whatever stride the view gives: a 1 x N matrix of any N needs no padding, and a
// stride past TMA's 2^40 bytes (one k-block of a 128-block scale_a) is not refused.
template <class P>
TensorMapSpec view_spec(const BasicTensorRef<P>& v, DataType map_type,
                        std::array<std::uint32_t, 3> box, Swizzle swizzle) {
  TensorMapSpec s;
  s.data_type = map_type;
  s.rank = v.batch > 1 ? 3 : 2;
  s.global_address = reinterpret_cast<std::uint64_t>(v.data);
  s.global_dim = {v.cols, v.rows, v.batch, 1, 1};
  const std::uint64_t row_pitch =
      v.rows > 1 ? v.row_pitch() : (v.cols * v.element_size() + 15) / 16 * 16;
  const std::uint64_t image_pitch =
      v.batch > 1 ? v.image_pitch() : (row_pitch * v.rows + 15) / 16 * 16;
  s.global_strides_bytes = {row_pitch, image_pitch, 0, 0};
  s.box_dim = {box[0], box[1], box[2], 1, 1};
  s.swizzle = swizzle;
  s.l2_promotion = L2Promotion::bytes256;
  s.oob_fill = OobFill::zero;
  return s;
}

// Tensor maps come from the process-wide descriptor cache: built once per distinct spec.
inline CUtensorMap cached_tensor_map(const TensorMapSpec& spec) {
  return default_tensor_map_cache().get(spec);
}

// Columns an output map covers: the most whose bytes are a multiple of 16 (the rest of a row
// is written with ordinary stores; see sm90_tile_stream.cuh on TMA's 16-byte store chunks).
inline std::uint64_t tma_store_cols(std::uint64_t cols, std::uint64_t element_bytes) {
  return cols * element_bytes / 16 * 16 / element_bytes;
}

inline int multiprocessor_count() {
  static PerDevice<int> known;
  return known.get([](int device) {
    int count = 0;
    TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  });
}

// Peak DRAM bandwidth of the current device in bytes per second, from its memory clock and
// bus width (double data rate): H100 SXM 3.35e12 (5120 bits at 2.6 GHz), H200 4.8e12 (6016
// bits at 3.2 GHz). What tells the memory systems apart where the measured best layout
// differs between them. Queried once per device, then remembered.
// NOTE: the memory clock attribute is not a cached value: the driver asks the GPU each time,
// far too slow to ask on every call (the GPU idles meanwhile).
inline double peak_dram_bytes_per_second() {
  static PerDevice<double> known;
  return known.get([](int device) {
    int bits = 0;
    int khz = 0;
    TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device));
    TMAKIT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device));
    return 2.0 * static_cast<double>(khz) * 1e3 * static_cast<double>(bits) / 8.0;
  });
}

// One CTA per run of `run` consecutive tiles (one tile for layouts of a single stage): the
// hardware hands runs out in order as CTAs finish. Past 2^31 - 1 runs the kernels' walk
// (for_each_tile) gives some CTAs more than one.
// `max_grid` (0: 2^31 - 1, the most a launch takes) caps the grid; kernels/grid_cap.hpp lets
// the GPU tests make small tensors exercise that walk.
inline unsigned tile_grid(std::int64_t tiles, int run = 1, std::int64_t max_grid_ctas = 0) {
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  const std::int64_t max_grid =
      max_grid_ctas > 0 && max_grid_ctas < kMaxGrid ? max_grid_ctas : kMaxGrid;
  const std::int64_t runs = (tiles + run - 1) / run;
  return static_cast<unsigned>(runs < max_grid ? runs : max_grid);
}

// Persistent grid: enough CTAs for `ctas_per_sm` per multiprocessor, never more than tiles.
inline unsigned persistent_grid(std::int64_t tiles, int ctas_per_sm) {
  const std::int64_t ctas = static_cast<std::int64_t>(multiprocessor_count()) * ctas_per_sm;
  return static_cast<unsigned>(tiles < ctas ? tiles : ctas);
}

// (KernelLaunch and ClusterLaunch, launch configurations with a cluster or a dependent
// launch: tmakit/core/cluster_launch.hpp; launch_kernel_ex below launches with one)

// Raises `Kernel`'s dynamic shared-memory limit to `bytes` on the current device, once per
// device (see PerDevice). Launchers call it before every launch; after the first on a
// device it costs one cudaGetDevice:
//   allow_dynamic_smem<my_kernel<T>>(kSmemBytes);
template <auto Kernel>
void allow_dynamic_smem(std::size_t bytes) {
  static PerDevice<bool> ready;
  ready.get([bytes](int) {
    TMAKIT_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes)));
    return true;
  });
}

// `Kernel` with its dynamic shared-memory limit raised as above: what a launcher passes to
// launch_kernel_ex when it picks one of several instantiations at run time:
//   auto* kernel = promote ? prepared_kernel<k<true>>(bytes) : prepared_kernel<k<false>>(bytes);
template <auto Kernel>
auto* prepared_kernel(std::size_t bytes) {
  allow_dynamic_smem<Kernel>(bytes);
  return Kernel;
}

// Whether the current device holds all of `l`'s grid at once in clusters of `Cluster` CTAs of
// `Kernel` (cudaOccupancyMaxActiveClusters with l's block, shared memory and stream; asked
// once per device). Call it after the kernel's shared-memory limit is raised
// (prepared_kernel). Where it does not, a clustered grid would run in more rounds than the
// plain one; where the device does not answer, false.
template <auto Kernel, unsigned Cluster>
bool clusters_fit(const KernelLaunch& l) {
  static PerDevice<int> known;  // the most clusters at once, plus 1 (0: not asked yet)
  const int most = known.get([&l](int) {
    cudaLaunchConfig_t c = l.config;
    cudaLaunchAttribute a{};
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = Cluster;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    c.attrs = &a;
    c.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, Kernel, &c) != cudaSuccess) {
      (void)cudaGetLastError();  // (not answered: launch without clusters)
      clusters = 0;
    }
    return clusters + 1;
  }) - 1;
  return static_cast<std::uint64_t>(l.config.gridDim.x) <=
         static_cast<std::uint64_t>(most) * Cluster;
}

// Throws CudaError for a failed launch (configuration errors surface here, not later).
inline void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw CudaError(static_cast<int>(e), std::string("launch of ") + kernel + " failed: " +
                                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

// cudaLaunchKernelEx with `l`'s configuration; a refused launch throws CudaError naming the
// kernel and, unlike TMAKIT_CUDA_CHECK, leaves no error behind for the next call's
// check_launch (the runtime also records the refusal as the thread's last error).
template <class... Params, class... Args>
void launch_kernel_ex(const KernelLaunch& l, void (*kernel)(Params...), const char* name,
                      Args&&... args) {
  const cudaError_t e = cudaLaunchKernelEx(&l.config, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(static_cast<int>(e), std::string("launch of ") + name + " failed: " +
                                             cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
  check_launch(name);
}

}  // namespace tmakit::detail
