# Toolchain file: cross-build the runtime for aarch64 Linux with Debian's g++-aarch64-linux-gnu,
# for use with -DTENSORC_RUNTIME_ONLY=ON (the compiler itself needs LLVM, which is host-only).
#   cmake -S . -B build/aarch64-runtime -G Ninja -DTENSORC_RUNTIME_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Binaries link dynamically against the aarch64 glibc/libstdc++ in /usr/aarch64-linux-gnu, so
# they run under `qemu-aarch64 -L /usr/aarch64-linux-gnu` (the emulator set below, which CTest
# and add_custom_command use for built executables).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TENSORC_AARCH64_PREFIX aarch64-linux-gnu CACHE STRING "Cross tool prefix")
set(TENSORC_AARCH64_SYSROOT /usr/${TENSORC_AARCH64_PREFIX} CACHE PATH
    "Target libraries (the sysroot of Debian's cross packages)")
set(CMAKE_C_COMPILER ${TENSORC_AARCH64_PREFIX}-gcc)
set(CMAKE_CXX_COMPILER ${TENSORC_AARCH64_PREFIX}-g++)
# GCC notes that passing std::pair<double, double> changed ABI in GCC 10; everything here is built
# by one compiler, so the note is noise.
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)

find_program(TENSORC_QEMU_AARCH64 qemu-aarch64)
if(TENSORC_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TENSORC_QEMU_AARCH64} -L ${TENSORC_AARCH64_SYSROOT})
endif()

# Look for libraries and headers for the target only; programs come from the host.
set(CMAKE_FIND_ROOT_PATH ${TENSORC_AARCH64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
