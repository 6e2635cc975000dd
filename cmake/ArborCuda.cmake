# Decides whether the CUDA backend is built (ARBOR_WITH_CUDA) and with NCCL (ARBOR_WITH_NCCL).
# Sets ARBOR_CUDA_ENABLED and ARBOR_NCCL_ENABLED for the folders.
include(CheckLanguage)

set(ARBOR_CUDA_ENABLED OFF)
if(NOT ARBOR_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(_arbor_nvcc nvcc HINTS /usr/local/cuda/bin)
    if(_arbor_nvcc)
      set(CMAKE_CUDA_COMPILER ${_arbor_nvcc})
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # 90: Hopper (H100/H200), the primary target — wgmma-era tensor cores and HBM3.
      # 80: Ampere (A100), still the most deployed data-centre GPU.
      set(CMAKE_CUDA_ARCHITECTURES 90 80)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 dialect for nvcc
    find_package(CUDAToolkit REQUIRED)
    set(ARBOR_CUDA_ENABLED ON)
  elseif(ARBOR_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ARBOR_WITH_CUDA=ON but no nvcc was found; put it on PATH or set "
                        "CMAKE_CUDA_COMPILER, or configure with -DARBOR_WITH_CUDA=OFF")
  endif()
endif()

set(ARBOR_NCCL_ENABLED OFF)
if(ARBOR_CUDA_ENABLED AND NOT ARBOR_WITH_NCCL STREQUAL "OFF")
  find_library(ARBOR_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(ARBOR_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(ARBOR_NCCL_LIBRARY AND ARBOR_NCCL_INCLUDE)
    set(ARBOR_NCCL_ENABLED ON)
  elseif(ARBOR_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "ARBOR_WITH_NCCL=ON but libnccl/nccl.h were not found")
  endif()
elseif(ARBOR_WITH_NCCL STREQUAL "ON")
  message(FATAL_ERROR "ARBOR_WITH_NCCL=ON needs the CUDA backend (ARBOR_WITH_CUDA)")
endif()
message(STATUS "arbor: CUDA backend ${ARBOR_CUDA_ENABLED}, NCCL ${ARBOR_NCCL_ENABLED}")
