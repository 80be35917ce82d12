//! The Linux kernel as a judge: JFFS2 images mounted by the real driver under qemu.
//!
//! Each test builds small trees, makes images of them, and hands them to
//! `tests/kernel/harness.py`, which boots Debian's kernel under qemu (software emulation),
//! attaches every image as a virtio disk, turns it into an MTD device with block2mtd, mounts it
//! with the kernel's JFFS2 driver, lists it, and compares the listing with the source tree.
//! See docs/TESTING.md.
//!
//! Never silently skipped: when qemu or the kernel cannot be had, the tests print
//! "SKIPPED <test>: needs qemu and a Linux kernel (<reason>) ..." to the real stderr and return
//! (tests/common/skip.rs); under `CI=true` they fail.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
#[path = "common/kernel.rs"]
mod kernel;
use kernel::{
    assert_fuse_shows_what_linux_showed, fuse_available, harness_path, json_path, json_str,
    kernel_available, loud, FuseCase,
};

// ------------------------------------------------------------------------------------------
// The image maker under test

/// Which mkfs makes the images.  Switching the suite to our own builder is this one line:
/// `const MKFS: Tool = Tool::Ours;`
const MKFS: Tool = Tool::Ours;

#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
enum Tool {
    /// mtd-utils' mkfs.jffs2 (Debian's package), the reference.
    Debian,
    /// This repository's `jffs2-mkfs`.
    Ours,
}

impl Tool {
    fn program(self) -> PathBuf {
        match self {
            Tool::Debian => {
                let p = PathBuf::from("/usr/sbin/mkfs.jffs2");
                if p.exists() {
                    p
                } else {
                    PathBuf::from("mkfs.jffs2")
                }
            }
            Tool::Ours => PathBuf::from(env!("CARGO_BIN_EXE_jffs2-mkfs")),
        }
    }
}

/// One image layout: mkfs.jffs2's options that change the image's geometry.
#[derive(Clone, Debug)]
struct Geometry {
    name: &'static str,
    erase: u32,
    cleanmarkers: bool,
    /// Run mtd-utils' `sumtool` over the image (erase-block summaries).
    summary: bool,
    /// Further mkfs arguments (compression, xattrs, ...).
    extra: &'static [&'static str],
    /// Partition size the harness pads to (with 0xFF).
    partition: u64,
}

/// Makes an image of `src` with `tool`, in geometry `g`, at `out`.
fn make_image(tool: Tool, src: &Path, g: &Geometry, out: &Path) {
    make_image_endian(tool, src, g, out, false);
}

/// [`make_image`], big-endian when `big` (mkfs's and sumtool's `-b`).
fn make_image_endian(tool: Tool, src: &Path, g: &Geometry, out: &Path, big: bool) {
    let raw = if g.summary {
        out.with_extension("nosum")
    } else {
        out.to_path_buf()
    };
    let mut cmd = Command::new(tool.program());
    cmd.arg("-r")
        .arg(src)
        .arg("-o")
        .arg(&raw)
        .arg("-e")
        .arg(g.erase.to_string());
    if !g.cleanmarkers {
        cmd.arg("-n");
    }
    if big {
        cmd.arg("-b");
    }
    cmd.args(g.extra);
    run_ok(&mut cmd, "mkfs");
    if g.summary {
        let mut s = Command::new("sumtool");
        s.arg("-i")
            .arg(&raw)
            .arg("-o")
            .arg(out)
            .arg("-e")
            .arg(g.erase.to_string());
        if !g.cleanmarkers {
            s.arg("-n");
        }
        if big {
            s.arg("-b");
        }
        run_ok(&mut s, "sumtool");
    }
}

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {cmd:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ------------------------------------------------------------------------------------------
// Availability of the kernel suite

// ------------------------------------------------------------------------------------------
// Calling the harness

/// One image for the harness.  Fields map one to one onto the harness's spec (see harness.py).
#[derive(Clone, Debug, Default)]
struct Image {
    id: String,
    path: PathBuf,
    output: Option<PathBuf>,
    erase: u32,
    partition: Option<u64>,
    rw: bool,
    workload: Option<String>,
    remount: bool,
    expect_dir: Option<PathBuf>,
    ignore: Vec<&'static str>,
}

impl Image {
    fn to_json(&self) -> String {
        let mut f = vec![
            format!("\"id\": {}", json_str(&self.id)),
            format!("\"path\": {}", json_path(&self.path)),
            format!("\"erase_size\": {}", self.erase),
            format!("\"mode\": \"{}\"", if self.rw { "rw" } else { "ro" }),
            format!("\"remount\": {}", self.remount),
        ];
        if let Some(o) = &self.output {
            f.push(format!("\"output\": {}", json_path(o)));
        }
        if let Some(p) = self.partition {
            f.push(format!("\"pad_to\": {p}"));
        }
        if let Some(w) = &self.workload {
            f.push(format!("\"workload\": {}", json_str(w)));
        }
        if let Some(d) = &self.expect_dir {
            f.push(format!("\"expect_dir\": {}", json_path(d)));
        }
        let ig: Vec<String> = self.ignore.iter().map(|s| json_str(s)).collect();
        f.push(format!("\"compare_ignore\": [{}]", ig.join(", ")));
        format!("{{{}}}", f.join(", "))
    }
}

/// What the harness reported, per image.
#[derive(Debug)]
struct Report {
    /// Exit code of `harness.py check`: 0 all OK, 1 some image failed.
    code: i32,
    text: String,
}

impl Report {
    fn ok(&self, id: &str) -> bool {
        self.text
            .lines()
            .any(|l| l.starts_with(&format!("RESULT {id} OK ")))
    }
    fn lines(&self, kind: &str, id: &str) -> Vec<&str> {
        let pre = format!("{kind} {id} ");
        self.text.lines().filter(|l| l.starts_with(&pre)).collect()
    }
    /// The DIFF lines of an image (JSON objects with path, what, expected, actual).
    fn diffs(&self, id: &str) -> Vec<&str> {
        self.lines("DIFF", id)
    }
    fn has_diff(&self, id: &str, path: &str, what: &str) -> bool {
        let p = format!("\"path\": {}", json_str(path));
        let w = format!("\"what\": {}", json_str(what));
        self.diffs(id)
            .iter()
            .any(|l| l.contains(&p) && l.contains(&w))
    }
}

/// Boots once with all `images` (`harness.py check`) and returns the harness's report.
fn check(work: &Path, images: &[Image]) -> Report {
    let spec = work.join("spec.json");
    let body: Vec<String> = images.iter().map(Image::to_json).collect();
    fs::write(
        &spec,
        format!(
            "{{\"timeout\": 400, \"images\": [\n{}\n]}}\n",
            body.join(",\n")
        ),
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(harness_path())
        .arg("check")
        .arg("--spec")
        .arg(&spec)
        .arg("--out")
        .arg(work.join("result.json"))
        .output()
        .expect("run harness");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    // shown when a test fails (libtest prints a failing test's captured output)
    println!("--- harness report (exit {code}) ---\n{text}\n--- harness stderr ---\n{err}");
    assert!(
        code == 0 || code == 1,
        "harness error (exit {code}):\n{text}\n{err}"
    );
    Report { code, text }
}

// ------------------------------------------------------------------------------------------
// Source trees

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// Deterministic bytes (xorshift) that do not compress.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Compressible text.
fn text(seed: u64, n: usize) -> Vec<u8> {
    let words = [
        "flash ",
        "erase ",
        "block ",
        "node ",
        "inode ",
        "dirent ",
        "summary ",
        "journal\n",
    ];
    let mut out = Vec::with_capacity(n + 16);
    let mut i = seed as usize;
    while out.len() < n {
        out.extend_from_slice(words[i % words.len()].as_bytes());
        out.extend_from_slice(format!("{i} ").as_bytes());
        i = i.wrapping_mul(31).wrapping_add(7) % 1009;
    }
    out.truncate(n);
    out
}

fn put(root: &Path, rel: &str, data: &[u8], mode: u32) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, data).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(p: &Path, uid: u32, gid: u32) {
    let r = unsafe { libc::lchown(cstr(p).as_ptr(), uid, gid) };
    assert_eq!(r, 0, "chown {}", p.display());
}

fn mknod(p: &Path, kind: libc::mode_t, major: u32, minor: u32) {
    let dev = libc::makedev(major, minor);
    let r = unsafe { libc::mknod(cstr(p).as_ptr(), kind | 0o644, dev) };
    assert_eq!(r, 0, "mknod {}", p.display());
}

fn set_xattr(p: &Path, name: &str, value: &[u8]) {
    let n = CString::new(name).unwrap();
    let r = unsafe {
        libc::lsetxattr(
            cstr(p).as_ptr(),
            n.as_ptr(),
            value.as_ptr() as *const libc::c_void,
            value.len(),
            0,
        )
    };
    assert_eq!(r, 0, "setxattr {} {name}", p.display());
}

/// A POSIX ACL in the host's xattr form (`posix_acl_xattr.h`: version 2, then per entry
/// tag, permissions and id, little-endian), from (tag, perm, id) entries in the kernel's order.
fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        v.extend_from_slice(&tag.to_le_bytes());
        v.extend_from_slice(&perm.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
    }
    v
}

/// The mixed tree: regular files of many sizes (0, 1, page-1, page, page+1, > erase block),
/// compressible and not, nested directories, a directory with many entries, symlinks
/// (relative, dangling, long), a fifo, device nodes, hard links, owners and modes, xattrs,
/// POSIX ACLs.
fn build_tree(root: &Path) {
    fs::create_dir_all(root).unwrap();
    put(root, "empty", b"", 0o644);
    put(root, "one", b"x", 0o644);
    put(root, "text_4095", &text(1, 4095), 0o644);
    put(root, "text_4096", &text(2, 4096), 0o644);
    put(root, "text_4097", &text(3, 4097), 0o644);
    put(root, "text_300000", &text(4, 300_000), 0o644);
    put(root, "noise_10000", &noise(5, 10_000), 0o644);
    put(root, "noise_70000", &noise(6, 70_000), 0o755);
    put(root, "zeros_20000", &[0u8; 20_000], 0o600);
    put(root, "a/b/c/d/e/deep.txt", b"deep\n", 0o644);
    put(root, "a/b/mid", &noise(7, 5000), 0o444);
    for i in 0..80 {
        put(
            root,
            &format!("many/f{i:02}"),
            format!("file {i}\n").as_bytes(),
            0o644,
        );
    }
    put(root, &"n".repeat(254), b"long name\n", 0o644);
    // names the listing must survive: spaces, quotes, a leading dash, non-ASCII, a newline
    put(root, "odd/with space", b"1\n", 0o644);
    put(root, "odd/quote'd \"name\"", b"2\n", 0o644);
    put(root, "odd/-leading-dash", b"3\n", 0o644);
    put(root, "odd/ünïcödé ✓", b"4\n", 0o644);
    put(root, "odd/new\nline", b"5\n", 0o644);
    symlink("with space", root.join("odd/link -> x")).unwrap();
    symlink("text_4096", root.join("link_rel")).unwrap();
    symlink("../one", root.join("a/link_up")).unwrap();
    symlink("nowhere/at/all", root.join("dangling")).unwrap();
    symlink("t".repeat(200), root.join("long_link")).unwrap();
    // hard links: 3 names in 3 directories
    fs::hard_link(root.join("noise_10000"), root.join("a/hard1")).unwrap();
    fs::hard_link(root.join("noise_10000"), root.join("many/hard2")).unwrap();
    // special files and modes
    let fifo = cstr(&root.join("fifo"));
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o640) }, 0);
    put(root, "setuid", b"#!/bin/sh\n", 0o4755);
    fs::create_dir(root.join("sticky")).unwrap();
    fs::set_permissions(root.join("sticky"), fs::Permissions::from_mode(0o1777)).unwrap();
    fs::create_dir(root.join("private")).unwrap();
    put(root, "private/secret", b"s3cret\n", 0o600);
    fs::set_permissions(root.join("private"), fs::Permissions::from_mode(0o700)).unwrap();
    set_xattr(&root.join("text_4095"), "user.colour", b"blue");
    set_xattr(&root.join("a"), "user.empty", b"");
    set_xattr(&root.join("a/b/mid"), "user.bin", &noise(8, 100));
    // POSIX ACLs, which JFFS2 stores in a form and byte order of its own
    // (docs/spec/kernel-jffs2-spec.md §1.8): an access ACL on a file (its group bits become
    // the mask), access and default ACLs on a directory
    const ANY: u32 = u32::MAX;
    set_xattr(
        &root.join("text_4096"),
        "system.posix_acl_access",
        &acl(&[
            (1, 6, ANY),
            (2, 4, 1000),
            (4, 4, ANY),
            (8, 6, 100),
            (0x10, 6, ANY),
            (0x20, 4, ANY),
        ]),
    );
    fs::create_dir(root.join("acl_dir")).unwrap();
    put(root, "acl_dir/inside", b"acl\n", 0o640);
    set_xattr(
        &root.join("acl_dir"),
        "system.posix_acl_access",
        &acl(&[
            (1, 7, ANY),
            (2, 7, 1000),
            (4, 5, ANY),
            (0x10, 7, ANY),
            (0x20, 5, ANY),
        ]),
    );
    set_xattr(
        &root.join("acl_dir"),
        "system.posix_acl_default",
        &acl(&[
            (1, 7, ANY),
            (4, 5, ANY),
            (8, 5, 100),
            (0x10, 5, ANY),
            (0x20, 0, ANY),
        ]),
    );
    if is_root() {
        mknod(&root.join("null"), libc::S_IFCHR, 1, 3);
        mknod(&root.join("loop0"), libc::S_IFBLK, 7, 0);
        chown(&root.join("private"), 1234, 5678);
        chown(&root.join("private/secret"), 1234, 5678);
        chown(&root.join("one"), 1000, 100);
        chown(&root.join("link_rel"), 42, 43);
    } else {
        loud("kernel suite: not root, the trees have no device nodes and no foreign owners");
    }
}

/// The one mtime (seconds, nanoseconds) [`stamp_tree`] gives every entry of a source tree: a
/// fixed past second, so a tool writing the time of the run is caught, with a fraction no
/// `f64` can hold (`x.999999999` rounds up to the next second as a float), so the image's
/// truncated seconds and the harness's host listing must both truncate.
const TREE_MTIME: (i64, i64) = (1_700_000_000, 999_999_999);

/// Gives every entry of `root` (children before their directory, symlinks themselves)
/// [`TREE_MTIME`], once the tree is complete and before any image of it is made.
///
/// Why: mkfs.jffs2 stores each child's mtime in its dirent's `mctime`
/// (docs/spec/mtd-utils-spec.md §3.5.6), and Linux replaces a directory's mtime with the
/// `mctime` of its latest dirent (docs/spec/kernel-jffs2-spec.md, read_inode, S_IFDIR). The
/// kernel therefore shows a directory with the mtime of its last child, not its own. With
/// the times of the run, `many`'s last dirent is `hard2`, a hard link to `noise_10000`, written
/// long before `many` got its last entry: whenever a second boundary fell in between, every
/// image showed `many` one second before the host tree.
fn stamp_tree(root: &Path) {
    let meta = fs::symlink_metadata(root).unwrap();
    if meta.is_dir() {
        for e in fs::read_dir(root).unwrap() {
            stamp_tree(&e.unwrap().path());
        }
    }
    let ts = libc::timespec {
        tv_sec: TREE_MTIME.0 as libc::time_t,
        tv_nsec: TREE_MTIME.1 as _,
    };
    let times = [ts, ts];
    // SAFETY: a NUL-terminated path and a two-element array.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            cstr(root).as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(r, 0, "utimensat {}", root.display());
}

fn workdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("jffs2-kernel-{name}-"))
        .tempdir()
        .unwrap()
}

fn geometries() -> Vec<Geometry> {
    const MB: u64 = 1 << 20;
    let g = |name, erase, cleanmarkers, summary, extra, partition| Geometry {
        name,
        erase,
        cleanmarkers,
        summary,
        extra,
        partition,
    };
    vec![
        g("e16k", 16 << 10, true, false, &[], 2 * MB),
        // jffs2-mkfs's own summaries (not sumtool's), on every block.
        g("e16k_oursum", 16 << 10, true, false, &["--summary"], 2 * MB),
        g(
            "e128k_nocm_oursum",
            128 << 10,
            false,
            false,
            &["--summary"],
            2 * MB,
        ),
        g(
            "e64k_xattr_oursum",
            64 << 10,
            true,
            false,
            &["--with-xattr", "--summary"],
            2 * MB,
        ),
        g("e16k_nocm", 16 << 10, false, false, &[], 2 * MB),
        g("e16k_sum", 16 << 10, true, true, &[], 2 * MB),
        g("e64k", 64 << 10, true, false, &[], 2 * MB),
        g("e64k_nocm_sum", 64 << 10, false, true, &[], 2 * MB),
        g(
            "e64k_xattr",
            64 << 10,
            true,
            false,
            &["--with-xattr"],
            2 * MB,
        ),
        g(
            "e64k_lzo",
            64 << 10,
            true,
            false,
            &["-X", "lzo", "-x", "zlib"],
            2 * MB,
        ),
        g(
            "e64k_nocompr",
            64 << 10,
            true,
            false,
            &["-m", "none"],
            2 * MB,
        ),
        g(
            "e128k_sum_xattr",
            128 << 10,
            true,
            true,
            &["--with-xattr"],
            4 * MB,
        ),
        g("e256k_nocm", 256 << 10, false, false, &[], 4 * MB),
        g("e256k_sum", 256 << 10, true, true, &[], 4 * MB),
    ]
}

// ------------------------------------------------------------------------------------------
// Tests

/// Images of the mixed tree in many geometries mount read-only with exactly the tree's content
/// and without a jffs2 warning or error.
#[test]
fn mkfs_images_mount_with_the_source_content() {
    if !kernel_available() {
        return;
    }
    let fuse = fuse_available();
    let work = workdir("geometries");
    let tree = work.path().join("tree");
    build_tree(&tree);
    stamp_tree(&tree);
    let mut images = Vec::new();
    // every geometry also big-endian, for jffs2-mount alone: the kernel reads only the CPU's
    // byte order (docs/spec/kernel-jffs2-spec.md §0, §3.2), so on x86 a big-endian image is
    // compared with Linux's view of its little-endian twin
    let mut big_endian = Vec::new();
    for g in geometries() {
        let img = work.path().join(format!("{}.img", g.name));
        make_image(MKFS, &tree, &g, &img);
        let be = work.path().join(format!("{}.be.img", g.name));
        make_image_endian(MKFS, &tree, &g, &be, true);
        big_endian.push((be, g.erase, g.name));
        let with_xattr = g.extra.contains(&"--with-xattr");
        images.push(Image {
            id: g.name.to_string(),
            path: img,
            erase: g.erase,
            partition: Some(g.partition),
            expect_dir: Some(tree.clone()),
            ignore: if with_xattr { vec![] } else { vec!["xattrs"] },
            ..Default::default()
        });
    }
    // mkfs.jffs2 stores device numbers in the old 16-bit form (major << 8) + minor, even when
    // the minor does not fit: 240:300 comes back from the kernel as 241:44.  Our jffs2-mkfs
    // deliberately differs here (it warns and stores the kernel's 4-byte form), so with it the
    // kernel must show 240:300.
    let dev_tree = work.path().join("devtree");
    fs::create_dir_all(&dev_tree).unwrap();
    put(&dev_tree, "plain", b"plain\n", 0o644);
    if is_root() {
        mknod(&dev_tree.join("big_dev"), libc::S_IFCHR, 240, 300);
        mknod(&dev_tree.join("small_dev"), libc::S_IFBLK, 254, 255);
    }
    stamp_tree(&dev_tree);
    let g = &geometries()[3];
    let dev_img = work.path().join("dev16.img");
    make_image(MKFS, &dev_tree, g, &dev_img);
    images.push(Image {
        id: "dev16".into(),
        path: dev_img,
        erase: g.erase,
        partition: Some(g.partition),
        expect_dir: Some(dev_tree),
        ignore: vec!["xattrs"],
        ..Default::default()
    });

    let r = check(work.path(), &images);
    let failed: Vec<&str> = images
        .iter()
        .map(|i| i.id.as_str())
        .filter(|id| *id != "dev16" && !r.ok(id))
        .collect();
    assert!(
        failed.is_empty(),
        "images the kernel did not show as their source: {failed:?}\n{}",
        r.text
    );
    if is_root() && matches!(MKFS, Tool::Debian) {
        let d = r.diffs("dev16");
        assert!(
            d.len() == 1 && d[0].contains("\"big_dev\"") && d[0].contains("\"actual\": \"241:44\""),
            "dev16: expected only big_dev shown as 241:44:\n{}",
            r.text
        );
    } else {
        assert!(r.ok("dev16"), "{}", r.text);
    }

    // jffs2-mount shows every image, and every big-endian twin, as Linux showed the image
    if fuse {
        let mut cases: Vec<FuseCase> = images
            .iter()
            .map(|i| FuseCase {
                image: &i.path,
                erase: i.erase,
                linux_id: &i.id,
                remount: false,
            })
            .collect();
        cases.extend(big_endian.iter().map(|(be, erase, id)| FuseCase {
            image: be,
            erase: *erase,
            linux_id: id,
            remount: false,
        }));
        assert_fuse_shows_what_linux_showed(work.path(), &work.path().join("result.json"), &cases);
    }
}

/// The comparison is not vacuous: an image of a different tree, an image whose file data was
/// altered (with its data CRC recomputed, so the kernel reads the altered bytes happily), and an
/// image with a corrupted data node are each reported, entry by entry.
#[test]
fn altered_images_are_reported() {
    if !kernel_available() {
        return;
    }
    let work = workdir("altered");
    let g = Geometry {
        name: "neg",
        erase: 64 << 10,
        cleanmarkers: true,
        summary: false,
        extra: &["-m", "none"],
        partition: 1 << 20,
    };
    let tree_a = work.path().join("a");
    fs::create_dir_all(&tree_a).unwrap();
    put(&tree_a, "same", b"unchanged\n", 0o644);
    put(
        &tree_a,
        "victim",
        b"MARKER-0123456789-the data the kernel must show\n",
        0o644,
    );
    put(&tree_a, "gone", b"only in A\n", 0o644);
    put(&tree_a, "d/inner", &text(9, 9000), 0o640);
    // tree B: one byte of a file changed, a file missing, a mode changed, a file added
    let tree_b = work.path().join("b");
    fs::create_dir_all(&tree_b).unwrap();
    put(&tree_b, "same", b"unchanged\n", 0o644);
    put(
        &tree_b,
        "victim",
        b"MARKER-0123456789-the data the kernel must shoW\n",
        0o644,
    );
    put(&tree_b, "d/inner", &text(9, 9000), 0o600);
    put(&tree_b, "extra", b"only in B\n", 0o644);
    // the mtimes of A and B alike where the entries are meant to be equal, and each directory
    // as the kernel will show it (see stamp_tree)
    stamp_tree(&tree_a);
    stamp_tree(&tree_b);

    let img_b = work.path().join("b.img");
    make_image(MKFS, &tree_b, &g, &img_b);
    let img_a = work.path().join("a.img");
    make_image(MKFS, &tree_a, &g, &img_a);
    let mut bytes = fs::read(&img_a).unwrap();
    let (node, data_at) = find_inode_node_with(&bytes, b"MARKER-0123456789-").expect("marker node");
    // altered, CRC recomputed: a valid image with different content
    let mut valid = bytes.clone();
    valid[data_at + 20] ^= 0x20;
    fix_data_crc(&mut valid, node);
    let img_valid = work.path().join("valid_crc.img");
    fs::write(&img_valid, &valid).unwrap();
    // altered, CRC left as it was: the kernel refuses to read the node
    bytes[data_at + 20] ^= 0x20;
    let img_bad = work.path().join("bad_crc.img");
    fs::write(&img_bad, &bytes).unwrap();

    let image = |id: &str, path: &Path| Image {
        id: id.to_string(),
        path: path.to_path_buf(),
        erase: g.erase,
        partition: Some(g.partition),
        expect_dir: Some(tree_a.clone()),
        ignore: vec!["xattrs"],
        ..Default::default()
    };
    let r = check(
        work.path(),
        &[
            image("control", &img_a),
            image("other_tree", &img_b),
            image("valid_crc", &img_valid),
            image("bad_crc", &img_bad),
        ],
    );
    assert_eq!(
        r.code, 1,
        "the harness must fail on altered images:\n{}",
        r.text
    );
    assert!(
        r.ok("control"),
        "the unaltered image must pass:\n{}",
        r.text
    );
    for (id, path, what) in [
        ("other_tree", "victim", "md5"),
        ("other_tree", "gone", "missing entry"),
        ("other_tree", "extra", "unexpected entry"),
        ("other_tree", "d/inner", "mode"),
        ("valid_crc", "victim", "md5"),
        // the file's only data node fails its CRC: iget fails, the entry cannot be stat'ed
        ("bad_crc", "victim", "missing entry"),
    ] {
        assert!(
            r.has_diff(id, path, what),
            "{id}: expected a '{what}' difference on {path}:\n{}",
            r.text
        );
    }
    assert_eq!(
        r.diffs("valid_crc").len(),
        1,
        "valid_crc: exactly one difference expected:\n{}",
        r.text
    );
    assert!(
        r.lines("KMSG", "bad_crc").iter().any(|l| l.contains("CRC")),
        "bad_crc: the kernel should log a CRC failure:\n{}",
        r.text
    );
    assert!(
        !r.lines("PROBLEM", "bad_crc").is_empty() && !r.ok("bad_crc"),
        "bad_crc must fail:\n{}",
        r.text
    );
}

/// The kernel writes too: an image is mounted read-write, a workload runs in it (writes,
/// deletes, renames, truncation, hard links, mknod, chown), it is unmounted and mounted again;
/// what the kernel then shows must equal the same workload replayed on a copy of the tree.
#[test]
fn rw_workload_matches_a_host_replay() {
    if !kernel_available() {
        return;
    }
    let fuse = fuse_available();
    let work = workdir("rw");
    let tree = work.path().join("tree");
    fs::create_dir_all(&tree).unwrap();
    put(&tree, "keep", &text(10, 6000), 0o644);
    put(&tree, "old_name", &noise(11, 9000), 0o644);
    put(&tree, "doomed", b"delete me\n", 0o644);
    put(&tree, "long", &text(12, 50_000), 0o644);
    put(&tree, "dir/inner", b"inner\n", 0o644);
    let mut workload = String::from(
        "set -e\n\
         mv old_name new_name\n\
         rm doomed\n\
         echo overwritten > keep\n\
         truncate -s 12345 long\n\
         ln new_name dir/hardlink\n\
         mkdir -p fresh/sub\n\
         dd if=new_name of=fresh/sub/copy bs=1000 count=5 2>/dev/null\n\
         ln -s ../keep fresh/symlink\n\
         mkfifo fresh/fifo\n\
         mv dir renamed_dir\n\
         chmod 0600 new_name\n",
    );
    if is_root() {
        workload.push_str(
            "mknod fresh/console c 5 1\n\
             mknod fresh/disk b 8 16\n\
             chown 1000:1000 renamed_dir/inner\n\
             chown 7:8 fresh\n",
        );
    }
    let g = Geometry {
        name: "rw",
        erase: 16 << 10,
        cleanmarkers: true,
        summary: false,
        extra: &[],
        partition: 2 << 20,
    };
    let img = work.path().join("rw.img");
    make_image(MKFS, &tree, &g, &img);
    // replay on the host, with the same shell (busybox)
    let expect = work.path().join("expect");
    run_ok(
        Command::new("cp").arg("-a").arg(&tree).arg(&expect),
        "cp -a",
    );
    run_ok(
        Command::new("busybox")
            .arg("sh")
            .arg("-c")
            .arg(&workload)
            .current_dir(&expect),
        "host replay",
    );
    let r = check(
        work.path(),
        &[Image {
            id: "rw".into(),
            path: img.clone(),
            output: Some(work.path().join("rw.after.img")),
            erase: g.erase,
            partition: Some(g.partition),
            rw: true,
            workload: Some(workload),
            remount: true,
            expect_dir: Some(expect),
            ignore: vec!["mtime", "xattrs"],
        }],
    );
    assert!(r.ok("rw") && r.code == 0, "rw workload:\n{}", r.text);

    // the kernel-written image (the flash as the boot left it) through jffs2-mount: what Linux
    // showed when it mounted it again read-only
    if fuse {
        assert_fuse_shows_what_linux_showed(
            work.path(),
            &work.path().join("result.json"),
            &[FuseCase {
                image: &work.path().join("rw.after.img"),
                erase: g.erase,
                linux_id: "rw",
                remount: true,
            }],
        );
    }
}

/// The committed kernel-written fixtures (fixtures/kernel/, made by
/// tests/kernel/make-fixtures.py) still mount as recorded: same listing, same jffs2 messages.
#[test]
fn kernel_fixtures_mount_as_recorded() {
    if !kernel_available() {
        return;
    }
    let fuse = fuse_available();
    let work = workdir("fixtures");
    let result = work.path().join("result.json");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let n = fs::read_dir(&dir)
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .map(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .unwrap_or(false)
            })
            .count()
        })
        .unwrap_or(0);
    assert!(n >= 4, "no kernel fixtures in {}", dir.display());
    let out = Command::new("python3")
        .arg(harness_path())
        .arg("verify-fixtures")
        .arg("--dir")
        .arg(&dir)
        .arg("--out")
        .arg(&result)
        .output()
        .expect("run harness");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "fixtures do not mount as recorded:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // every kernel-written image (dirty, power-cut, torn) through jffs2-mount: what Linux
    // showed in this boot (the result's id is the image's file name)
    if fuse {
        let fixtures = kernel::kernel_fixtures();
        let names: Vec<String> = fixtures
            .iter()
            .map(|(img, _, _)| img.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let cases: Vec<FuseCase> = fixtures
            .iter()
            .zip(&names)
            .map(|((img, _, erase), name)| FuseCase {
                image: img,
                erase: *erase,
                linux_id: name,
                remount: false,
            })
            .collect();
        assert_fuse_shows_what_linux_showed(work.path(), &result, &cases);
    }
}

// ------------------------------------------------------------------------------------------
// Image surgery for the negative test

const JFFS2_MAGIC: u16 = 0x1985;
const NODETYPE_INODE: u16 = 0xE002;

/// JFFS2's CRC: crc32 (reflected, poly 0xEDB88320), seed 0, no final inversion.
fn jffs2_crc(data: &[u8]) -> u32 {
    let mut crc = 0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// The inode node (offset) whose uncompressed data holds `needle`, and the needle's offset.
fn find_inode_node_with(img: &[u8], needle: &[u8]) -> Option<(usize, usize)> {
    let at = img.windows(needle.len()).position(|w| w == needle)?;
    let mut ofs = 0;
    while ofs + 68 <= img.len() {
        if le16(img, ofs) == JFFS2_MAGIC && le16(img, ofs + 2) == NODETYPE_INODE {
            let csize = le32(img, ofs + 0x30) as usize;
            let start = ofs + 68;
            if (start..start + csize).contains(&at) {
                assert_eq!(img[ofs + 0x38], 0, "needle node must be uncompressed");
                assert_eq!(
                    jffs2_crc(&img[start..start + csize]),
                    le32(img, ofs + 0x3C),
                    "data CRC self-check"
                );
                return Some((ofs, at));
            }
        }
        ofs += 4;
    }
    None
}

fn fix_data_crc(img: &mut [u8], node: usize) {
    let csize = le32(img, node + 0x30) as usize;
    let crc = jffs2_crc(&img[node + 68..node + 68 + csize]);
    img[node + 0x3C..node + 0x40].copy_from_slice(&crc.to_le_bytes());
}
