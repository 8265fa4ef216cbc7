# dipp_add_module(NAME SOURCES... [LIBS LIBRARIES...] [DIR FOLDER]):
# builds the DIPP module NAME as NAME.so in FOLDER (default
# DIPP_MODULE_DIR, the folder the runner loads the example modules from), against the one public header dipp_module.h. Only the
# dipp_module symbol is exported (hidden visibility otherwise), so a module
# cannot clash with another's or the runner's names.
set(DIPP_MODULE_DIR ${CMAKE_BINARY_DIR}/orbit-modules CACHE INTERNAL
    "where dipp_add_module puts the modules")
set(DIPP_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/../include CACHE INTERNAL
    "dipp_module.h")

function(dipp_add_module name)
  cmake_parse_arguments(PARSE_ARGV 1 mod "" "DIR" "LIBS")
  if(NOT mod_DIR)
    set(mod_DIR ${DIPP_MODULE_DIR})
  endif()
  add_library(dipp_mod_${name} MODULE ${mod_UNPARSED_ARGUMENTS})
  set_target_properties(dipp_mod_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${mod_DIR}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(dipp_mod_${name} PRIVATE ${DIPP_INCLUDE_DIR})
  # libc named even when the module calls nothing of it (debayer): a
  # shared object that needs nothing at all is refused by lintian
  target_link_libraries(dipp_mod_${name} PRIVATE ${mod_LIBS} -Wl,--no-as-needed c)
endfunction()
