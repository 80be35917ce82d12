//! The one way a test skips: for lack of root, qemu and the kernel, mtd-utils, GNU time,
//! valgrind, fakeroot, genimage, libfaketime, util-linux or another program.
//!
//! On a laptop, plain `cargo test` passes without them: each test that cannot run says so on
//! the real stderr (not captured by the test harness), e.g.
//!
//! ```text
//! SKIPPED full_tree_main_cases: needs mtd-utils (install with scripts/install-test-deps.sh; CI=true makes this an error)
//! ```
//!
//! and returns. Under `CI=true` (or `CI=1`) nothing is skipped: the same check panics with that
//! sentence, so a CI machine missing a dependency fails.
//!
//! `JFFS2_TEST_PRETEND_MISSING` (a comma-separated list of the names below, e.g.
//! `root,mtd-utils,qemu`) makes the checks report those as missing, to see what a machine
//! without them skips (docs/TESTING.md).
//!
//! Included by `tests/common/mod.rs` (`common::skip`) and, with `#[path]`, by the binaries
//! that do not use it. The checks return `true` when the test may go on:
//!
//! ```text
//! if !skip::root() || !skip::mtd_utils() {
//!     return;
//! }
//! ```
#![allow(dead_code)] // each test binary uses a different subset

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// True under CI (`CI=true` or `CI=1`), where nothing may be skipped.
pub fn ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// The running test's name (libtest names each test's thread after it).
fn test_name() -> String {
    match std::thread::current().name() {
        Some(n) if n != "main" => n.to_string(),
        _ => std::env::args()
            .next()
            .map(|a| {
                Path::new(&a)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or(a)
            })
            .unwrap_or_else(|| "this test".into()),
    }
}

/// Skips the running test for lack of `what`: prints the SKIPPED line to the real stderr, or,
/// under CI, panics with it. Call it, then return from the test.
pub fn skip(what: &str) {
    let line = format!(
        "SKIPPED {}: needs {what} (install with scripts/install-test-deps.sh; CI=true makes this \
         an error)",
        test_name()
    );
    if ci() {
        panic!("{line}\nCI=true: nothing may be skipped, so this test fails");
    }
    // the real stderr: libtest captures eprintln!, and a skip must be seen
    let _ = writeln!(std::io::stderr(), "\n{line}");
}

/// Whether `name` is listed in `JFFS2_TEST_PRETEND_MISSING`.
pub fn pretend_missing(name: &str) -> bool {
    std::env::var("JFFS2_TEST_PRETEND_MISSING")
        .map(|v| v.split(',').any(|n| n.trim() == name))
        .unwrap_or(false)
}

/// True when the process runs as root (unless `root` is pretended missing).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    !pretend_missing("root") && unsafe { libc::geteuid() } == 0
}

/// Where `program` is: `/usr/sbin`, `/sbin`, then `PATH` (mtd-utils lives in sbin, which a
/// user's `PATH` often lacks). `None` if absent or if `group` is pretended missing.
pub fn find_program(program: &str, group: &str) -> Option<PathBuf> {
    if pretend_missing(group) {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Root (mknod, chown, mount, trusted.* xattrs), or skip.
pub fn root() -> bool {
    is_root() || {
        skip("root");
        false
    }
}

/// Debian's mtd-utils (mkfs.jffs2, sumtool, jffs2dump), or skip.
pub fn mtd_utils() -> bool {
    let all = ["mkfs.jffs2", "sumtool", "jffs2dump"]
        .iter()
        .all(|p| find_program(p, "mtd-utils").is_some());
    all || {
        skip("mtd-utils");
        false
    }
}

/// `program` (from `package`, also the name `JFFS2_TEST_PRETEND_MISSING` knows it by), or skip.
pub fn program(program: &str, package: &str) -> bool {
    find_program(program, package).is_some() || {
        skip(&format!("{program} ({package})"));
        false
    }
}

/// libfaketime's preload library (Debian package `faketime`), unless `faketime` is pretended
/// missing.
pub fn libfaketime() -> Option<PathBuf> {
    if pretend_missing("faketime") {
        return None;
    }
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
    ]
    .iter()
    .map(|d| Path::new(d).join("faketime/libfaketime.so.1"))
    .find(|p| p.is_file())
}

/// libfaketime and its `faketime` wrapper (package `faketime`), or skip.
pub fn faketime() -> bool {
    if libfaketime().is_none() {
        skip("libfaketime (package faketime)");
        return false;
    }
    program("faketime", "faketime")
}

/// GNU time (`/usr/bin/time`, which reports peak memory with `-f %M`), or skip.
pub fn gnu_time() -> bool {
    let ok = !pretend_missing("time") && Path::new("/usr/bin/time").is_file();
    ok || {
        skip("GNU time (/usr/bin/time, package time)");
        false
    }
}
