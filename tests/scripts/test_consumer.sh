#!/usr/bin/env bash
# A separate project (examples/add_one) uses tmakit two ways, as a user would:
#   1. from an install tree: cmake --install, then find_package(tmakit) with CMAKE_PREFIX_PATH;
#   2. from source: FetchContent (add_subdirectory underneath), without GoogleTest or CLI11.
# Each build runs its program: the host part (the validator) everywhere, the kernel on a GPU.
# Usage: test_consumer.sh <tmakit source dir> <tmakit build dir>
set -uo pipefail
src=$(realpath "${1:?usage: test_consumer.sh <source dir> <build dir>}")
build=$(realpath "${2:?usage: test_consumer.sh <source dir> <build dir>}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
step() { echo "== $*"; }

# the program's own checks, then what every run must print
check_run() {  # check_run NAME BINARY
  local out rc
  out=$("$2" 2>&1)
  rc=$?
  echo "$out" | sed 's/^/   /'
  [ $rc -eq 0 ] || fail "$1: add_one exited $rc"
  grep -q "^validator: T6: globalStrides\[0\] = 4004 bytes" <<<"$out" ||
    fail "$1: the validator's message is missing"
  grep -qE "add_one: (no CUDA device here|.* each one larger: ok)" <<<"$out" ||
    fail "$1: neither the kernel's result nor the no-GPU notice was printed"
}

step "install into $work/prefix"
if cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1; then
  for f in lib/cmake/tmakit/tmakitConfig.cmake lib/cmake/tmakit/tmakitConfigVersion.cmake \
           lib/cmake/tmakit/tmakitTargets.cmake lib/libtmakit_host.a lib/libtmakit_kernels.a \
           lib/libtmakit_model.a include/tmakit/device/tile.hpp include/tmakit/kernels/gemm.hpp \
           bin/tmakit; do
    [ -e "$work/prefix/$f" ] || fail "install: $f missing"
  done
  "$work/prefix/bin/tmakit" rules >/dev/null 2>&1 || fail "install: the installed CLI does not run"
else
  cat "$work/install.log"
  fail "cmake --install failed"
fi

step "find_package(tmakit) from the install tree"
if cmake -S "$src/examples/add_one" -B "$work/installed" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/installed.log" 2>&1 &&
   cmake --build "$work/installed" >>"$work/installed.log" 2>&1; then
  check_run installed "$work/installed/add_one"
else
  tail -40 "$work/installed.log"
  fail "the find_package consumer did not build"
fi

step "the shared CUDA runtime where the consumer asks for it (CMAKE_CUDA_RUNTIME_LIBRARY)"
if cmake -S "$src/examples/add_one" -B "$work/shared" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CUDA_RUNTIME_LIBRARY=Shared \
     >"$work/shared.log" 2>&1 && cmake --build "$work/shared" >>"$work/shared.log" 2>&1; then
  # (whole outputs first: grep -q closing the pipe early would end nm with SIGPIPE)
  libs=$(ldd "$work/shared/add_one" 2>&1)
  symbols=$(nm --defined-only "$work/shared/add_one" 2>&1)
  grep -q "libcudart\.so" <<<"$libs" || fail "shared: add_one does not load libcudart.so"
  ! grep -qE " [Tt] cudaLaunchKernel$" <<<"$symbols" ||
    fail "shared: add_one holds a static copy of the runtime"
  grep -qE " [Tt] cudaLaunchKernel$" <<<"$(nm --defined-only "$work/installed/add_one" 2>&1)" ||
    fail "static: add_one (the default) holds no copy of the runtime: the check above proves nothing"
  check_run shared "$work/shared/add_one"
else
  tail -40 "$work/shared.log"
  fail "the shared-runtime consumer did not build"
fi

step "a C++-only project (no CUDA language) links tmakit::host and runs the validator"
mkdir -p "$work/cxx"
cat >"$work/cxx/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(cxx_only LANGUAGES CXX)
find_package(tmakit 0.1 REQUIRED)
add_executable(judge main.cpp)
target_link_libraries(judge PRIVATE tmakit::host)
CMAKE
cat >"$work/cxx/main.cpp" <<'CPP'
#include <cstdio>

#include "tmakit/host/spec_json.hpp"
#include "tmakit/host/validate.hpp"

int main() {
  const auto spec = tmakit::parse_spec_json(
      R"({"dataType":"FLOAT32","globalAddress":4096,"globalDim":[1024,512],)"
      R"("globalStrides":[4096],"boxDim":[25,32]})");
  const auto violation = tmakit::find_violation(spec);
  std::puts(violation ? violation->what() : "ok");
  return violation ? 0 : 1;
}
CPP
if cmake -S "$work/cxx" -B "$work/cxx/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
     >"$work/cxx.log" 2>&1 && cmake --build "$work/cxx/build" >>"$work/cxx.log" 2>&1; then
  out=$("$work/cxx/build/judge" 2>&1)
  echo "   $out"
  grep -q "^T7: boxDim\[0\]\*4 = 100 bytes is not a multiple of 16; use 24 or 28$" <<<"$out" ||
    fail "cxx: the validator's verdict is not T7's"
else
  tail -40 "$work/cxx.log"
  fail "the C++-only consumer did not build"
fi

step "a CUDA target built for another architecture fails with a message naming the setting"
mkdir -p "$work/sm80"
sed 's/CUDA_ARCHITECTURES 90a/CUDA_ARCHITECTURES 80/' "$src/examples/add_one/CMakeLists.txt" \
  >"$work/sm80/CMakeLists.txt"
cp "$src/examples/add_one/add_one.cu" "$work/sm80/"
if cmake -S "$work/sm80" -B "$work/sm80/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
     >"$work/sm80.log" 2>&1 && cmake --build "$work/sm80/build" >>"$work/sm80.log" 2>&1; then
  fail "sm80: a build for sm_80 went through"
elif ! grep -q "needs sm_90a: in CMake set_target_properties(<target> PROPERTIES CUDA_ARCHITECTURES 90a)" \
     "$work/sm80.log"; then
  tail -20 "$work/sm80.log"
  fail "sm80: the error does not name CUDA_ARCHITECTURES 90a"
fi

step "find_package(tmakit 9.0) is refused by the version file"
mkdir -p "$work/v9"
cat >"$work/v9/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(v9 LANGUAGES CXX)
find_package(tmakit 9.0 REQUIRED)
CMAKE
if cmake -S "$work/v9" -B "$work/v9/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
     >"$work/v9.log" 2>&1; then
  fail "find_package(tmakit 9.0) was accepted"
fi

step "FetchContent from the source tree (no GoogleTest, no CLI11 needed; the consumer's warnings-as-errors)"
if cmake -S "$src/examples/add_one" -B "$work/fetched" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DTMAKIT_SOURCE_DIR="$src" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
     -DCMAKE_COMPILE_WARNING_AS_ERROR=ON \
     -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON >"$work/fetched.log" 2>&1 &&
   cmake --build "$work/fetched" --target add_one >>"$work/fetched.log" 2>&1; then
  check_run fetched "$work/fetched/add_one"
  [ ! -e "$work/fetched/_deps/tmakit-build/tools" ] || fail "fetched: the CLI was configured"
  [ ! -e "$work/fetched/_deps/tmakit-build/tests" ] || fail "fetched: the tests were configured"
else
  tail -40 "$work/fetched.log"
  fail "the FetchContent consumer did not build"
fi

if [ $failed -eq 0 ]; then echo "consumer: all steps passed"; else echo "consumer: $failed failed"; fi
[ $failed -eq 0 ]
