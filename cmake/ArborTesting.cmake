# Test registration. Every test carries exactly one main label, so a machine runs what it can:
#   unit         pure logic, milliseconds
#   model        needs model files made on the fly or Python references (torch, tokenizers)
#   integration  real server processes on loopback
#   gpu          needs a CUDA device; skips itself (GTEST_SKIP) when none is present
#   fuzz         short libFuzzer runs
#   reference    re-checks committed golden data against an outside engine (llama.cpp) when it
#                is installed; skips itself (exit 77) when not
# and, beside it, one label for each thing outside the build that it needs (NEEDS), so that
# `ctest -LE network` is an offline run and `ctest -L avx512` what only such a CPU runs:
#   network      fetches over the network (SmolLM2 through pip, packages from PyPI)
#   gpu          a CUDA device, for a test whose main label is another
#   avx512       an AVX-512 CPU (AVX-512 VNNI for the 8-bit kernels)
#   avxvnni      an AVX-VNNI CPU
#   amx          an AMX CPU whose OS grants the tiles
# A test that lacks what it needs skips, and a skip is reported as one, never as a pass: ctest
# shows a GTEST_SKIP() case and a Python file with a skipped test (tests/support/
# python_test_main.py exits 77) as "Skipped", and `make test` ends with the list of skipped tests
# and why (scripts/test-skips.py).
include(GoogleTest)
enable_testing()

set(ARBOR_TEST_LABELS unit model integration gpu fuzz reference)
set(ARBOR_TEST_NEEDS network gpu avx512 avxvnni amx)
# GoogleTest's TempDir() for every test: the files and folders tests leave behind (a failure's
# logs, each run's port files) stay in the build tree instead of piling up in /tmp.
set(ARBOR_TEST_TMPDIR ${CMAKE_BINARY_DIR}/test-tmp)
file(MAKE_DIRECTORY ${ARBOR_TEST_TMPDIR})

# Fails the configure unless `label` is a main label and each need a known one ("<need>" or, for
# GoogleTest binaries when `cases_allowed`, "<need>:<case regex>").
function(_arbor_check_test_labels caller label needs cases_allowed)
  if(NOT label IN_LIST ARBOR_TEST_LABELS)
    message(FATAL_ERROR "${caller}: LABEL must be one of ${ARBOR_TEST_LABELS}")
  endif()
  foreach(need IN LISTS needs)
    string(REGEX REPLACE ":.*" "" name "${need}")
    if(NOT name IN_LIST ARBOR_TEST_NEEDS)
      message(FATAL_ERROR "${caller}: NEEDS ${need}: must be one of ${ARBOR_TEST_NEEDS}")
    endif()
    if(NOT cases_allowed AND NOT need STREQUAL name)
      message(FATAL_ERROR "${caller}: NEEDS ${need}: a script's needs name no cases")
    endif()
  endforeach()
endfunction()

# The labels of a GoogleTest binary's cases, main label and needs, set when ctest reads the
# tests: the cases are discovered only then (DISCOVERY_MODE PRE_TEST), and the list is added by a
# file ctest includes after the discovered one, not through gtest_discover_tests' PROPERTIES,
# which lose a list's semicolons on the way through GoogleTest's scripts.
function(_arbor_label_discovered_cases name label needs)
  set(script "if(DEFINED ${name}_TESTS)\n  foreach(test IN LISTS ${name}_TESTS)\n")
  string(APPEND script "    set(labels ${label})\n")
  foreach(need IN LISTS needs)
    if(need MATCHES "^([^:]+):(.+)$")
      string(APPEND script "    if(test MATCHES [==[${CMAKE_MATCH_2}]==])\n"
                           "      list(APPEND labels ${CMAKE_MATCH_1})\n    endif()\n")
    else()
      string(APPEND script "    list(APPEND labels ${need})\n")
    endif()
  endforeach()
  string(APPEND script "    set_tests_properties(\"\${test}\" PROPERTIES LABELS \"\${labels}\")\n"
                       "  endforeach()\nendif()\n")
  set(file ${CMAKE_CURRENT_BINARY_DIR}/${name}_needs.cmake)
  file(WRITE ${file} "${script}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
endfunction()

# arbor_add_test(NAME <name> LABEL <label> SOURCES <files...> [LIBS <targets...>]
#                [TIMEOUT <seconds>] [NEEDS <need>[:<case regex>]...])
# Builds a GoogleTest binary and registers each of its test cases with ctest. A need names what
# every case needs, or, with a regex, what the cases whose "Suite.Case" name matches it need.
function(arbor_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS;NEEDS" ${ARGN})
  _arbor_check_test_labels("arbor_add_test(${T_NAME})" "${T_LABEL}" "${T_NEEDS}" TRUE)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_compile_definitions(${T_NAME} PRIVATE
      ARBOR_SOURCE_DIR="${CMAKE_SOURCE_DIR}" ARBOR_BINARY_DIR="${CMAKE_BINARY_DIR}"
      ARBOR_PYTHON="${ARBOR_PYTHON}")
  # A GTEST_SKIP() case exits 0 like a pass; GoogleTest's "[  SKIPPED ]" line tells ctest it is
  # a skip. Newer GoogleTest modules of CMake add the same expression; set here, it holds with
  # any. Listing the cases loads the binary's libraries, and a CUDA binary's cuBLASLt is half a
  # gigabyte: read cold from a busy disk, it outlasts CMake's five-second default, and one
  # binary's failed listing stops the whole ctest run.
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 180
      PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
                 SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
                 ENVIRONMENT "TEST_TMPDIR=${ARBOR_TEST_TMPDIR}")
  if(T_NEEDS)
    _arbor_label_discovered_cases(${T_NAME} ${T_LABEL} "${T_NEEDS}")
  endif()
endfunction()

# arbor_add_python_test(NAME <name> LABEL <label> SCRIPT <file.py> [TIMEOUT <seconds>]
#                       [DEPENDS <targets...>] [NEEDS <need>...])
# Runs a Python unittest file with the project virtualenv's Python (real clients such as the
# official `openai` package test the servers). The script finds the binaries through
# ARBOR_BINARY_DIR and the sources through ARBOR_SOURCE_DIR; it exits 77 to skip. It runs
# through tests/support/python_test_main.py, which makes unittest's exit 77 too when a test was
# skipped and none failed: unittest itself exits 0 then, and ctest would count a pass.
function(arbor_add_python_test)
  cmake_parse_arguments(T "" "NAME;LABEL;SCRIPT;TIMEOUT" "DEPENDS;NEEDS" ${ARGN})
  _arbor_check_test_labels("arbor_add_python_test(${T_NAME})" "${T_LABEL}" "${T_NEEDS}" FALSE)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME}
           COMMAND ${ARBOR_PYTHON} ${CMAKE_SOURCE_DIR}/tests/support/python_test_main.py
                   ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT} -v)
  set(labels ${T_LABEL} ${T_NEEDS})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
      SKIP_RETURN_CODE 77
      ENVIRONMENT "ARBOR_BINARY_DIR=${CMAKE_BINARY_DIR};ARBOR_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endfunction()
