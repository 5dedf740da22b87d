#!/usr/bin/env bash
# Builds libflock and installs it for C and C++ users under PREFIX:
#   PREFIX/lib/libflock.so.0.1, PREFIX/lib/libflock.so -> libflock.so.0.1, PREFIX/lib/libflock.a,
#   PREFIX/include/flock.h, PREFIX/include/flock.hpp, PREFIX/lib/pkgconfig/flock.pc
# Usage: scripts/install-c.sh PREFIX      (honours CARGO_TARGET_DIR; default ./target)
# Then: PKG_CONFIG_PATH=PREFIX/lib/pkgconfig cc app.c $(pkg-config --cflags --libs flock)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ $# -ne 1 ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac

echo "== cargo build --release (the workspace: the core crate and libflock)"
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

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 "$target/release/libflock.a" "$prefix/lib/libflock.a"
install -m 755 "$target/release/libflock.so" "$prefix/lib/$soname"
ln -sf "$soname" "$prefix/lib/libflock.so"
install -m 644 include/flock.h include/flock.hpp "$prefix/include/"

# Libs.private: what a static link of the Rust standard library needs on Linux
# (`cargo rustc -- --print native-static-libs`).
cat > "$prefix/lib/pkgconfig/flock.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: flock
Description: A work-stealing thread pool (C API; C++ wrapper in flock.hpp)
Version: $version
Libs: -L\${libdir} -lflock
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
PC
echo "installed libflock $version under $prefix"
