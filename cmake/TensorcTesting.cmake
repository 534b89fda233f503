# Tests compile models; their caches (compiled bundles, NVRTC outputs) stay in the build tree and
# small, never in the user's ~/.cache/tensorc. Call at the end of each directory that adds tests:
# a test that names its own TENSORC_CACHE_DIR or TENSORC_CACHE_MAX_SIZE keeps it.
set(TENSORC_TEST_CACHE_MAX_SIZE 2G CACHE STRING "Size limit of the tests' compile caches")

function(tensorc_isolate_test_caches)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} ENVIRONMENT environment)
    if(NOT environment MATCHES "TENSORC_CACHE_DIR=")
      set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                   TENSORC_CACHE_DIR=${CMAKE_BINARY_DIR}/test-cache)
    endif()
    if(NOT environment MATCHES "TENSORC_CACHE_MAX_SIZE=")
      set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
                   TENSORC_CACHE_MAX_SIZE=${TENSORC_TEST_CACHE_MAX_SIZE})
    endif()
  endforeach()
endfunction()
