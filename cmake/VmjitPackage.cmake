# Installs the libraries, headers and an exported CMake package so that
# `find_package(vmjit)` works from an install prefix, and exports the build
# tree the same way: `-Dvmjit_DIR=<build dir>` uses it without installing.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vmjit
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT vmjitTargets
  NAMESPACE vmjit::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vmjit)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/vmjitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vmjitConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vmjit)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/vmjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/vmjitConfig.cmake
  ${PROJECT_BINARY_DIR}/vmjitConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vmjit)

# The build tree as a package: vmjitConfig.cmake (above) beside the targets
# as built here, headers from the source tree.
export(EXPORT vmjitTargets NAMESPACE vmjit::
  FILE ${PROJECT_BINARY_DIR}/vmjitTargets.cmake)
