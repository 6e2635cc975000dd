# arbor_embed_files(TARGET <lib> FUNCTION <ns::Name> FILES <files...>): a static library whose
# one generated source defines `absl::Span<const base::EmbeddedFile> ns::Name()`, the files'
# bytes keyed by base name (base/embedded_file.h). The viewer's HTML, CSS and JavaScript are
# compiled into the coordinator this way, so serving them needs no installed folder; editing one
# regenerates the source at the next build.
set(ARBOR_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_files_script.cmake)

function(arbor_embed_files)
  cmake_parse_arguments(EMBED "" "TARGET;FUNCTION" "FILES" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${EMBED_TARGET}.cc)
  set(files "")
  foreach(file IN LISTS EMBED_FILES)
    list(APPEND files ${CMAKE_CURRENT_SOURCE_DIR}/${file})
  endforeach()
  string(REPLACE ";" "|" files_arg "${files}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DFUNCTION=${EMBED_FUNCTION} "-DFILES=${files_arg}"
            -P ${ARBOR_EMBED_SCRIPT}
    DEPENDS ${files} ${ARBOR_EMBED_SCRIPT}
    COMMENT "Embedding ${EMBED_TARGET}"
    VERBATIM)
  add_library(${EMBED_TARGET} ${out})
  target_link_libraries(${EMBED_TARGET} PUBLIC arbor_base absl::span)
endfunction()
