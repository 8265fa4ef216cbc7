# Run by cpack before it packs: a .deb needs a build configured for /usr,
# where its compiled-in paths (the catalog, the unit's aegisd) point.
if(CPACK_GENERATOR STREQUAL "DEB" AND NOT CPACK_PACKAGING_INSTALL_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "cpack -G DEB: configure the build with "
          "-DCMAKE_INSTALL_PREFIX=/usr (it is ${CPACK_PACKAGING_INSTALL_PREFIX})")
endif()
