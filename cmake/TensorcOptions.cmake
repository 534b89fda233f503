# Compiler settings shared by every tensorc target: warnings as errors, sanitizers, ccache.
# Paths inside the source tree are hashed relative to it (and the working directory is left out
# of debug builds' hashes), so a clone in another folder, as CI's is, reuses the cache of this
# one; debug info then names the first clone's paths.
find_program(TENSORC_CCACHE ccache)
if(TENSORC_CCACHE)
  set(TENSORC_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                              CCACHE_NOHASHDIR=1 ${TENSORC_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${TENSORC_CCACHE_LAUNCHER})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${TENSORC_CCACHE_LAUNCHER})
endif()

if(TENSORC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TENSORC_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT TENSORC_SANITIZE)
    set(TENSORC_SANITIZE address,undefined)
  endif()
  # Coverage feedback in every library; the harnesses add libFuzzer's main when they link.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(TENSORC_SANITIZE)
  add_compile_options(-fsanitize=${TENSORC_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${TENSORC_SANITIZE})
endif()

# Our own code builds with -Wall -Wextra -Werror; third-party headers come in as SYSTEM.
function(tensorc_set_warnings target)
  # -Wrestrict: GCC 12 reports false positives on std::string concatenation at -O3 (PR 105329).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-missing-field-initializers)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-restrict)
    # GCC's flow-based warnings misfire on sanitizer-instrumented code (the GCC manual says so for
    # -fsanitize); std::regex trips -Wmaybe-uninitialized under ASan with GCC 12.
    if(TENSORC_SANITIZE)
      target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
    endif()
  endif()
endfunction()

# tensorc_add_library(NAME SOURCES... [DEPS ...]): one library per stage, public headers under
# include/tensorc/.
function(tensorc_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                     PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  tensorc_set_warnings(${name})
endfunction()
