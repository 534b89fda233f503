# e2e.aarch64_qemu: cross-builds the runtime-only tensorc-run for aarch64 (TENSORC_RUNTIME_ONLY,
# cmake/aarch64-linux-gnu.cmake) into aarch64-runtime/ of this build, runs aarch64 bundles of
# models/ under qemu-aarch64 and compares them with the interpreter (check_aarch64.py says how).
# Skipped when g++-aarch64-linux-gnu or qemu-user is not installed. The same by hand:
#   cmake -S . -B build/aarch64-runtime -G Ninja -DCMAKE_BUILD_TYPE=Release \
#         -DTENSORC_RUNTIME_ONLY=ON -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build/aarch64-runtime --target tensorc-run
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build/aarch64-runtime/runtime/tensorc-run BUNDLE
# The first run spends minutes on the cross build; later runs rebuild only what changed (ccache).
cmake_host_system_information(RESULT TENSORC_HOST_CORES QUERY NUMBER_OF_LOGICAL_CORES)
add_test(NAME e2e.aarch64_qemu
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/check_aarch64.py
                 --tensorc $<TARGET_FILE:tensorc> --tensorc-run $<TARGET_FILE:tensorc-run>
                 --source-dir ${PROJECT_SOURCE_DIR} --build-dir ${CMAKE_BINARY_DIR}/aarch64-runtime
                 --cmake ${CMAKE_COMMAND} --generator ${CMAKE_GENERATOR}
                 --make-program ${CMAKE_MAKE_PROGRAM})
# The cross build uses every core: let a parallel ctest count it so.
set_tests_properties(e2e.aarch64_qemu PROPERTIES FIXTURES_REQUIRED models SKIP_RETURN_CODE 77
                     TIMEOUT 1800 PROCESSORS ${TENSORC_HOST_CORES})
