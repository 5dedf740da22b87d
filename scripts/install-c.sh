#!/usr/bin/env bash
# Builds libflock (cargo build --release) and installs it for C and C++ users under PREFIX:
#   PREFIX/lib/libflock.so.0.1             the shared library, with that soname
#   PREFIX/lib/libflock.so -> libflock.so.0.1
#   PREFIX/lib/libflock.a                  the static library (debug info and bitcode stripped)
#   PREFIX/include/flock.h, flock.hpp, flock_algorithms.hpp (included by flock.hpp)
#   PREFIX/lib/pkgconfig/flock.pc          link the shared library (or, with -static, the .a)
#   PREFIX/lib/pkgconfig/flock-static.pc   link libflock.a by path into a dynamic program
#   PREFIX/lib/cmake/flock/flockConfig.cmake, flockConfigVersion.cmake
#                                          find_package(flock CONFIG): flock::flock (shared),
#                                          flock::flock_static
#   PREFIX/share/flock/flock.supp          valgrind suppressions (see ffi/README.md)
#
# Usage: scripts/install-c.sh PREFIX
#   PREFIX     where the files are meant to live; relative paths are made absolute.
#   DESTDIR    when set, the files are written under DESTDIR/PREFIX instead (staging for a
#              package), while flock.pc still names PREFIX; PREFIX must then be absolute.
#   CARGO_TARGET_DIR  where cargo builds (default ./target): the checkout itself is only read.
#
# Then (the PREFIX below is an example):
#   export PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig
#   cc app.c $(pkg-config --cflags --libs flock) -pthread -Wl,-rpath,$HOME/.local/lib -o app
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: [DESTDIR=STAGE] $0 PREFIX" >&2
    exit 2
fi
destdir=${DESTDIR:-}
if [ -n "$destdir" ]; then
    case $1 in
    /*) prefix=$1 ;;
    *)
        echo "install-c.sh: with DESTDIR set, PREFIX must be absolute (got '$1')" >&2
        exit 2
        ;;
    esac
    prefix=${prefix%/}
    [ -n "$prefix" ] || prefix=/
else
    mkdir -p "$1"
    prefix=$(cd "$1" && pwd)
fi
stage=$destdir$prefix
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
export CARGO_TARGET_DIR=$target

echo "== cargo build --release (the workspace: the core crate and libflock) into $target"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo build --release 2>&1 | tee "$log"
# The core crate and the C library are both named flock; they must never write the same file.
if grep -qi "collision" "$log"; then
    echo "install-c.sh: cargo reported an output filename collision" >&2
    exit 1
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p;T;q' ffi/Cargo.toml)
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" = 0 ]; then soname=libflock.so.0.$minor; else soname=libflock.so.$major; fi

install -d "$stage/lib/pkgconfig" "$stage/lib/cmake/flock" "$stage/include" "$stage/share/flock"
# Not shipped in the archive (23 MB built, 5 MB installed): debug info, and the LLVM bitcode
# the standard library's objects embed for cross-language LTO (.llvmbc, .llvmcmd; 9 MB).
install -m 644 "$target/release/libflock.a" "$stage/lib/libflock.a"
objcopy --strip-debug --remove-section=.llvmbc --remove-section=.llvmcmd "$stage/lib/libflock.a"
install -m 755 "$target/release/libflock.so" "$stage/lib/$soname"
strip --strip-debug "$stage/lib/$soname"
ln -sf "$soname" "$stage/lib/libflock.so"
install -m 644 include/flock.h include/flock.hpp include/flock_algorithms.hpp "$stage/include/"
install -m 644 ffi/flock.supp "$stage/share/flock/flock.supp"

# What a static link of the Rust standard library needs on Linux, from `cargo rustc -- --print
# native-static-libs` less -lgcc_s: the unwinder comes from libgcc_s through the compiler
# driver in a dynamic link, and from libgcc_eh (which the driver adds) with -static, where
# there is no libgcc_s to find.
syslibs="-lutil -lrt -lpthread -lm -ldl"

cat > "$stage/lib/pkgconfig/flock.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
suppressions=\${prefix}/share/flock/flock.supp

Name: flock
Description: A work-stealing thread pool (C API; C++ wrapper in flock.hpp)
Version: $version
Libs: -L\${libdir} -lflock
Libs.private: $syslibs
Cflags: -I\${includedir}
PC

# -lflock picks libflock.so whenever it sits beside libflock.a (unless the whole program is
# linked -static), so the static library is named by path here.
cat > "$stage/lib/pkgconfig/flock-static.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
suppressions=\${prefix}/share/flock/flock.supp

Name: flock-static
Description: A work-stealing thread pool (C API), linked statically (libflock.a)
Version: $version
Libs: \${libdir}/libflock.a $syslibs
Cflags: -I\${includedir}
PC

# The CMake package finds its files relative to itself, so the prefix can move (and DESTDIR
# staging needs nothing special).
cat > "$stage/lib/cmake/flock/flockConfig.cmake" <<CMAKE
# flockConfig.cmake: libflock $version for find_package(flock CONFIG REQUIRED).
# Targets: flock::flock (libflock.so; the default) and flock::flock_static (libflock.a).
# Variables: flock_VERSION, FLOCK_VALGRIND_SUPPRESSIONS (share/flock/flock.supp).
# Generated by scripts/install-c.sh.
cmake_minimum_required(VERSION 3.14)
include(CMakeFindDependencyMacro)
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_dependency(Threads)
get_filename_component(_flock_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET flock::flock)
  add_library(flock::flock SHARED IMPORTED)
  set_target_properties(flock::flock PROPERTIES
    IMPORTED_LOCATION "\${_flock_prefix}/lib/$soname"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${_flock_prefix}/include"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT TARGET flock::flock_static)
  add_library(flock::flock_static STATIC IMPORTED)
  set_target_properties(flock::flock_static PROPERTIES
    IMPORTED_LOCATION "\${_flock_prefix}/lib/libflock.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES C
    INTERFACE_INCLUDE_DIRECTORIES "\${_flock_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;util;rt;m;\${CMAKE_DL_LIBS}")
endif()
set(FLOCK_VALGRIND_SUPPRESSIONS "\${_flock_prefix}/share/flock/flock.supp")
unset(_flock_prefix)
CMAKE

# 0.y keeps its ABI within one y (the soname says so): a request for 0.y.z is met by 0.y.w
# with w >= z; for 1.0 and later, by the same major version.
cat > "$stage/lib/cmake/flock/flockConfigVersion.cmake" <<CMAKE
# flockConfigVersion.cmake: which find_package(flock VERSION) requests libflock $version meets.
# Generated by scripts/install-c.sh.
set(PACKAGE_VERSION "$version")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
       AND PACKAGE_FIND_VERSION_MAJOR EQUAL $major
       AND ($major GREATER 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL $minor))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
# A 64-bit library: no use to a 32-bit build.
if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(PACKAGE_VERSION "$version (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE

echo "installed libflock $version under $prefix${destdir:+ (staged in $destdir)}"
