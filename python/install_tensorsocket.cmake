# Run by `cmake --install` (and by cpack): installs the tensorsocket
# compatibility package into AEGIS_TS_DEST only where TensorSocket itself
# is absent, and says which it did. Set before: AEGIS_TS_SRC (the package
# folder), AEGIS_TS_DEST (the Python folder, relative to the prefix) and
# AEGIS_TS_PYTHON (the interpreter it is for).
#
# A staged install (DESTDIR, or cpack's own prefix) builds a package for
# another machine: what this machine has says nothing about that one, and
# the package's /usr/lib/python3/dist-packages comes after every place pip
# puts TensorSocket on sys.path, so a real one still wins there.
set(dest "${CMAKE_INSTALL_PREFIX}/${AEGIS_TS_DEST}")
if(NOT "$ENV{DESTDIR}" STREQUAL "" OR CMAKE_INSTALL_PREFIX MATCHES "/_CPack_Packages/")
  set(found "")
else()
  execute_process(
    COMMAND "${AEGIS_TS_PYTHON}" -c
      "import importlib.util as u; s = u.find_spec('tensorsocket'); import sys; sys.stdout.write(s.origin if s and s.origin else '')"
    OUTPUT_VARIABLE found ERROR_QUIET)
endif()
set(ours FALSE)
if(found)
  file(READ "${found}" text)
  string(FIND "${text}" "AEGIS_COMPAT = True" at)
  if(NOT at EQUAL -1)
    set(ours TRUE)
  endif()
endif()
if(found AND NOT ours)
  message(STATUS "tensorsocket: TensorSocket is installed (${found}); "
                 "aegis's compatibility package is not installed")
else()
  message(STATUS "tensorsocket: installing aegis's compatibility package "
                 "(TensorSocket's names over the aegis feed) into "
                 "$ENV{DESTDIR}${dest}/tensorsocket; a TensorSocket "
                 "installed with pip comes first on sys.path")
  file(INSTALL "${AEGIS_TS_SRC}/" DESTINATION "${dest}/tensorsocket"
       FILES_MATCHING PATTERN "*.py")
endif()
