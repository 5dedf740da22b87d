//! Gives `libflock.so` an soname, so an installed copy can sit beside later, incompatible ones
//! (`scripts/install-c.sh` installs `libflock.so.0.1`, with `libflock.so` linking to it). Like
//! cargo-c, a 0.y version keeps its ABI within one y: the soname is `libflock.so.0.<y>`.
//! The header is not generated here: `scripts/gen-header.sh` runs a pinned cbindgen, so a
//! library build never needs cbindgen and never writes into the source tree.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        let minor = env!("CARGO_PKG_VERSION_MINOR");
        let soname = if major == "0" {
            format!("libflock.so.0.{minor}")
        } else {
            format!("libflock.so.{major}")
        };
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
