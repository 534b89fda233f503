# What `cmake --install` (and `make install PREFIX=...`) puts in a prefix: the `tensorc` driver,
# `tensorc-run`, the runtime library (libtensorc_rt, shared and static), its public headers, a CMake
# package (find_package(tensorc_runtime) -> tensorc::runtime, tensorc::runtime_static) and a
# pkg-config file (tensorc_runtime). No installed file names an absolute path: the prefix can move.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
find_package(Threads REQUIRED)

# The runtime library holds everything libtensorc_rt links (runtime/CMakeLists.txt), so a user
# links one library. Log.cpp (and Timing.cpp and CacheLimit.cpp, which log) stays out: nothing the
# runtime runs logs or keeps a compile cache, and in a compiler build Log.cpp needs spdlog, which
# the runtime never links. A library missing
# from this list fails the shared library's link (--no-undefined below).
set(TENSORC_RUNTIME_OBJECTS "")
foreach(library tensorc_rt tensorc_bundle tensorc_frontend_fx tensorc_interp tensorc_ops
                tensorc_ir tensorc_support)
  list(APPEND TENSORC_RUNTIME_OBJECTS
       "$<FILTER:$<TARGET_OBJECTS:${library}>,EXCLUDE,/(Log|Timing|CacheLimit)\\.cpp\\.o$>")
endforeach()

# The headers a runtime user includes, and every header they include (the install test compiles
# each one alone against the installed include directory).
set(TENSORC_RUNTIME_HEADERS
    tensorc.h Runtime/Model.h Runtime/Trainer.h Runtime/LaunchObserver.h Runtime/Profile.h
    Bundle/Manifest.h Bundle/LaunchCosts.h Support/DType.h Support/Json.h Support/Safetensors.h
    Support/Status.h Support/StrCat.h Support/Tensor.h)

set(TENSORC_PACKAGE_LIBRARY_DIR ${CMAKE_BINARY_DIR}/package/lib)
foreach(kind shared static)
  string(TOUPPER ${kind} KIND)
  add_library(tensorc_runtime_${kind} ${KIND} ${TENSORC_RUNTIME_OBJECTS})
  set_target_properties(tensorc_runtime_${kind} PROPERTIES
    OUTPUT_NAME tensorc_rt
    ARCHIVE_OUTPUT_DIRECTORY ${TENSORC_PACKAGE_LIBRARY_DIR}
    LIBRARY_OUTPUT_DIRECTORY ${TENSORC_PACKAGE_LIBRARY_DIR}
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(tensorc_runtime_${kind} INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(tensorc_runtime_${kind} INTERFACE cxx_std_17)
endforeach()
set_target_properties(tensorc_runtime_shared PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
# Every symbol resolved inside the library (or libc, libstdc++, libdl, libpthread).
target_link_options(tensorc_runtime_shared PRIVATE -Wl,--no-undefined)
target_link_libraries(tensorc_runtime_shared PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
target_link_libraries(tensorc_runtime_static INTERFACE Threads::Threads ${CMAKE_DL_LIBS})
set_target_properties(tensorc_runtime_shared PROPERTIES EXPORT_NAME runtime)
set_target_properties(tensorc_runtime_static PROPERTIES EXPORT_NAME runtime_static)

install(TARGETS tensorc_runtime_shared tensorc_runtime_static EXPORT tensorc_runtime_targets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(header ${TENSORC_RUNTIME_HEADERS})
  get_filename_component(header_dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/include/tensorc/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorc/${header_dir})
endforeach()

set(TENSORC_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tensorc_runtime)
install(EXPORT tensorc_runtime_targets NAMESPACE tensorc:: FILE tensorc_runtimeTargets.cmake
        DESTINATION ${TENSORC_CMAKE_PACKAGE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tensorc_runtimeConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/tensorc_runtimeConfig.cmake
  INSTALL_DESTINATION ${TENSORC_CMAKE_PACKAGE_DIR})
# 0.x: a minor version may change the C++ API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/tensorc_runtimeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/tensorc_runtimeConfig.cmake
              ${CMAKE_BINARY_DIR}/package/tensorc_runtimeConfigVersion.cmake
        DESTINATION ${TENSORC_CMAKE_PACKAGE_DIR})

# pkg-config finds the prefix from where the .pc file lies (${pcfiledir}), not from a path
# written at build time.
file(RELATIVE_PATH TENSORC_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" TENSORC_PC_TO_PREFIX "${TENSORC_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tensorc_runtime.pc.in
               ${CMAKE_BINARY_DIR}/package/tensorc_runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/tensorc_runtime.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS tensorc-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET tensorc)
  # The driver keeps the run path to LLVM and NVRTC where they are not in the system's library
  # directories (e.g. /usr/local/cuda); --emit=so links the installed static runtime, found from
  # the driver's own location (lib/Pipeline/ModelLibrary.cpp).
  set_target_properties(tensorc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  file(RELATIVE_PATH TENSORC_BIN_TO_ARCHIVE /prefix/${CMAKE_INSTALL_BINDIR}
       /prefix/${CMAKE_INSTALL_LIBDIR}/libtensorc_rt.a)
  target_compile_definitions(tensorc_pipeline PRIVATE
    TENSORC_INSTALLED_RUNTIME_ARCHIVE="${TENSORC_BIN_TO_ARCHIVE}")
  add_dependencies(tensorc tensorc_runtime_static)
  install(TARGETS tensorc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
