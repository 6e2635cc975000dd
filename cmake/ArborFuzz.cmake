# libFuzzer targets. The main build uses g++, which has no libFuzzer, so each fuzz target is
# compiled by clang++ (Debian clang with libclang-rt-dev) through custom commands: every source
# the target needs is compiled again into the fuzz executable with -fsanitize=fuzzer,address,
# one object per source (header dependencies tracked through depfiles), then linked against the
# system libraries named by pkg-config. This needs no second configure and rebuilds only what
# changed. When clang++ or the libFuzzer runtime is missing, fuzz targets are skipped with a
# message and `make test` runs everything else.
#
# arbor_add_fuzz_target(NAME <name> SOURCES <files...> [PKG <pkg-config modules...>]
#                       [SEEDS <seed corpus dir>] [SECONDS <run time, default 12>]
#                       [DEPENDS <targets that generate sources>])
#   SOURCES  the fuzz entry point (defines LLVMFuzzerTestOneInput) and every project .cc file
#            it calls, relative to the calling CMakeLists.txt or absolute.
#   PKG      pkg-config modules to link (e.g. absl_status absl_strings libpcre2-8); header-only
#            libraries found on the system include path (nlohmann_json) need nothing.
#   SEEDS    a directory of seed inputs; libFuzzer only reads it (new inputs go to the build tree).
# Registers ctest `<name>` with LABEL fuzz running the target for SECONDS on the seeds.

set(ARBOR_FUZZ_CXX "" CACHE FILEPATH "clang++ used to build libFuzzer targets (empty: search)")
if(NOT ARBOR_FUZZ_CXX)
  find_program(ARBOR_FUZZ_CXX_FOUND NAMES clang++ clang++-16 clang++-15 clang++-14)
  if(ARBOR_FUZZ_CXX_FOUND)
    set(ARBOR_FUZZ_CXX ${ARBOR_FUZZ_CXX_FOUND} CACHE FILEPATH "" FORCE)
  endif()
endif()

set(ARBOR_FUZZ_ENABLED OFF)
if(ARBOR_FUZZ_CXX)
  # Probe once: the compiler exists on many machines without the libFuzzer runtime.
  set(_probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/arbor_fuzz_probe)
  file(WRITE ${_probe_dir}/probe.cc
       "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(
      COMMAND ${ARBOR_FUZZ_CXX} -fsanitize=fuzzer,address ${_probe_dir}/probe.cc
              -o ${_probe_dir}/probe
      RESULT_VARIABLE _probe_result OUTPUT_QUIET ERROR_QUIET)
  if(_probe_result EQUAL 0)
    set(ARBOR_FUZZ_ENABLED ON)
  endif()
endif()
if(ARBOR_FUZZ_ENABLED)
  message(STATUS "Fuzz targets: built with ${ARBOR_FUZZ_CXX}")
else()
  message(STATUS "Fuzz targets: skipped (no clang++ with the libFuzzer runtime)")
endif()

function(arbor_add_fuzz_target)
  cmake_parse_arguments(F "" "NAME;SEEDS;SECONDS" "SOURCES;PKG;DEPENDS" ${ARGN})
  if(NOT F_NAME OR NOT F_SOURCES)
    message(FATAL_ERROR "arbor_add_fuzz_target: NAME and SOURCES are required")
  endif()
  if(NOT ARBOR_FUZZ_ENABLED)
    return()
  endif()
  if(NOT F_SECONDS)
    set(F_SECONDS 12)
  endif()

  set(link_flags "")
  if(F_PKG)
    execute_process(COMMAND ${PKG_CONFIG_EXECUTABLE} --libs ${F_PKG}
                    OUTPUT_VARIABLE pkg_libs OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE pkg_result)
    if(NOT pkg_result EQUAL 0)
      message(FATAL_ERROR "arbor_add_fuzz_target(${F_NAME}): pkg-config --libs ${F_PKG} failed")
    endif()
    separate_arguments(link_flags UNIX_COMMAND "${pkg_libs}")
  endif()

  # The generated protobuf headers (gen/) are visible, for parsers that produce messages.
  set(flags -std=c++20 -O1 -g -fsanitize=fuzzer,address -fno-omit-frame-pointer
            -I${CMAKE_SOURCE_DIR} -I${CMAKE_BINARY_DIR}/gen)
  set(work_dir ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}.dir)
  set(objects "")
  foreach(source IN LISTS F_SOURCES)
    get_filename_component(source_path ${source} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH relative ${CMAKE_SOURCE_DIR} ${source_path})
    string(REPLACE "/" "_" object_name ${relative})
    set(object ${work_dir}/${object_name}.o)
    add_custom_command(
        OUTPUT ${object}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${work_dir}
        COMMAND ${ARBOR_FUZZ_CXX} ${flags} -MD -MF ${object}.d -c ${source_path} -o ${object}
        DEPENDS ${source_path}
        DEPFILE ${object}.d
        COMMENT "Compiling ${relative} for fuzz target ${F_NAME}"
        VERBATIM)
    list(APPEND objects ${object})
  endforeach()

  set(binary ${CMAKE_BINARY_DIR}/fuzz/${F_NAME})
  add_custom_command(
      OUTPUT ${binary}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/fuzz
      COMMAND ${ARBOR_FUZZ_CXX} -fsanitize=fuzzer,address ${objects} ${link_flags} -o ${binary}
      DEPENDS ${objects}
      COMMENT "Linking fuzz target ${F_NAME}"
      VERBATIM)
  add_custom_target(${F_NAME} ALL DEPENDS ${binary})
  if(F_DEPENDS)  # Targets that generate some of the sources (e.g. arbor_proto's .pb.cc).
    add_dependencies(${F_NAME} ${F_DEPENDS})
  endif()

  # New inputs and crash artifacts land in the build tree; the seed directory is only read.
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}.corpus)
  file(MAKE_DIRECTORY ${corpus})
  set(seeds "")
  if(F_SEEDS)
    get_filename_component(seeds ${F_SEEDS} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  add_test(NAME ${F_NAME}
           COMMAND ${binary} -max_total_time=${F_SECONDS} -rss_limit_mb=2048 -timeout=10
                   -print_final_stats=1 -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}-
                   ${corpus} ${seeds})
  math(EXPR timeout "${F_SECONDS} * 4 + 30")  # Start-up, plus slow shared CI machines.
  set_tests_properties(${F_NAME} PROPERTIES LABELS fuzz TIMEOUT ${timeout})
endfunction()
