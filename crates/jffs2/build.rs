//! Build script of the core crate: links the system libdeflate when it is there.
//!
//! libdeflate (MIT) inflates whole buffers about twice as fast as zlib, which is what
//! extraction and fsck spend their time on. It is optional: without it (no `libdeflate-dev`,
//! or `JFFS2_NO_LIBDEFLATE=1` in the build environment) the crate inflates with zlib alone
//! and every result is the same (see `compress/zlib.rs`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(libdeflate)");
    println!("cargo::rerun-if-env-changed=JFFS2_NO_LIBDEFLATE");
    if std::env::var_os("JFFS2_NO_LIBDEFLATE").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    match pkg_config::Config::new()
        .atleast_version("1.0")
        .probe("libdeflate")
    {
        Ok(_) => println!("cargo::rustc-cfg=libdeflate"),
        Err(e) => println!(
            "cargo::warning=libdeflate not found ({e}); inflating with zlib only (install libdeflate-dev for faster extraction and fsck)"
        ),
    }
}
