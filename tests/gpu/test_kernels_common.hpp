// Shared pieces of the kernel GPU tests: skip without a GPU, pitched device images filled
// from host data, poisoned outputs, random host data.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/grid_cap.hpp"
#include "tmakit/kernels/detail/launch_support.hpp"
#include "tmakit/kernels/tensor_ref.hpp"

namespace tmakit::test {

// Empty when a Hopper GPU is usable; otherwise why not (the tests skip with it).
inline std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA driver/GPU: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA GPU present";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major != 9) {
    return "GPU 0 is not a Hopper (sm_90) device";
  }
  return "";
}

#define TMAKIT_SKIP_WITHOUT_GPU()                                              \
  do {                                                                         \
    const std::string why_ = ::tmakit::test::no_gpu_reason();                  \
    if (!why_.empty()) GTEST_SKIP() << "kernel GPU test skipped: " << why_;    \
  } while (0)

// Two-GPU tests: runs body(device) on devices 0, 1 and 0 again (what is set up per device
// must hold after switching back), device 0 current afterwards. The caller skips first
// when fewer than two GPUs are present (two_gpus_missing).
inline std::string two_gpus_missing() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) return "needs two GPUs";
  return "";
}
template <class Body>
void on_devices_0_1_0(Body&& body) {
  for (int device : {0, 1, 0}) {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    body(device);
    if (::testing::Test::HasFatalFailure()) break;
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

#define TMAKIT_SKIP_WITHOUT_TWO_GPUS()                                          \
  do {                                                                         \
    TMAKIT_SKIP_WITHOUT_GPU();                                                 \
    const std::string why2_ = ::tmakit::test::two_gpus_missing();              \
    if (!why2_.empty()) GTEST_SKIP() << why2_;                                 \
  } while (0)

constexpr std::uint8_t kPoison = 0xA5;

// A host image and its device twin with the same byte layout (batch x rows x row stride).
struct Image {
  DataType type = DataType::float32;
  std::uint64_t batch = 1, rows = 0, cols = 0, row_stride = 0, image_stride = 0;
  std::vector<std::uint8_t> host;
  void* device = nullptr;

  Image(DataType t, std::uint64_t b, std::uint64_t r, std::uint64_t c, std::uint64_t pad_bytes = 0)
      : type(t), batch(b), rows(r), cols(c) {
    const std::uint64_t row_bytes = c * static_cast<std::uint64_t>(element_bytes(t));
    // rows of several elements padded to 16 bytes (TMA), plus any extra padding asked for
    row_stride = (row_bytes + 15) / 16 * 16 + pad_bytes;
    image_stride = rows * row_stride;
    host.assign(bytes(), kPoison);
    EXPECT_EQ(cudaMalloc(&device, bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemset(device, kPoison, bytes()), cudaSuccess);
  }
  ~Image() { cudaFree(device); }
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  std::uint64_t bytes() const { return batch * image_stride; }
  TensorRef ref() const { return TensorRef(device, type, rows, cols, row_stride, batch, image_stride); }
  TensorRef host_ref() {
    return TensorRef(host.data(), type, rows, cols, row_stride, batch, image_stride);
  }
  // Random elements in the host copy (floats in [-1, 1), integers any bits), then upload.
  void randomize(std::uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const int e = element_bytes(type);
    for (std::uint64_t b = 0; b < batch; ++b) {
      for (std::uint64_t r = 0; r < rows; ++r) {
        for (std::uint64_t c = 0; c < cols; ++c) {
          std::uint8_t* p = host.data() + b * image_stride + r * row_stride + c * e;
          if (type == DataType::float32) {
            const float v = unit(gen);
            std::memcpy(p, &v, 4);
          } else if (type == DataType::float64) {
            const double v = static_cast<double>(unit(gen)) + static_cast<double>(unit(gen)) * 1e-7;
            std::memcpy(p, &v, 8);
          } else if (type == DataType::bfloat16 || type == DataType::float16) {
            // a float in [-1, 1) cut to its top 16 bits (bf16) or rounded by hand to a
            // normal fp16 with a small exponent: no NaN, no infinity
            const float v = unit(gen);
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            std::uint16_t h;
            if (type == DataType::bfloat16) {
              h = static_cast<std::uint16_t>(bits >> 16);
            } else {
              h = static_cast<std::uint16_t>((gen() & 0x83ff) | (0x3400 + (gen() % 8) * 0x400));
            }
            std::memcpy(p, &h, 2);
          } else {
            for (int k = 0; k < e; ++k) p[k] = static_cast<std::uint8_t>(gen());
          }
        }
      }
    }
    upload();
  }
  void upload() {
    ASSERT_EQ(cudaMemcpy(device, host.data(), bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<std::uint8_t> download() const {
    std::vector<std::uint8_t> out(bytes());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), device, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

// Compares device bytes with the expected host bytes (padding included: it must still hold
// the poison). Returns the number of differing elements; prints the first few.
inline std::uint64_t count_mismatches(const Image& img, const std::vector<std::uint8_t>& expect,
                                      const std::vector<std::uint8_t>& got) {
  std::uint64_t wrong = 0;
  const int e = element_bytes(img.type);
  for (std::uint64_t i = 0; i < got.size(); i += e) {
    if (std::memcmp(got.data() + i, expect.data() + i, e) != 0) {
      if (wrong < 5) {
        const std::uint64_t b = i / img.image_stride;
        const std::uint64_t r = i % img.image_stride / img.row_stride;
        const std::uint64_t c = i % img.row_stride / e;
        ADD_FAILURE() << "element mismatch at image " << b << " row " << r << " byte column "
                      << i % img.row_stride << " (element " << c << ")";
      }
      ++wrong;
    }
  }
  return wrong;
}

// Host memory from malloc with the byte layout of `like`: a pointer no kernel may be given.
class MallocImage {
 public:
  explicit MallocImage(const Image& like)
      : like_(like), bytes_(std::malloc(like.bytes())) {}
  ~MallocImage() { std::free(bytes_); }
  MallocImage(const MallocImage&) = delete;
  MallocImage& operator=(const MallocImage&) = delete;
  TensorRef ref() const {
    return TensorRef(bytes_, like_.type, like_.rows, like_.cols, like_.row_stride, like_.batch,
                     like_.image_stride);
  }

 private:
  const Image& like_;
  void* bytes_;
};

// `call` must throw ArgumentError naming `argument` and leave the CUDA context untouched (no
// error pending, the device still synchronizes).
template <class F>
void expect_pointer_refused(F&& call, const std::string& argument) {
  try {
    call();
    ADD_FAILURE() << "no ArgumentError for a malloc'd " << argument;
  } catch (const ArgumentError& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

// Caps the grids of the layouts that give each CTA its own tiles for its lifetime, so that a
// small tensor walks the path that grids past 2^31 - 1 CTAs need (CTAs taking several tiles).
class GridCap {
 public:
  explicit GridCap(std::int64_t ctas) { detail::grid_cap_for_tests().store(ctas); }
  ~GridCap() { detail::grid_cap_for_tests().store(0); }
  GridCap(const GridCap&) = delete;
  GridCap& operator=(const GridCap&) = delete;
};

}  // namespace tmakit::test
