// FP8 GEMM on TMA + wgmma: D = alpha * scale_a * scale_b * (A * B^T), A M x K and B N x K
// e4m3 (both K-major: rows of K bytes), fp32 accumulation, D M x N bf16 or fp16, rounded to
// nearest even once. Design, configurations and measured figures: kernels/gemm/README.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit {

// Per-tensor scales as cuBLASLt applies them (CUBLASLT_MATMUL_DESC_A/B_SCALE_POINTER):
// D = alpha * scale_a * scale_b * (A * B^T), each of scale_a and scale_b a host value or one
// float in device memory.
//
// Host values are read by gemm_fp8 when it is called (a captured graph keeps them).
// scale_a_device / scale_b_device, when not null, point to one float (4-byte aligned) in
// device memory that the kernel reads in place of scale_a / scale_b (which must then be left
// at 1). The kernel reads it once, after the work before it in the stream is complete (the
// kernel before it may have written it, e.g. a dynamic-scaling amax), so a call needs no
// host synchronisation, and each replay of a captured CUDA graph reads the value current
// then. The product alpha * scale_a * scale_b is formed in double, in that order, and
// rounded once to float, as for host values; a device value is not checked (not finite, or
// a product out of float's range, gives a D that is not finite or 0).
//
// Row-wise and 128-block scales (GemmScales::recipe; kernels/gemm/README.md, "Scale recipes")
// are float32 arrays in device memory, read by the kernel in the same way (after the work
// before it, each graph replay the values current then): scale_a_device and scale_b_device
// point to them, their strides in elements are scale_a_strides and scale_b_strides, and
// scale_a and scale_b stay 1.
//   row:   scale_a[m] per row of A (M floats: torch._scaled_mm's scale_a (M, 1)) and
//          scale_b[n] per row of B (N floats: scale_b (1, N)); D[m][n] is the fp32 sum times
//          (alpha * scale_a[m]) * scale_b[n], each product rounded to float.
//   block: scale_a[m][kb] per 1 x 128 of A along K (M x ceil(K / 128)) and scale_b[nb][kb]
//          per 128 x 128 block of B (ceil(N / 128) x ceil(K / 128)), DeepSeek-V3's recipe:
//          each 128-deep partial sum of the tensor cores (k-block kb, the last one K's
//          remainder) is multiplied by scale_a[m][kb] * scale_b[n / 128][kb] and added into
//          the fp32 sums (one fused multiply-add), which alpha scales at the end.
//          GemmAccumulation::promoted only: the scales are applied at each promotion.
//          scale_a M-major, 16-byte aligned, its columns a multiple of 4 floats apart (torch's
//          layout where M is a multiple of 4; DeepGEMM's) is loaded by TMA, four k-blocks a
//          box, and the two-wave configurations take it (GemmProblem::block_scale_a_tma); any
//          other layout is copied by a warp of the tiled kernel, which is slower. With it,
//          scale_b K-major, 16-byte aligned, its rows a multiple of 4 floats apart (torch's
//          layout where K is a multiple of 512; DeepGEMM's) is loaded by TMA too; any other
//          layout is copied by one thread, slower at M <= 128.
enum class GemmScaleRecipe { tensor, row, block };

// A scale array's strides in elements: `mn` from one row of A (or B, or 128 rows of B for
// block scales) to the next, `k` from one k-block of 128 to the next (block scales only). -1
// in both: the layout torch._scaled_mm takes: row scale_a (M, 1) and scale_b (1, N)
// contiguous (mn = 1); block scale_a M-major (mn = 1, k = M) and scale_b row-major
// (mn = ceil(K / 128), k = 1). Any other strides >= 0 are taken as given (0 repeats a value);
// row scales take k = -1 beside a given mn too (k is never followed there: the quantizer's
// row layout, {mn, -1}).
struct GemmScaleStrides {
  std::int64_t mn = -1;
  std::int64_t k = -1;
};

struct GemmScales {
  float alpha = 1.0f;
  float scale_a = 1.0f;
  float scale_b = 1.0f;
  const float* scale_a_device = nullptr;
  const float* scale_b_device = nullptr;
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
  GemmScaleStrides scale_a_strides{};
  GemmScaleStrides scale_b_strides{};
};

// How the fp32 sums are formed. The tensor cores' fp8 accumulation keeps fewer bits than
// fp32 (about 14 below the largest term of a sum, kernels/gemm/README.md):
//   promoted: each 128- or 256-deep partial sum of the tensor cores is added into fp32
//     registers (cuBLASLt's default): element errors within 2^-10 of sum |a b| at any K
//     (2^-13 per 32 of K in a partial: 2^-11 where the partials are 128 deep, every
//     configuration but those of the two-wave kernel, m256n128, m128n256w and m192n128,
//     which promote every 256 of K; with 128-block scales every configuration promotes
//     every 128).
//   fast: the tensor cores accumulate across all of K in their own accumulator, as cuBLASLt
//     with CUBLASLT_MATMUL_DESC_FAST_ACCUM (torch._scaled_mm's use_fast_accum): fewer
//     instructions, and the registers promotion needs go to 128 x 256 tiles ("m128n256",
//     chosen where they fill the GPU) or to a whole 128 x 128 tile per math warpgroup
//     ("m128n128pp", the two taking turns, chosen at K <= 4096 where such tiles number at
//     least twice the SMs; "m128n128ppd", the same with both halves of D staged, at K <=
//     512); an error that grows with K (the GPU tests bound an element's by 2^-13 of sum |a b|
//     per 32 of K, at least 2^-11). Every configuration that promotes (all but m128n256,
//     m128n128pp and m128n128ppd) runs both modes.
enum class GemmAccumulation { promoted, fast };

struct GemmTuning {
  // tile configuration: an id of the table in kernels/gemm/README.md ("Configurations"),
  // e.g. gemm_config_id("m128n128"); -1: chosen per shape by the plan
  int config = -1;
  // K splits per output tile; 0: chosen per shape, 1: no split. The small-M configurations
  // ("smallm", which the plan takes for M <= 64, and "smallm128") split over a cluster of 1,
  // 2, 4 or 8 CTAs only ("smallm128" not at all).
  // NOTE: the plan splits every tile only where every split of every tile has an SM of its
  // own, and past one round only a last round's few tiles, four ways, at long K (a split
  // tail: GemmPlan::split_tiles); a split asked for applies to every tile, and with config
  // -1 the plan keeps to configurations that take it (rule K1). Splits forced past
  // one round run in rounds, each tile's last split summing the others' partials before its
  // CTA goes on: far slower (kernels/gemm/EXPERIMENTS.md, "Splitting K further").
  int splits = 0;
  // Programmatic dependent launch: the kernel may start while the kernel before it in the
  // stream finishes, and sets up its shared memory meanwhile; it waits for that kernel to
  // complete (and its writes to be visible) before it reads A or B or writes D, so results
  // are the same either way (the small-M kernel may ask the L2 to prefetch B before it
  // waits: that fills the L2 only, through which its later loads read the current data).
  // It lets the next kernel start the same way: a kernel of yours launched after it as a
  // programmatic dependent (cudaLaunchAttributeProgrammaticStreamSerialization) must run
  // griddepcontrol.wait (cudaGridDependencySynchronize) before it reads D, as the CUDA
  // programming guide requires of any dependent; an ordinary launch after it waits as
  // always. false: an ordinary launch.
  bool overlap_launch = true;
  GemmAccumulation accumulation = GemmAccumulation::promoted;
};

// The number of configuration ids (GemmTuning::config), 0..kGemmConfigs - 1; one of them
// ("m128n128c2") is retired.
inline constexpr int kGemmConfigs = 16;
// A configuration's name ("m64n128", "m128n128", "smallm", ...: kernels/gemm/README.md,
// "Configurations"), "?" outside 0..kGemmConfigs - 1.
const char* gemm_config_name(int config);
// The id of a configuration's name, -1 for none.
int gemm_config_id(const std::string& name);
// Whether a caller may force this configuration: false outside 0..kGemmConfigs - 1 and for
// the retired one ("m128n128c2": forcing it throws ArgumentError "tuning.config" saying why).
bool gemm_config_built(int config);
// A configuration as a caller sees it (its row of the table; kernels/gemm/README.md,
// "Configurations"); for ids outside 0..kGemmConfigs - 1, name "?" and built false.
struct GemmConfigInfo {
  const char* name = "?";
  bool built = false;
  int block_m = 0, block_n = 0;  // the tile (block_m 0: the small-M kernel, block_n rows of B)
  bool promotes = false;         // runs GemmAccumulation::promoted (every built one runs fast)
  bool splits_k = false;         // takes GemmTuning::splits > 1
  bool block_scales = false;     // applies GemmScaleRecipe::block (every one applies row)
  // applies GemmScaleRecipe::block where scale_a is as GemmProblem::block_scale_a_tma says
  bool block_scales_tma = false;
  std::uint64_t max_m = 0;       // the largest M it takes (0: any)
  const char* what = "";         // what it is for, one line
};
GemmConfigInfo gemm_config_info(int config);

// Everything that decides what a call runs: the shape, D's row pitch, the tuning and the
// device's facts. gemm_fp8 plans its calls from one (gemm_fp8_plan below returns exactly
// what it runs, but for a call captured into a CUDA graph on a stream whose split-K
// workspace is too small, which runs the plan of GemmTuning::splits = 1: see gemm_fp8).
struct GemmProblem {
  std::uint64_t m = 0, n = 0, k = 0;
  // D's row pitch in bytes, 0: dense (N * 2). D's rows decide whether TMA can store them.
  std::uint64_t d_row_pitch_bytes = 0;
  int sm_count = 0;
  // the device's peak DRAM bandwidth (bytes/s; 0: not known), which decides the small-M
  // kernel's L2 prefetch
  double dram_bytes_per_second = 0;
  GemmTuning tuning{};
  // how the scales apply: 128-block scales take the configurations that promote every 128
  // of K and whose tiles' 64-column pieces of B lie within one 128-row block (m64n32, m64n64,
  // m64n128, m128n128, m128n192; and m256n128, m128n256w, m192n128 where block_scale_a_tma)
  GemmScaleRecipe recipe = GemmScaleRecipe::tensor;
  // 128-block scale_a that TMA can load (M-major columns 16-byte aligned and a whole number
  // of 16-byte chunks apart: torch's layout where M is a multiple of 4, DeepGEMM's): the
  // two-wave kernel's configurations (m256n128, m128n256w, m192n128) take 128-block scales too
  bool block_scale_a_tma = false;
};

// What the launcher runs for a problem.
struct GemmPlan {
  int config = 0;
  int splits = 1;          // K split this many ways in each of the split tiles
  std::int64_t tiles = 0;  // output tiles
  // CTAs launched. The tiled and two-wave kernels (persistent): at most one per SM, and where
  // whole tiles take several rounds as few as take the same number of rounds. The small-M
  // kernel: one per tile and split, tiles * splits, which may exceed the SMs.
  unsigned grid = 0;
  // the last tiles in the schedule's order that split K: all of them when K is split for
  // every tile, a last round's few tiles where the plan splits only those (a split tail)
  std::int64_t split_tiles = 0;
  // D through shared memory and TMA stores (its rows whole 16-byte chunks), else plain stores
  bool d_tma_store = true;
  // the small-M kernel: k-blocks of B each CTA asks the L2 for before it waits for the kernel
  // before it (0: none)
  int prefetch_k_blocks = 0;
  // the ids of the rules that chose the configuration and the splits (kernels/gemm/README.md,
  // "The plan's rules"; cluster_rule below)
  const char* config_rule = "";
  const char* splits_rule = "";
  // CTAs per cluster of the launch: the small-M kernel's splits of K; 2 for the tiled kernel
  // where each pair of neighbouring CTAs reads the same tiles of B (placed on one GPC); else 1
  int cluster = 1;
  const char* cluster_rule = "";
};
// Throws ArgumentError for M, N or K of 0, sm_count < 1, or a tuning out of range or that
// the configuration cannot run (naming the GemmTuning field).
GemmPlan gemm_fp8_plan(const GemmProblem& problem);
// The same for a dense D on a device of `sm_count` SMs whose bandwidth is not known.
GemmPlan gemm_fp8_plan(std::uint64_t m, std::uint64_t n, std::uint64_t k, int sm_count,
                       const GemmTuning& tuning = {});

// D = alpha * scale_a * scale_b * (A * B^T).
//   a: M x K, type UINT8 holding e4m3 bits (fp8 travels as UINT8: rule T2), K-major;
//   b: N x K, the same; d: M x N, BFLOAT16 or FLOAT16.
// M, N >= 1 (and at most 2^31 - 4096); K a multiple of 16 (TMA's 16-byte rows). A and B:
// 16-byte aligned data and row strides (0: dense); D: 16-byte aligned data, any row stride
// of whole elements. D must not overlap A or B. alpha * scale_a * scale_b (host values),
// formed in double, must round to a finite float that is 0 only when the product is (the
// kernel scales by that float); device-side scales: see GemmScales. A, B, D and device-side
// scales must be memory the current device can use (cudaMalloc, managed, mapped pinned, a
// peer's with access enabled): malloc'd host memory is refused. Throws ArgumentError naming
// the argument before anything is written; CudaError if the launch fails. Asynchronous on
// `stream`.
// NOTE: speed: A's and B's row strides are best multiples of 32 bytes. With a stride that is
// an odd multiple of 16 (dense rows with K = 4112, 6160, ...) every other row starts halfway
// into a 32-byte sector, which makes calls far slower (kernels/gemm/EXPERIMENTS.md, "Row
// strides").
// NOTE: split-K shapes (gemm_fp8_plan(...).splits > 1 outside the small-M configurations) sum partial
// tiles through a workspace the library keeps per stream (per device and stream handle, and
// per host thread for cudaStreamPerThread): calls on different streams share nothing and may
// run at the same time; calls on one stream take turns, as the stream orders them. A
// stream's workspace is grown when a call needs more (cudaMalloc, and a cudaMemsetAsync on
// the stream) and never shrunk; the buffers it outgrows stay allocated, since a CUDA graph
// that captured a call may keep using the buffers it saw. All of them stay until
// gemm_fp8_release_workspace(stream). Nothing is allocated during a CUDA graph capture: a
// call captured on a stream whose workspace would have to grow runs without a split of K
// where the plan chose the split (GemmTuning::splits 0: correct, and slower where the split
// paid), and is refused where `tuning` asks for the split (ArgumentError "stream", the
// capture left usable). To capture the split, make the same call on that stream once before
// capturing. A graph that captured a split-K call keeps the capturing stream's workspace
// wherever it is launched: launches of graphs captured on one stream, and that stream's own
// split-K calls, take turns (one stream, or events between them), as for cuBLAS's workspace;
// graphs captured on different streams may run at the same time. The host side is
// thread-safe. (quantize_fp8's tensor recipe keeps three counters in the same workspace.)
void gemm_fp8(ConstTensorRef a, ConstTensorRef b, TensorRef d, const GemmScales& scales = {},
              cudaStream_t stream = nullptr, const GemmTuning& tuning = {});

// gemm_fp8's checks of its arguments without its views' data pointers (which may be null):
// what a framework tracing a call before its memory exists (torch.compile's fake tensors) can
// check. Throws the ArgumentError gemm_fp8 would for anything but the addresses (null,
// alignment, overlap, memory the device cannot use), as if each view had memory of its own.
void gemm_fp8_check_shapes(ConstTensorRef a, ConstTensorRef b, TensorRef d,
                           const GemmScales& scales = {}, const GemmTuning& tuning = {});

// Frees the split-K workspace `stream` holds on the current device (see gemm_fp8), after
// waiting for the stream's work. Call it when a stream that made split-K calls is about to be
// destroyed, or to give the memory back, and only once no CUDA graph that captured a split-K
// call on `stream` will be launched again (its buffers would be gone). A later call on the
// stream allocates anew. Nothing to do for a stream that holds none.
void gemm_fp8_release_workspace(cudaStream_t stream);

namespace reference {
// The e4m3 value of a byte (NaN for 0x7F and 0xFF; no infinities), exact in float.
float e4m3_to_float(std::uint8_t bits);
// CPU reference over host memory: fp32 products of the dequantised inputs summed in fp64,
// scaled by the same float scale as gemm_fp8, written to `d_out` as float (M x N, dense,
// row-major). Same argument layout as gemm_fp8 (a, b host views; strides honoured, any K);
// throws ArgumentError for null pointers, types other than UINT8, a.cols != b.cols, empty
// extents, row strides shorter than a row, scales gemm_fp8 refuses, or device-side scales
// (pass their values as scale_a / scale_b). Row-wise and 128-block scales: scale_a_device and
// scale_b_device point to the arrays in HOST memory here (same strides); row: each sum times
// (alpha * scale_a[m]) * scale_b[n] (float products); block: each 128-deep sum (fp64) times
// scale_a[m][kb] * scale_b[n / 128][kb] (a float product), summed in fp64, times alpha.
void gemm_fp8(ConstTensorRef a, ConstTensorRef b, float* d_out, const GemmScales& scales);
}  // namespace reference

}  // namespace tmakit
