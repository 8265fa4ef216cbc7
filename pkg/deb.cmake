# The Debian package: `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr writes aegis_VERSION_amd64.deb. Its Depends
# come from the libraries the binaries actually link (dpkg-shlibdeps, in
# dpkg-dev), plus the Python the extension module was built for.

set(CPACK_PACKAGE_NAME aegis)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "aegis")
# The project maintains the package; a lab that rebuilds it may put its
# own team here (-DAEGIS_MAINTAINER=...).
set(AEGIS_MAINTAINER "aegis project <maintainers@aegis-gpu.org>" CACHE STRING
    "the Debian package's Maintainer field")
set(CPACK_PACKAGE_CONTACT "${AEGIS_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "share the GPUs of a server safely among deep-learning training jobs")
set(CPACK_PACKAGE_DESCRIPTION "\
aegisd runs the training jobs submitted with `aegis submit` on the GPUs of
one server, several per GPU where memory and load allow, and retries a job
that ran out of GPU memory with a larger floor. `aegis sim` replays job
traces under the same scheduling core. A stand-in NVML library and fake
training job (/usr/lib/aegis/test) let aegis run without a GPU. dipp runs
a CubeSat payload's modular image pipeline (sandboxed modules, signed
updates over CSP), with its example modules in /usr/lib/aegis/dipp-modules.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The extension module is built for this Python minor version only.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  math(EXPR next_minor "${Python3_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}~), python3 (<< ${Python3_VERSION_MAJOR}.${next_minor})")
endif()
# bash-completion loads pkg/aegis.bash; without it completion is off.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-numpy, bash-completion")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-torchvision")
# The admin's configuration: kept on remove and upgrade, gone on purge.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/conffiles
     "${AEGIS_CONFIG_FILE}\n${AEGIS_PAM_DIR}/aegis\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/conffiles)

# A package built under /usr/local would point at files it does not hold.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_SOURCE_DIR}/cpack_check.cmake)
include(CPack)
