# NOTE: CMake 3.25 knows the feature cuda_std_20 but no nvcc flag for it, so a CUDA target that
# requires C++20 fails to generate ("CMake does not know the flags to enable it"). nvcc 12+
# takes -std=c++20: give CMake that flag where it has none. Included by tmakit's own build and
# by tmakitConfig.cmake, so every directory that compiles tmakit's headers sees it; cached, so
# that a find_package(tmakit) inside a function (whose variables end with it) still gives it.
macro(tmakit_define_cuda20_flag)
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc's C++20 flag")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc's C++20 flag")
  endif()
endmacro()
tmakit_define_cuda20_flag()
