# Third-party libraries, all from Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
if(ARBOR_TESTS)
  find_package(GTest REQUIRED)
endif()
if(ARBOR_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# ICU: the Unicode normal forms of tokenizer.json normalizers (NFC for Qwen2's).
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
# cpp-httplib (as in llama.cpp's server): the coordinator's OpenAI-compatible HTTP API and the
# Prometheus endpoints.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

find_program(ARBOR_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
# The project virtualenv (Debian's torch + PyPI tokenizers/safetensors) runs reference tests.
set(ARBOR_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python CACHE FILEPATH
    "Python with torch, tokenizers and safetensors for the reference tests")
