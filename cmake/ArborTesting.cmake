# Test registration. Every test carries exactly one label, so a machine runs what it can:
#   unit         pure logic, milliseconds
#   model        needs model files made on the fly or Python references (torch, tokenizers)
#   integration  real server processes on loopback
#   gpu          needs a CUDA device; skips itself (GTEST_SKIP) when none is present
#   fuzz         short libFuzzer runs
#   reference    re-checks committed golden data against an outside engine (llama.cpp) when it
#                is installed; skips itself (exit 77) when not
include(GoogleTest)
enable_testing()

set(ARBOR_TEST_LABELS unit model integration gpu fuzz reference)
# GoogleTest's TempDir() for every test: the files and folders tests leave behind (a failure's
# logs, each run's port files) stay in the build tree instead of piling up in /tmp.
set(ARBOR_TEST_TMPDIR ${CMAKE_BINARY_DIR}/test-tmp)
file(MAKE_DIRECTORY ${ARBOR_TEST_TMPDIR})

# arbor_add_test(NAME <name> LABEL <label> SOURCES <files...> [LIBS <targets...>]
#                [TIMEOUT <seconds>])
# Builds a GoogleTest binary and registers each of its test cases with ctest.
function(arbor_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT T_LABEL IN_LIST ARBOR_TEST_LABELS)
    message(FATAL_ERROR "arbor_add_test(${T_NAME}): LABEL must be one of ${ARBOR_TEST_LABELS}")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_compile_definitions(${T_NAME} PRIVATE
      ARBOR_SOURCE_DIR="${CMAKE_SOURCE_DIR}" ARBOR_BINARY_DIR="${CMAKE_BINARY_DIR}"
      ARBOR_PYTHON="${ARBOR_PYTHON}")
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
      PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
                 ENVIRONMENT "TEST_TMPDIR=${ARBOR_TEST_TMPDIR}")
endfunction()

# arbor_add_python_test(NAME <name> LABEL <label> SCRIPT <file.py> [TIMEOUT <seconds>]
#                       [DEPENDS <targets...>])
# Runs a Python unittest file with the project virtualenv's Python (real clients such as the
# official `openai` package test the servers). The script finds the binaries through
# ARBOR_BINARY_DIR and the sources through ARBOR_SOURCE_DIR; it exits 77 to skip.
function(arbor_add_python_test)
  cmake_parse_arguments(T "" "NAME;LABEL;SCRIPT;TIMEOUT" "DEPENDS" ${ARGN})
  if(NOT T_LABEL IN_LIST ARBOR_TEST_LABELS)
    message(FATAL_ERROR "arbor_add_python_test(${T_NAME}): LABEL must be one of ${ARBOR_TEST_LABELS}")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${ARBOR_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT} -v)
  set_tests_properties(${T_NAME} PROPERTIES LABELS ${T_LABEL} TIMEOUT ${T_TIMEOUT}
      SKIP_RETURN_CODE 77
      ENVIRONMENT "ARBOR_BINARY_DIR=${CMAKE_BINARY_DIR};ARBOR_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
endfunction()
