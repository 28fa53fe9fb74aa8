# `cmake --install build --prefix P`: headers, the static library, the CLI, a
# CMake package (find_package(vkformer CONFIG) -> vkformer::vkformer) and a
# pkg-config file. Included once from the top-level CMakeLists.txt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Consumers compile the public headers too, and those need C++17.
target_compile_features(vkformer PUBLIC cxx_std_17)

install(DIRECTORY include/vkformer DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(TARGETS vkformer EXPORT vkformerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS vkformer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(VKF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/vkformer)
install(EXPORT vkformerTargets NAMESPACE vkformer:: DESTINATION ${VKF_CMAKE_DIR})
configure_package_config_file(cmake/vkformerConfig.cmake.in
  ${CMAKE_BINARY_DIR}/vkformerConfig.cmake INSTALL_DESTINATION ${VKF_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/vkformerConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/vkformerConfig.cmake
              ${CMAKE_BINARY_DIR}/vkformerConfigVersion.cmake DESTINATION ${VKF_CMAKE_DIR})

# The .pc file finds its prefix from its own location (${pcfiledir}), so it stays
# right whatever --prefix or DESTDIR the install is given.
set(VKF_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${VKF_PC_DIR}")
  set(VKF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH VKF_PC_PREFIX "/root/${VKF_PC_DIR}" "/root")  # "../.."
  string(REGEX REPLACE "/$" "" VKF_PC_PREFIX "${VKF_PC_PREFIX}")
  set(VKF_PC_PREFIX "\${pcfiledir}/${VKF_PC_PREFIX}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(VKF_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(VKF_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(cmake/vkformer.pc.in ${CMAKE_BINARY_DIR}/vkformer.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/vkformer.pc DESTINATION ${VKF_PC_DIR})
