// Baselines for `tmakit bench`: the seed write-ups' kernels written the way they describe
// them, and vendor libraries (cuBLAS geam, cuDNN) loaded at run time (vendor_library.hpp), so
// the binary starts on a machine without them and says why a baseline is missing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tmakit/core/dtype.hpp"
#include "tmakit/kernels/stencil3x3.hpp"

namespace tmakit::bench {

// The transpose write-up's three kernels: fp32, one 32x32 tile per block, two tensor maps.
// naive: tile transposed through shared memory, TMA store of the mirrored tile;
// swizzled: both maps with the 128B swizzle, indices through the swizzle function;
// batched: swizzled, each thread moving 8 elements.
enum class SeedTranspose { naive, swizzled, batched };
// rows and cols must be multiples of 32 (the write-up's kernels assume it); dense.
void seed_transpose(SeedTranspose variant, const float* in, float* out, std::uint64_t rows,
                    std::uint64_t cols, cudaStream_t stream);

// The convolution write-up's kernel: the input already padded by one zero element on each
// side, (rows + 2) x (cols + 2), one TMA copy of a 34 x 34 tile per block, one output per
// thread, ordinary stores. fp64; rows, cols multiples of 32.
void seed_conv3x3_padded(const double* padded, double* out, std::uint64_t rows,
                         std::uint64_t cols, const Filter3x3& filter, cudaStream_t stream);
// The padded copy that kernel needs (made once, outside the timed region).
void make_padded_copy(const double* in, double* padded, std::uint64_t rows, std::uint64_t cols,
                      cudaStream_t stream);

// The FP8 GEMM write-up's kernel written its way (the GEMM table's floor): D = scale A B^T,
// A M x K and B N x K e4m3 (dense, K a multiple of 16), D M x N bf16 (dense); one CTA per
// 64 x 128 tile, two TMA stages, no warp specialisation.
void seed_gemm_fp8(const std::uint8_t* a, const std::uint8_t* b, __nv_bfloat16* d,
                   std::uint64_t m, std::uint64_t n, std::uint64_t k, float scale,
                   cudaStream_t stream);

// The GEMM table's compute ceiling (sm90_tensor_floor.cu): one CTA per SM (`grid`) runs its
// share of ceil(flops / (2 x 128 x 256 x 128)) k-blocks of m64n256k32 wgmmas on random e4m3
// operands that stay in shared memory: no loads, no promotion, no epilogue. Each CTA writes
// its two warpgroups' first sums and its k-block count to `out` (3 x grid floats);
// check_tensor_floor reads them back and says what is wrong ("" when every CTA ran its share).
inline constexpr std::uint32_t kTensorFloorRestart = 8;  // k-blocks chained into one sum
// Its operands as shared memory holds them (128B swizzle), copied in by every CTA first:
// the caller puts tensor_floor_image() in device memory once and passes it as `image`.
inline constexpr std::size_t kTensorFloorImageBytes = (128 + 256) * 128;
std::vector<std::uint8_t> tensor_floor_image();
std::uint64_t tensor_floor_k_blocks(std::uint64_t flops);
void tensor_floor(const void* image, std::uint64_t flops, unsigned grid, float* out,
                  cudaStream_t stream);
std::string check_tensor_floor(const float* out, std::uint64_t flops, unsigned grid);

// The plain CUDA add-constant: 16-byte loads and stores through registers, no TMA (dense,
// 16-byte aligned, a whole number of 16-byte vectors; Error otherwise).
void plain_add_int32(const std::int32_t* in, std::int32_t* out, std::uint64_t count,
                     std::int32_t value, cudaStream_t stream);
// The same with one block per 16 KB chunk instead of a grid-stride loop.
void plain_add_int32_chunks(const std::int32_t* in, std::int32_t* out, std::uint64_t count,
                            std::int32_t value, cudaStream_t stream);
// The classic shared-memory transpose (4-byte accesses through registers), one block of 32 x 8
// threads per tile x tile tile, tile 32 or 64; rows and cols multiples of the tile, dense.
void plain_transpose_f32(int tile, const float* in, float* out, std::uint64_t rows,
                         std::uint64_t cols, cudaStream_t stream);
// The access pattern of a transpose alone, a probe of what the memory gives that pattern: tiles
// of tile_rows x tile_bytes (powers of two) walked down the columns of tiles (or row-major),
// each 16-byte chunk copied whole to the output rows and columns the tile's transpose covers,
// `ilp` chunks per thread in flight. Not a transpose: count_transpose_pattern_errors checks
// that every chunk landed where the pattern puts it. Whole tiles only (Error otherwise), dense.
struct TransposePattern {
  int tile_rows = 64;
  int tile_bytes = 256;
  bool row_major = false;
  int ilp = 1;
};
void transpose_pattern(const TransposePattern& t, const void* in, void* out, std::uint64_t rows,
                       std::uint64_t cols, int element_bytes, cudaStream_t stream);
std::uint64_t count_transpose_pattern_errors(const TransposePattern& t, const void* in,
                                             const void* out, std::uint64_t rows,
                                             std::uint64_t cols, int element_bytes,
                                             cudaStream_t stream);

// cuBLAS ?geam as a transpose: out (cols x rows) = in^T, float32 or float64, dense.
class CublasGeam {
 public:
  CublasGeam();
  ~CublasGeam();
  CublasGeam(const CublasGeam&) = delete;
  CublasGeam& operator=(const CublasGeam&) = delete;
  // Empty when usable; else why not (Status::unavailable's detail).
  const std::string& unavailable() const { return why_; }
  const std::string& library() const { return path_; }
  void transpose(DataType type, const void* in, void* out, std::uint64_t rows,
                 std::uint64_t cols, cudaStream_t stream);

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  std::string why_;
  std::string path_;
};

// cuDNN's forward convolution as a 3x3 stencil (NCHW, one channel, pad 1, cross-correlation,
// the fastest algorithm cudnnFindConvolutionForwardAlgorithm reports).
class CudnnConv {
 public:
  CudnnConv();
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  // Empty when usable; else why not (Status::unavailable's detail).
  const std::string& unavailable() const { return why_; }
  const std::string& library() const { return path_; }
  // Plans for one shape; returns "" or why it cannot (Status::unavailable's detail).
  std::string plan(DataType type, std::uint64_t batch, std::uint64_t rows, std::uint64_t cols,
                   const Filter3x3& filter, cudaStream_t stream);
  std::string algorithm() const;  // of the last plan
  void run(const void* in, void* out, cudaStream_t stream);

 private:
  struct Api;
  struct Plan;
  std::unique_ptr<Api> api_;
  std::unique_ptr<Plan> plan_;
  std::string why_;
  std::string path_;
};

}  // namespace tmakit::bench
