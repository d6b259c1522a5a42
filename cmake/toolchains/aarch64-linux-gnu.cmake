# Cross-compiling Ember for aarch64 Linux on a Debian/Ubuntu x86-64 host (`make test-arm64`), with Debian's cross
# compiler and multiarch arm64 packages:
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install g++-aarch64-linux-gnu libssl-dev:arm64 libgmp-dev:arm64 libgtest-dev:arm64 qemu-user
#   cmake -S . -B build/arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The arm64 libraries and headers sit in the multiarch directories (/usr/lib/aarch64-linux-gnu,
# /usr/include/aarch64-linux-gnu), which CMake searches through CMAKE_LIBRARY_ARCHITECTURE; the host's x86-64 ones
# are kept out of every find_*. The test binaries run under qemu-user (ctest and gtest_discover_tests go through
# CMAKE_CROSSCOMPILING_EMULATOR) with the arm64 C library of the multiarch packages (libc6:arm64, which the -dev
# packages pull in): `-L /` makes the guest's /lib/ld-linux-aarch64.so.1 the host's multiarch loader.
# Not `-L /usr/aarch64-linux-gnu` (the cross toolchain's own copy of glibc): the loader would come from there
# (libc6-arm64-cross, 2.36-8cross1 on bookworm) but libc.so.6 from /usr/lib/aarch64-linux-gnu (2.36-9+deb12u*), and
# that mismatched pair hangs in the first pthread_create (an endless walk of the loader's stack cache list).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(EMBER_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${EMBER_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${EMBER_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${EMBER_CROSS_TRIPLE})

list(APPEND CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/include/x86_64-linux-gnu
     /usr/lib/x86_64-linux-gnu/cmake)

find_program(EMBER_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${EMBER_QEMU_AARCH64};-L;/)
