# Warnings, CPU tuning and sanitizers shared by every C++ target.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wall> $<$<COMPILE_LANGUAGE:CXX>:-Wextra>
                    $<$<COMPILE_LANGUAGE:CXX>:-Wno-unused-parameter>)
if(ARBOR_WERROR)
  # Off by default so that a newer compiler's new warning does not stop a user's build; CI turns
  # it on, so the tree stays warning-free on the compiler the project is built with.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()

if(ARBOR_NATIVE)
  # The CPU backend's GEMV and attention loops rely on the compiler's auto-vectoriser; AVX2/FMA
  # doubles their throughput over the x86-64 baseline.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>)
endif()

if(NOT ARBOR_SANITIZE STREQUAL "none")
  if(NOT ARBOR_SANITIZE MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "ARBOR_SANITIZE must be none, address, undefined or thread, "
                        "got '${ARBOR_SANITIZE}'")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${ARBOR_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${ARBOR_SANITIZE})
endif()
