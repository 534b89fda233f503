# LLVM 19 from Debian, linked as the one shared libLLVM-19 (never the static component libraries:
# they make every link slow on small machines).
# LLVM's version file accepts only an exact major.minor, so the major is checked here instead.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "tensorc needs LLVM 19, found ${LLVM_PACKAGE_VERSION} in ${LLVM_DIR}")
endif()
if(NOT TARGET LLVM)
  message(FATAL_ERROR "LLVM ${LLVM_PACKAGE_VERSION} has no shared libLLVM target")
endif()
add_library(tensorc_llvm INTERFACE)
target_include_directories(tensorc_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(tensorc_llvm INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(tensorc_llvm INTERFACE LLVM)
find_program(TENSORC_LD_LLD ld.lld-19 ld.lld PATHS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
