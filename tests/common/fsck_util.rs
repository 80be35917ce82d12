//! Helpers for the fsck tests (`tests/fsck_*.rs`): running `jffs2-fsck`, a small deterministic
//! source tree, image makers (mtd-utils `mkfs.jffs2` and `sumtool`, our `jffs2-mkfs`), the
//! kernel fixtures and a node walker.
//!
//! Included with `#[path = "common/fsck_util.rs"] mod fsck_util;` next to `mod common;`.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;

/// Our fsck.
pub const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");

/// Runs `jffs2-fsck` with `args`.
pub fn fsck<S: AsRef<OsStr>>(args: &[S]) -> common::Output {
    let mut c = Command::new(FSCK);
    c.args(args).stdin(Stdio::null()).env("LC_ALL", "C");
    common::run(c)
}

/// Runs our binary under another name (a symlink), e.g. `fsck.jffs2`.
pub fn fsck_as<S: AsRef<OsStr>>(name: &str, dir: &Path, args: &[S]) -> common::Output {
    let link = dir.join(name);
    if !link.exists() {
        std::os::unix::fs::symlink(FSCK, &link).expect("symlink");
    }
    let mut c = Command::new(&link);
    c.args(args).stdin(Stdio::null());
    common::run(c)
}

/// The kernel-written fixtures.
pub fn kernel_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel")
}

/// Every fixture image with its `.json`, sorted.
pub fn fixture_images() -> Vec<(PathBuf, serde_json::Value)> {
    let mut v: Vec<(PathBuf, serde_json::Value)> = std::fs::read_dir(kernel_fixtures())
        .expect("fixtures/kernel")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|j| {
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&j).expect("read json"))
                    .expect("parse json");
            (j.with_extension("img"), doc)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(v.len() >= 9, "expected the kernel fixtures");
    v
}

/// A kernel log line as recorded (`jffs2: notice: (372) …`) in the form `--kernel-log`
/// prints (`jffs2: notice: (<pid>) …`); `None` for other subsystems' lines.
pub fn normalize_dmesg(line: &str) -> Option<String> {
    let rest = line.strip_prefix("jffs2: ")?;
    let mut out = rest.to_string();
    for kind in ["warning: (", "notice: (", "error: ("] {
        if let Some(tail) = out.strip_prefix(kind) {
            if let Some(close) = tail.find(')') {
                if close > 0 && tail[..close].bytes().all(|b| b.is_ascii_digit()) {
                    out = format!("{kind}<pid>{}", &tail[close..]);
                }
            }
            break;
        }
    }
    Some(format!("jffs2: {out}"))
}

fn write(p: &Path, data: &[u8], mode: u32) {
    std::fs::write(p, data).expect("write");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A small deterministic tree: text and incompressible files (one empty, one of several
/// pages), a subdirectory, a relative symlink, a hard link, a FIFO, a character device, and
/// a `user.` xattr. Fixed mtimes.
pub fn small_tree(root: &Path) {
    std::fs::create_dir_all(root.join("etc/conf.d")).expect("mkdir");
    std::fs::create_dir_all(root.join("bin")).expect("mkdir");
    write(&root.join("etc/motd"), b"Welcome to the flash.\n", 0o644);
    write(&root.join("etc/conf.d/net"), &common::text(3, 5000), 0o600);
    write(&root.join("etc/empty"), b"", 0o644);
    write(&root.join("bin/tool"), &common::random(4, 3000), 0o755);
    std::fs::hard_link(root.join("bin/tool"), root.join("bin/tool-link")).expect("link");
    std::os::unix::fs::symlink("../etc/motd", root.join("bin/motd-link")).expect("symlink");
    let c = std::ffi::CString::new(root.join("fifo").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    let d = std::ffi::CString::new(root.join("null").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; makedev(1, 3).
    unsafe { libc::mknod(d.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    let n = std::ffi::CString::new(root.join("etc/motd").as_os_str().as_encoded_bytes()).unwrap();
    let k = std::ffi::CString::new("user.comment").unwrap();
    let v = b"hello";
    // SAFETY: valid C strings and buffer.
    unsafe { libc::lsetxattr(n.as_ptr(), k.as_ptr(), v.as_ptr().cast(), v.len(), 0) };
    for p in [
        "etc/motd",
        "etc/conf.d/net",
        "etc/empty",
        "bin/tool",
        "fifo",
        "null",
        "etc/conf.d",
        "etc",
        "bin",
    ] {
        common::set_mtime(&root.join(p), common::FIXED_MTIME);
    }
    let l =
        std::ffi::CString::new(root.join("bin/motd-link").as_os_str().as_encoded_bytes()).unwrap();
    let ts = [
        libc::timespec {
            tv_sec: common::FIXED_MTIME,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: common::FIXED_MTIME,
            tv_nsec: 0,
        },
    ];
    // SAFETY: valid path and times.
    unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            l.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
}

/// Runs mtd-utils' `mkfs.jffs2 -r src -o out <args>`; panics on failure.
pub fn mkfs(src: &Path, out: &Path, args: &[&str]) {
    let mut c = Command::new(common::mkfs_jffs2());
    c.arg("-r").arg(src).arg("-o").arg(out).args(args);
    let o = common::run(c);
    assert_eq!(o.status, 0, "mkfs.jffs2 {args:?}: {}", o.stderr_text());
}

/// Runs our `jffs2-mkfs -r src -o out <args>`.
pub fn ours_mkfs(src: &Path, out: &Path, args: &[&str]) {
    let mut c = common::Tool::Ours.command();
    c.arg("-r").arg(src).arg("-o").arg(out).args(args);
    let o = common::run(c);
    assert_eq!(o.status, 0, "jffs2-mkfs {args:?}: {}", o.stderr_text());
}

/// Runs mtd-utils' `sumtool -i input -o out <args>`.
pub fn sumtool(input: &Path, out: &Path, args: &[&str]) {
    let mut c = Command::new(common::mtd_tool("sumtool"));
    c.arg("-i").arg(input).arg("-o").arg(out).args(args);
    let o = common::run(c);
    assert_eq!(o.status, 0, "sumtool {args:?}: {}", o.stderr_text());
}

/// Nodes with a valid magic (and totlen ≥ 12) as `(offset, totlen, nodetype)`.
pub fn node_list(img: &[u8], big: bool) -> Vec<(usize, usize, u16)> {
    common::nodes(img, common::Endian { big })
        .into_iter()
        .map(|n| (n.offset, n.totlen as usize, n.nodetype))
        .collect()
}

/// The JSON of a `--json` run.
pub fn json_of(o: &common::Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("--json output does not parse: {e}\n{}", o.stdout_text()))
}
