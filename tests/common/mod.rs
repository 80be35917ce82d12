//! Shared helpers for the mkfs integration tests (`mkfs_parity.rs`, `mkfs_cli.rs`):
//!
//! * a deterministic fixture-tree generator ([`tree`], [`Kind`]) that builds, in a temporary
//!   directory, every kind of entry mkfs.jffs2 handles (hard links, long and dangling
//!   symlinks, fifos, a socket, devices, sizes at page edges, sparse and random files, deep
//!   nesting, a 1500-entry directory, long / UTF-8 / non-UTF-8 names, xattrs and POSIX ACLs,
//!   odd modes and owners) with fixed timestamps;
//! * runners for mtd-utils' `mkfs.jffs2` and our `jffs2-mkfs` (also under the `mkfs.jffs2`
//!   name, through a symlink);
//! * image comparison with a `jffs2dump -c` context of the first difference;
//! * a minimal independent JFFS2 node walker for checks jffs2dump cannot make (timestamps,
//!   device payloads).
//!
//! The tests need root (mknod, chown, trusted.* xattrs) and Debian's mtd-utils; without them
//! they are skipped loudly ([`skip`]), and fail under `CI=true`.

#![allow(dead_code)] // each test binary uses a different subset

pub mod skip;

use std::ffi::{CString, OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use tempfile::TempDir;

/// The mtime given to every fixture entry (2020-09-13T12:26:40Z), unless stated otherwise.
pub const FIXED_MTIME: i64 = 1_600_000_000;

/// Our binary.
pub const OURS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");

const NO_MTD_UTILS: &str = "mtd-utils not installed: run apt-get install mtd-utils";

/// The path of an mtd-utils tool (`/usr/sbin`, `/sbin`, then `$PATH`); panics when it is
/// missing: a test using it checks [`require_mtd_utils`] first, which skips.
pub fn mtd_tool(name: &str) -> PathBuf {
    skip::find_program(name, "mtd-utils")
        .unwrap_or_else(|| panic!("{NO_MTD_UTILS} ({name} not found)"))
}

/// mtd-utils' mkfs.jffs2.
pub fn mkfs_jffs2() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| mtd_tool("mkfs.jffs2"))
}

/// mtd-utils' jffs2dump.
pub fn jffs2dump_path() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| mtd_tool("jffs2dump"))
}

/// True when mtd-utils is installed; otherwise the test is skipped loudly (an error under
/// `CI=true`, see `skip.rs`) and must return.
#[must_use]
pub fn require_mtd_utils() -> bool {
    skip::mtd_utils()
}

/// True when running as root, which the fixtures need (mknod, chown, trusted.* xattrs);
/// otherwise the test is skipped loudly (an error under `CI=true`) and must return.
#[must_use]
pub fn require_root() -> bool {
    skip::root()
}

// ---------------------------------------------------------------------------------------
// Fixture trees
// ---------------------------------------------------------------------------------------

/// Which fixture tree to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An empty root directory.
    Empty,
    /// A root with one 10000-byte text file.
    Single,
    /// A modest tree with one of each interesting thing (≈ 120 entries, ≈ 400 KB of file
    /// data, much of it sparse or compressible); for the option matrix.
    Small,
    /// Everything (≈ 1660 entries, ≈ 2 MB); for the main cases.
    Full,
    /// Devices whose major/minor exceed 255 (mkfs.jffs2 corrupts them; we use 4 bytes).
    BigDevices,
}

/// A generated tree; the directory is removed on drop.
pub struct Tree {
    dir: TempDir,
}

impl Tree {
    /// The root of the tree (what `-r` gets).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Builds the fixture tree `kind` in a fresh temporary directory.
pub fn tree(kind: Kind) -> Tree {
    assert!(
        skip::is_root(),
        "the fixture trees need root (mknod, chown, trusted.* xattrs): the test must check \
         common::require_root() first"
    );
    let dir = tempfile::Builder::new()
        .prefix("jffs2-fixture-")
        .tempdir()
        .expect("create a temporary directory");
    build_tree(kind, dir.path());
    Tree { dir }
}

/// Builds the fixture tree `kind` in the existing, empty directory `root` (which is kept:
/// for debugging, see `write_fixture_trees` in `mkfs_parity.rs`).
pub fn build_tree(kind: Kind, root: &Path) {
    let b = Builder {
        root: root.to_path_buf(),
    };
    b.chmod("", 0o755);
    match kind {
        Kind::Empty => {}
        Kind::Single => {
            b.file("only.txt", &text(1, 10_000), 0o644);
        }
        Kind::Small => build_small(&b),
        Kind::Full => build_full(&b),
        Kind::BigDevices => {
            b.dev("c300_70000", libc::S_IFCHR, 300, 70000, 0o600);
            b.dev("b8_300", libc::S_IFBLK, 8, 300, 0o660);
            b.dev("c4095_1048575", libc::S_IFCHR, 4095, 1_048_575, 0o600);
            b.dev("c1_3", libc::S_IFCHR, 1, 3, 0o666);
            b.dev("c255_255", libc::S_IFCHR, 255, 255, 0o666);
            b.file("file", b"plain\n", 0o644);
        }
    }
    b.fix_times();
}

/// Content helpers. A tiny xorshift PRNG keeps everything deterministic without `rand`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `len` bytes of incompressible data.
pub fn random(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// `len` bytes of compressible pseudo-English text.
pub fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "flash",
        "erase",
        "block",
        "node",
        "inode",
        "journalling",
        "file",
        "system",
        "version",
        "compress",
        "zlib",
        "rtime",
        "kernel",
        "mount",
        "garbage",
        "collector",
        "cleanmarker",
        "summary",
        "dirent",
        "page",
        "of",
        "and",
        "a",
        "is",
        "to",
        "in",
        "data",
        "write",
        "read",
        "NOR",
        "NAND",
        "JFFS2",
        "image",
        "tree",
        "byte",
        "order",
    ];
    let mut r = Rng::new(seed);
    let mut v = Vec::with_capacity(len + 16);
    let mut col = 0;
    while v.len() < len {
        let w = WORDS[r.below(WORDS.len() as u64) as usize];
        v.extend_from_slice(w.as_bytes());
        col += w.len() + 1;
        if col > 70 {
            v.push(b'\n');
            col = 0;
        } else {
            v.push(b' ');
        }
    }
    v.truncate(len);
    v
}

/// Creates the entries of a fixture tree below `root`. Paths are relative, as bytes (so
/// that names need not be UTF-8). Every helper panics with the path on failure.
struct Builder {
    root: PathBuf,
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

fn check(rc: libc::c_int, what: &str, p: &Path) {
    if rc != 0 {
        panic!(
            "fixture: {what} {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
    }
}

impl Builder {
    fn p(&self, rel: impl AsRef<[u8]>) -> PathBuf {
        let rel = rel.as_ref();
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(OsStr::from_bytes(rel))
        }
    }

    fn chmod(&self, rel: impl AsRef<[u8]>, mode: u32) {
        let p = self.p(rel);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("fixture: chmod {}: {e}", p.display()));
    }

    fn dir(&self, rel: impl AsRef<[u8]>, mode: u32) {
        let p = self.p(&rel);
        std::fs::create_dir_all(&p)
            .unwrap_or_else(|e| panic!("fixture: mkdir {}: {e}", p.display()));
        self.chmod(rel, mode);
    }

    fn file(&self, rel: impl AsRef<[u8]>, data: &[u8], mode: u32) {
        let p = self.p(&rel);
        std::fs::write(&p, data).unwrap_or_else(|e| panic!("fixture: write {}: {e}", p.display()));
        self.chmod(rel, mode);
    }

    /// A sparse file of `len` bytes with `chunks` of data written at the given offsets.
    fn sparse(&self, rel: impl AsRef<[u8]>, len: u64, chunks: &[(u64, &[u8])]) {
        use std::os::unix::fs::FileExt;
        let p = self.p(&rel);
        let f =
            std::fs::File::create(&p).unwrap_or_else(|e| panic!("fixture: {}: {e}", p.display()));
        f.set_len(len).expect("set_len");
        for (off, data) in chunks {
            f.write_all_at(data, *off).expect("pwrite");
        }
        self.chmod(rel, 0o644);
    }

    fn symlink(&self, target: impl AsRef<[u8]>, rel: impl AsRef<[u8]>) {
        let p = self.p(rel);
        std::os::unix::fs::symlink(OsStr::from_bytes(target.as_ref()), &p)
            .unwrap_or_else(|e| panic!("fixture: symlink {}: {e}", p.display()));
    }

    /// A hard link `rel` to the existing `existing` (symlinks are linked, not followed).
    fn hardlink(&self, existing: impl AsRef<[u8]>, rel: impl AsRef<[u8]>) {
        let (a, b) = (self.p(existing), self.p(rel));
        // SAFETY: valid NUL-terminated paths.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                cpath(&a).as_ptr(),
                libc::AT_FDCWD,
                cpath(&b).as_ptr(),
                0,
            )
        };
        check(rc, "link", &b);
    }

    fn fifo(&self, rel: impl AsRef<[u8]>, mode: u32) {
        let p = self.p(&rel);
        // SAFETY: valid NUL-terminated path.
        check(
            unsafe { libc::mkfifo(cpath(&p).as_ptr(), 0o600) },
            "mkfifo",
            &p,
        );
        self.chmod(rel, mode);
    }

    fn socket(&self, rel: impl AsRef<[u8]>) {
        let p = self.p(&rel);
        let l = std::os::unix::net::UnixListener::bind(&p)
            .unwrap_or_else(|e| panic!("fixture: bind {}: {e}", p.display()));
        drop(l); // the socket file stays
        self.chmod(rel, 0o755);
    }

    fn dev(&self, rel: impl AsRef<[u8]>, kind: libc::mode_t, major: u32, minor: u32, mode: u32) {
        let p = self.p(&rel);
        let dev = libc::makedev(major, minor);
        // SAFETY: valid NUL-terminated path.
        check(
            unsafe { libc::mknod(cpath(&p).as_ptr(), kind | 0o600, dev) },
            "mknod",
            &p,
        );
        self.chmod(rel, mode);
    }

    /// lchown; the permission bits (setuid/setgid, which chown clears) are restored.
    fn own(&self, rel: impl AsRef<[u8]>, uid: u32, gid: u32) {
        let p = self.p(&rel);
        let meta = std::fs::symlink_metadata(&p).expect("lstat");
        // SAFETY: valid NUL-terminated path.
        check(
            unsafe { libc::lchown(cpath(&p).as_ptr(), uid, gid) },
            "lchown",
            &p,
        );
        if !meta.file_type().is_symlink() {
            self.chmod(rel, meta.permissions().mode() & 0o7777);
        }
    }

    fn xattr(&self, rel: impl AsRef<[u8]>, name: &str, value: &[u8]) {
        let p = self.p(rel);
        let n = CString::new(name).expect("name");
        // SAFETY: valid pointers and lengths.
        let rc = unsafe {
            libc::lsetxattr(
                cpath(&p).as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                0,
            )
        };
        check(rc, &format!("lsetxattr {name} on"), &p);
    }

    /// `setfacl ARGS path`.
    fn setfacl(&self, rel: impl AsRef<[u8]>, args: &[&str]) {
        let p = self.p(rel);
        let st = Command::new("setfacl")
            .args(args)
            .arg(&p)
            .status()
            .unwrap_or_else(|e| panic!("fixture: setfacl (apt-get install acl): {e}"));
        assert!(
            st.success(),
            "fixture: setfacl {args:?} {} failed",
            p.display()
        );
    }

    fn set_mtime(&self, rel: impl AsRef<[u8]>, t: i64) {
        set_mtime(&self.p(rel), t);
    }

    /// Every entry gets [`FIXED_MTIME`] (children before their directory), except those
    /// whose name starts with "t+" which get FIXED_MTIME + the number after it.
    fn fix_times(&self) {
        fn walk(p: &Path) {
            let meta = std::fs::symlink_metadata(p).expect("lstat");
            if meta.is_dir() {
                for e in std::fs::read_dir(p).expect("readdir") {
                    walk(&e.expect("dirent").path());
                }
            }
            let name = p.file_name().map(|n| n.as_bytes()).unwrap_or(b"");
            let t = match name.strip_prefix(b"t+") {
                Some(n) => FIXED_MTIME + std::str::from_utf8(n).unwrap().parse::<i64>().unwrap(),
                None => FIXED_MTIME,
            };
            set_mtime(p, t);
        }
        walk(&self.root);
    }
}

/// Sets atime and mtime of `p` (not following symlinks).
pub fn set_mtime(p: &Path, t: i64) {
    let ts = libc::timespec {
        tv_sec: t as libc::time_t,
        tv_nsec: 0,
    };
    let times = [ts, ts];
    // SAFETY: valid path and a two-element array.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            cpath(p).as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    check(rc, "utimensat", p);
}

/// File sizes at the 4096 page edges.
pub const EDGE_SIZES: &[usize] = &[0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 3 * 4096 + 1];

/// Things both the small and the full tree contain.
fn build_common(b: &Builder, big: bool) {
    // Sizes at page edges, compressible and not.
    b.dir("sizes", 0o755);
    for (i, &n) in EDGE_SIZES.iter().enumerate() {
        b.file(
            format!("sizes/text_{n:05}"),
            &text(100 + i as u64, n),
            0o644,
        );
        b.file(
            format!("sizes/rand_{n:05}"),
            &random(200 + i as u64, n),
            0o644,
        );
    }
    // Data files.
    b.dir("data", 0o755);
    let scale = if big { 5 } else { 1 };
    b.file("data/text_large", &text(7, 40_000 * scale), 0o644);
    b.file("data/random", &random(8, 14_000 * scale), 0o644);
    // Text and random pages interleaved, ending mid-page.
    let mut mixed = Vec::new();
    for i in 0..(6 * scale as u64) {
        if i % 2 == 0 {
            mixed.extend(text(300 + i, 4096));
        } else {
            mixed.extend(random(400 + i, 4096));
        }
    }
    mixed.extend(text(999, 1234));
    b.file("data/mixed", &mixed, 0o644);
    // A short repeated pattern: rtime does well on it.
    let pat: Vec<u8> = (0..20_000u32)
        .map(|i| b"abcabd"[(i % 6) as usize])
        .collect();
    b.file("data/pattern", &pat, 0o644);
    b.file("data/zeros", &vec![0u8; 16_384 * scale], 0o644);
    b.sparse(
        "data/sparse",
        (120_000 * scale) as u64,
        &[
            (50_000, b"middle of a hole"),
            ((120_000 * scale - 10) as u64, b"the end!!\n"),
        ],
    );
    b.file("data/empty", b"", 0o644);

    // Links.
    b.dir("links", 0o755);
    b.file("links/hard_a", &text(11, 5000), 0o644);
    b.hardlink("links/hard_a", "links/hard_b"); // same directory
    b.dir("other", 0o755);
    b.hardlink("links/hard_a", "other/hard_c"); // across directories
                                                // First seen (in write order) in a later directory: "zz" is written after "data".
    b.dir("zz", 0o755);
    b.file("zz/first_copy", b"which copy owns the inode?\n", 0o600);
    b.hardlink("zz/first_copy", "data/later_copy");
    b.symlink("hard_a", "links/sym_rel");
    b.symlink("/etc/passwd", "links/sym_abs");
    b.symlink("does/not/exist", "links/sym_dangling");
    b.symlink("x".repeat(254), "links/sym_254");
    b.symlink("y".repeat(255), "links/sym_255");
    let long: String = "long/".repeat(60) + "target"; // 306 bytes
    b.symlink(&long, "links/sym_long");
    b.symlink("sym_rel", "links/sym_chain");
    b.symlink(".", "links/sym_dot");

    // Special files.
    b.dir("special", 0o755);
    b.fifo("special/fifo", 0o644);
    b.hardlink("special/fifo", "special/fifo_link");
    b.socket("special/sock");
    b.dev("special/null", libc::S_IFCHR, 1, 3, 0o666);
    b.dev("special/sda", libc::S_IFBLK, 8, 0, 0o660);
    b.dev("special/tty64", libc::S_IFCHR, 4, 64, 0o620);
    b.dev("special/c255_255", libc::S_IFCHR, 255, 255, 0o600);
    b.own("special/sda", 0, 6);

    // Empty things.
    b.dir("empty_dir", 0o755);
    b.dir("nest/only_empty_dir", 0o700);

    // Modes and owners.
    b.dir("modes", 0o755);
    b.file("modes/setuid", b"#!/bin/sh\n", 0o4755);
    b.file("modes/setgid", b"#!/bin/sh\n", 0o2755);
    b.file("modes/both", b"#!/bin/sh\n", 0o6711);
    b.file("modes/none", b"nobody may read\n", 0o000);
    b.file("modes/ro", b"read only\n", 0o444);
    b.file("modes/world", b"world writable\n", 0o666);
    b.dir("modes/sticky", 0o1777);
    b.file("modes/sticky/inside", b"x\n", 0o622);
    b.dir("modes/private", 0o700);
    b.file("modes/private/secret", b"s\n", 0o600);
    b.own("modes/setuid", 1000, 1000);
    b.own("modes/setgid", 65534, 65534);
    b.own("modes/world", 0, 100);
    b.own("modes/sticky", 1234, 5678);
    b.own("links/sym_rel", 1001, 1002);
    b.own("special/fifo", 42, 43);

    // Names, sorted by bytes (C locale): uppercase before lowercase, UTF-8 and other
    // bytes >= 0x80 last, unlike any UTF-8 locale's collation.
    b.dir("names", 0o755);
    for name in [
        "Zebra",
        "apple",
        "Apple",
        "zebra",
        "_under",
        "-dash",
        "~tilde",
        "0digit",
        "éclair",
        "eclair",
        "Ångström",
        "ünïcödé",
        "日本語",
        "emoji_😀",
        "with space",
        "tab\tname",
        "a.b",
        "a-b",
        "a_b",
        "ab",
        "a",
        "B",
        "b",
    ] {
        b.file(format!("names/{name}"), name.as_bytes(), 0o644);
    }
    b.file(b"names/latin1_\xe9t\xe9".as_slice(), b"latin-1 name", 0o644);
    b.file(b"names/\xff\xfe".as_slice(), b"ff fe", 0o644);
    b.file(b"names/\x80".as_slice(), b"80", 0o644);
    b.file(b"names/a\x7f".as_slice(), b"7f", 0o644);
    b.file(
        format!("names/{}", "n".repeat(255)),
        b"255-byte name\n",
        0o644,
    );
    b.dir(format!("names/{}", "D".repeat(255)), 0o755);
    b.file(
        format!("names/{}/{}", "D".repeat(255), "m".repeat(255)),
        b"in a long dir\n",
        0o644,
    );
    b.file(".hidden", b"dot file\n", 0o644);
    b.dir(".hiddendir", 0o755);
    b.file(".hiddendir/.x", b"x", 0o644);
    b.file("A_upper", b"A\n", 0o644);
    b.file("a_lower", b"a\n", 0o644);

    // Extended attributes (only copied with --with-xattr / --with-selinux / --with-posix-acl).
    b.dir("xattrs", 0o755);
    for f in ["x1", "x2", "x3"] {
        b.file(format!("xattrs/{f}"), f.as_bytes(), 0o644);
        // Identical on several files: one datum, several xrefs.
        b.xattr(format!("xattrs/{f}"), "user.comment", b"shared value");
        b.xattr(
            format!("xattrs/{f}"),
            "security.selinux",
            b"system_u:object_r:etc_t:s0\0",
        );
    }
    b.xattr("xattrs/x2", "user.other", b"only on x2");
    b.xattr("xattrs/x3", "trusted.secret", b"trusted value");
    b.xattr("xattrs/x3", "user.empty", b"");
    b.xattr(
        "xattrs/x3",
        "security.capability",
        &[
            1, 0, 0, 2, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    );
    b.hardlink("xattrs/x1", "xattrs/x1_link"); // hard link paths get no xattrs
    b.file("xattrs/big_value", b"big", 0o644);
    b.xattr("xattrs/big_value", "user.big", &text(77, 1500));
    b.dir("xattrs/xdir/sub", 0o755);
    b.file("xattrs/xdir/sub/f", b"f", 0o644);
    b.file("xattrs/xdir/g", b"g", 0o644);
    // Directory xattrs: mkfs.jffs2 writes the xrefs of a directory with children twice.
    b.xattr("xattrs/xdir", "user.dirattr", b"on a directory");
    b.xattr("xattrs/xdir/sub", "user.comment", b"shared value");
    b.xattr("xattrs/xdir/sub", "trusted.dir", b"t");
    b.dir("xattrs/xdir_empty", 0o755);
    b.xattr("xattrs/xdir_empty", "user.dirattr", b"on a directory");
    b.fifo("xattrs/fifo", 0o644);
    b.xattr("xattrs/fifo", "trusted.fifo", b"fifo attr");
    b.symlink("x1", "xattrs/sym");
    b.xattr("xattrs/sym", "trusted.link", b"on the link itself");
    b.dev("xattrs/dev", libc::S_IFCHR, 10, 200, 0o600);
    b.xattr(
        "xattrs/dev",
        "security.selinux",
        b"system_u:object_r:device_t:s0\0",
    );
    // POSIX ACLs (setfacl also changes the group bits into the mask).
    b.file("xattrs/acl_file", b"acl", 0o640);
    b.setfacl(
        "xattrs/acl_file",
        &["-m", "u:1000:rw-,g:100:r--,u:65534:r--,g:5:---,m::rw-"],
    );
    b.file("xattrs/acl_file2", b"acl2", 0o640);
    b.setfacl(
        "xattrs/acl_file2",
        &["-m", "u:1000:rw-,g:100:r--,u:65534:r--,g:5:---,m::rw-"],
    );
    b.dir("xattrs/acl_dir/child", 0o750);
    b.setfacl("xattrs/acl_dir", &["-m", "u:1000:rwx"]);
    b.setfacl("xattrs/acl_dir", &["-d", "-m", "u:1000:rwx,g:100:r-x"]);
    // The root's own xattrs are written first, once.
    b.xattr("", "user.root", b"the root");
    b.xattr("", "trusted.root", b"t root");

    // Timestamps other than FIXED_MTIME ("t+N" gets FIXED_MTIME + N).
    b.file("t+1", b"one second later\n", 0o644);
    b.file("t+86400", b"one day later\n", 0o644);
    b.dir("t+7", 0o755);
    b.file("t+7/t+3600", b"in a dir\n", 0o644);
}

fn build_small(b: &Builder) {
    build_common(b, false);
}

fn build_full(b: &Builder) {
    build_common(b, true);
    // Deep nesting: 30 levels.
    let mut p = String::from("deep");
    for i in 0..30 {
        p.push_str(&format!("/d{i:02}"));
    }
    b.dir(&p, 0o755);
    b.file(format!("{p}/leaf.txt"), &text(30, 3000), 0o644);
    b.file("deep/d00/d01/mid", b"mid\n", 0o644);
    // 1500 entries in one directory; some with content, some directories.
    b.dir("many", 0o755);
    for i in 0..1500u64 {
        let name = format!("many/e{i:04}");
        match i % 50 {
            0 => b.dir(&name, 0o755),
            7 | 21 => b.file(&name, &text(1000 + i, 100 + i as usize), 0o644),
            33 => b.symlink(format!("e{:04}", i - 1), &name),
            _ => b.file(&name, b"", 0o644),
        }
    }
    b.file("many/e0000/inside", b"a child of the first entry\n", 0o644);
    // Owners beyond 16 bits (truncated by mkfs.jffs2).
    b.dir("owners", 0o755);
    b.file("owners/u70000", b"big uid\n", 0o644);
    b.own("owners/u70000", 70_000, 70_001);
    b.file("owners/u65535", b"max uid\n", 0o644);
    b.own("owners/u65535", 65_535, 65_535);
    // A larger compressible and random file.
    b.file("data/text_big", &text(31, 300_000), 0o644);
    b.file("data/random_big", &random(32, 150_000), 0o644);
}

/// A fixture file under `fixtures/trees/` (committed inputs such as device tables).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/trees")
        .join(name)
}

// ---------------------------------------------------------------------------------------
// Running the tools
// ---------------------------------------------------------------------------------------

/// Which binary to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// mtd-utils' mkfs.jffs2 (run with LC_ALL=C).
    Ref,
    /// Our jffs2-mkfs.
    Ours,
    /// Our jffs2-mkfs through a symlink named `mkfs.jffs2` (messages use that name).
    OursAsMkfs,
}

/// A directory holding a `mkfs.jffs2` symlink to our binary (made once per process; it
/// lives in Cargo's per-target test scratch directory).
pub fn ours_as_mkfs() -> &'static Path {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Remove the directories of earlier runs whose process is gone.
        if let Ok(rd) = std::fs::read_dir(base) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("as-mkfs-") {
                    if !Path::new("/proc").join(pid).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let dir = base.join(format!("as-mkfs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = dir.join("mkfs.jffs2");
        std::os::unix::fs::symlink(OURS, &link).expect("symlink mkfs.jffs2");
        link
    })
}

impl Tool {
    pub fn program(self) -> PathBuf {
        match self {
            Tool::Ref => mkfs_jffs2().to_path_buf(),
            Tool::Ours => PathBuf::from(OURS),
            Tool::OursAsMkfs => ours_as_mkfs().to_path_buf(),
        }
    }

    /// A command with a clean, deterministic environment.
    pub fn command(self) -> Command {
        let mut c = Command::new(self.program());
        c.env("LC_ALL", "C")
            .env_remove("SOURCE_DATE_EPOCH")
            .env_remove("LANG")
            .env_remove("LANGUAGE")
            .stdin(Stdio::null());
        c
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Output {
    /// Exit status (-1 when killed by a signal).
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `cmd` to completion (stdout and stderr captured).
pub fn run(mut cmd: Command) -> Output {
    let o = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    Output {
        status: o.status.code().unwrap_or(-1),
        stdout: o.stdout,
        stderr: o.stderr,
    }
}

/// Runs `tool` with `args`.
pub fn run_tool<S: AsRef<OsStr>>(tool: Tool, args: &[S]) -> Output {
    let mut c = tool.command();
    c.args(args);
    run(c)
}

/// Turns `&["-e", "8KiB"]`-like lists into owned arguments.
pub fn os_args(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// The endianness `args` select ("-l"/"-b", last wins; default: host = little here).
pub fn big_endian(args: &[OsString]) -> bool {
    let mut big = cfg!(target_endian = "big");
    for a in args {
        match a.as_bytes() {
            b"-b" | b"--big-endian" => big = true,
            b"-l" | b"--little-endian" => big = false,
            _ => {}
        }
    }
    big
}

// ---------------------------------------------------------------------------------------
// Comparing images
// ---------------------------------------------------------------------------------------

/// `jffs2dump -c -v` of `image` in the given byte order.
pub fn jffs2dump(image: &Path, big: bool) -> String {
    let o = run({
        let mut c = Command::new(jffs2dump_path());
        c.arg("-c")
            .arg("-v")
            .arg(if big { "-b" } else { "-l" })
            .arg(image);
        c
    });
    o.stdout_text()
}

/// The first offset where `a` and `b` differ (the shorter length when one is a prefix).
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    let n = a.len().min(b.len());
    match (0..n).find(|&i| a[i] != b[i]) {
        Some(i) => Some(i),
        None if a.len() != b.len() => Some(n),
        None => None,
    }
}

fn hex_window(data: &[u8], at: usize) -> String {
    let start = at.saturating_sub(16) & !15;
    let end = (start + 64).min(data.len());
    let mut s = String::new();
    let mut o = start;
    while o < end {
        let line = &data[o..(o + 16).min(end)];
        let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        let _ = writeln!(s, "    {o:08x}: {}", hex.join(" "));
        o += 16;
    }
    s
}

/// A readable account of how image `ours` differs from the reference image `reference`:
/// sizes, the first differing offset with a hex window of both, and the first differing
/// lines of `jffs2dump -c -v` of both. `None` when they are equal.
pub fn explain_difference(reference: &Path, ours: &Path, big: bool) -> Option<String> {
    let a = std::fs::read(reference).expect("read reference image");
    let b = std::fs::read(ours).expect("read our image");
    let at = first_difference(&a, &b)?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "images differ: mkfs.jffs2 {} bytes, ours {} bytes, first difference at offset {at} (0x{at:x})",
        a.len(),
        b.len()
    );
    let _ = writeln!(
        s,
        "  mkfs.jffs2:\n{}  ours:\n{}",
        hex_window(&a, at),
        hex_window(&b, at)
    );
    let da = jffs2dump(reference, big);
    let db = jffs2dump(ours, big);
    let la: Vec<&str> = da.lines().collect();
    let lb: Vec<&str> = db.lines().collect();
    let first = (0..la.len().max(lb.len())).find(|&i| la.get(i) != lb.get(i));
    match first {
        None => {
            let _ = writeln!(
                s,
                "  jffs2dump -c -v output is identical (difference in data/padding bytes)"
            );
        }
        Some(i) => {
            let from = i.saturating_sub(3);
            let _ = writeln!(s, "  jffs2dump -c -v, first differing line {}:", i + 1);
            let _ = writeln!(s, "  --- mkfs.jffs2");
            for (k, l) in la.iter().enumerate().skip(from).take(10) {
                let _ = writeln!(s, "  {}{l}", if k == i { "> " } else { "  " });
            }
            let _ = writeln!(s, "  +++ ours");
            for (k, l) in lb.iter().enumerate().skip(from).take(10) {
                let _ = writeln!(s, "  {}{l}", if k == i { "> " } else { "  " });
            }
        }
    }
    Some(s)
}

/// The first differing line of two texts, with a little context; `None` if equal.
pub fn text_difference(what: &str, reference: &str, ours: &str) -> Option<String> {
    if reference == ours {
        return None;
    }
    let la: Vec<&str> = reference.lines().collect();
    let lb: Vec<&str> = ours.lines().collect();
    let i = (0..la.len().max(lb.len()))
        .find(|&i| la.get(i) != lb.get(i))
        .unwrap_or(la.len().min(lb.len()));
    let mut s = format!(
        "{what} differs ({} vs {} lines; first difference at line {}):\n",
        la.len(),
        lb.len(),
        i + 1
    );
    let from = i.saturating_sub(2);
    let _ = writeln!(s, "  --- mkfs.jffs2");
    for l in la.iter().skip(from).take(6) {
        let _ = writeln!(s, "    {l:?}");
    }
    let _ = writeln!(s, "  +++ ours");
    for l in lb.iter().skip(from).take(6) {
        let _ = writeln!(s, "    {l:?}");
    }
    if la == lb {
        let _ = writeln!(s, "  (the lines are equal: only line endings differ)");
    }
    Some(s)
}

/// A scratch directory for one test.
pub fn scratch() -> TempDir {
    // JFFS2_TEST_KEEP=1 keeps every scratch directory (to look at, or to take the crafted
    // images as fuzz seeds: fuzz/hostile/README.md).
    let keep = std::env::var_os("JFFS2_TEST_KEEP").is_some_and(|v| v == "1");
    tempfile::Builder::new()
        .prefix("jffs2-test-")
        .disable_cleanup(keep)
        .tempdir()
        .expect("create a temporary directory")
}

/// Where failing images are kept for inspection.
pub fn keep_failure(case: &str, files: &[(&str, &Path)]) -> PathBuf {
    let safe: String = case
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("mkfs-parity-failures")
        .join(safe);
    let _ = std::fs::create_dir_all(&dir);
    for (name, p) in files {
        let _ = std::fs::copy(p, dir.join(name));
    }
    dir
}

// ---------------------------------------------------------------------------------------
// A minimal node walker (independent of the crate under test)
// ---------------------------------------------------------------------------------------

/// One node found in an image.
#[derive(Debug, Clone)]
pub struct RawNode {
    pub offset: usize,
    pub nodetype: u16,
    pub totlen: u32,
    /// The whole node (`totlen` bytes, clipped to the image).
    pub bytes: Vec<u8>,
}

pub const NODETYPE_DIRENT: u16 = 0xE001;
pub const NODETYPE_INODE: u16 = 0xE002;
pub const NODETYPE_CLEANMARKER: u16 = 0x2003;
pub const NODETYPE_SUMMARY: u16 = 0x2006;
pub const NODETYPE_XATTR: u16 = 0xE008;
pub const NODETYPE_XREF: u16 = 0xE009;

/// Reads u16/u32 in the image's byte order.
#[derive(Clone, Copy)]
pub struct Endian {
    pub big: bool,
}

impl Endian {
    pub fn u16(self, b: &[u8], at: usize) -> u16 {
        let a = [b[at], b[at + 1]];
        if self.big {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    }
    pub fn u32(self, b: &[u8], at: usize) -> u32 {
        let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
}

/// Every node with a valid magic, walking 4-byte words like jffs2dump (no CRC checks).
pub fn nodes(image: &[u8], e: Endian) -> Vec<RawNode> {
    let mut out = Vec::new();
    let mut ofs = 0;
    while ofs + 12 <= image.len() {
        if e.u16(image, ofs) != 0x1985 {
            ofs += 4;
            continue;
        }
        let nodetype = e.u16(image, ofs + 2);
        let totlen = e.u32(image, ofs + 4);
        if totlen < 12 {
            ofs += 4;
            continue;
        }
        let end = (ofs + totlen as usize).min(image.len());
        out.push(RawNode {
            offset: ofs,
            nodetype,
            totlen,
            bytes: image[ofs..end].to_vec(),
        });
        ofs += (totlen as usize + 3) & !3;
    }
    out
}

/// The fields of an inode node the tests look at.
#[derive(Debug, Clone)]
pub struct InodeInfo {
    pub ino: u32,
    pub version: u32,
    pub mode: u32,
    pub uid: u16,
    pub gid: u16,
    pub isize: u32,
    pub atime: u32,
    pub mtime: u32,
    pub ctime: u32,
    pub offset: u32,
    pub csize: u32,
    pub dsize: u32,
    pub compr: u8,
    pub data: Vec<u8>,
}

pub fn inode_info(n: &RawNode, e: Endian) -> InodeInfo {
    let b = &n.bytes;
    let csize = e.u32(b, 48);
    InodeInfo {
        ino: e.u32(b, 12),
        version: e.u32(b, 16),
        mode: e.u32(b, 20),
        uid: e.u16(b, 24),
        gid: e.u16(b, 26),
        isize: e.u32(b, 28),
        atime: e.u32(b, 32),
        mtime: e.u32(b, 36),
        ctime: e.u32(b, 40),
        offset: e.u32(b, 44),
        csize,
        dsize: e.u32(b, 52),
        compr: b[56],
        data: b[68..(68 + csize as usize).min(b.len())].to_vec(),
    }
}

/// The fields of a dirent node the tests look at.
#[derive(Debug, Clone)]
pub struct DirentInfo {
    pub pino: u32,
    pub version: u32,
    pub ino: u32,
    pub mctime: u32,
    pub dtype: u8,
    pub name: Vec<u8>,
}

pub fn dirent_info(n: &RawNode, e: Endian) -> DirentInfo {
    let b = &n.bytes;
    let nsize = b[28] as usize;
    DirentInfo {
        pino: e.u32(b, 12),
        version: e.u32(b, 16),
        ino: e.u32(b, 20),
        mctime: e.u32(b, 24),
        dtype: b[29],
        name: b[40..(40 + nsize).min(b.len())].to_vec(),
    }
}

/// Lossy text of a byte name.
pub fn name_text(n: &[u8]) -> String {
    String::from_utf8_lossy(n).into_owned()
}

/// Converts bytes to an `OsString`.
pub fn os(b: &[u8]) -> OsString {
    OsString::from_vec(b.to_vec())
}

/// mtd-utils' text as our tools show it: on every line (leading tabs kept), names that are not
/// UTF-8 or hold control or bidirectional characters are escaped (`jffs2::text`), where
/// mtd-utils prints them raw. Ordinary lines are unchanged.
pub fn as_we_show(raw: &[u8]) -> String {
    raw.split_inclusive(|&b| b == b'\n')
        .map(|line| {
            let (line, nl) = match line.strip_suffix(b"\n") {
                Some(l) => (l, "\n"),
                None => (line, ""),
            };
            let tabs = line.iter().take_while(|&&b| b == b'\t').count();
            let (lead, rest) = line.split_at(tabs);
            format!(
                "{}{}{nl}",
                "\t".repeat(lead.len()),
                jffs2::text::escape_if_needed(rest)
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Crafted images
// ---------------------------------------------------------------------------------------

pub use jffs2::testing::Img;

/// The erase size of the hostile tests' crafted images ([`img`]).
pub const IMG_ES: u32 = 65536;

/// A crafted little-endian image (`jffs2::testing::Img`) in 64 KiB erase blocks with
/// cleanmarkers, padded to the five blocks the kernel mounts.
pub fn img() -> Img {
    Img::new().erase_size(IMG_ES)
}

// ---------------------------------------------------------------------------------------
// Peak memory
// ---------------------------------------------------------------------------------------

/// One run of a binary under GNU time (`/usr/bin/time -f %M`).
pub struct Measured {
    pub code: i32,
    /// Empty unless asked for (a large listing is not kept).
    pub stdout: String,
    pub stderr: String,
    /// Peak resident memory, bytes.
    pub peak: u64,
}

/// Runs `bin args` under GNU time with `LC_ALL=C` and no standard input; panics if GNU time
/// is missing, or if the run panicked or died by a signal.
pub fn measured(bin: &str, args: &[&std::ffi::OsStr], keep_stdout: bool) -> Measured {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.is_file(),
        "/usr/bin/time (GNU time, Debian package `time`) is missing: run scripts/install-test-deps.sh"
    );
    let what = format!(
        "{} {}",
        Path::new(bin).file_name().unwrap().to_string_lossy(),
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let rss = tempfile::NamedTempFile::new().unwrap();
    let o = std::process::Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(rss.path())
        .arg(bin)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .stdout(if keep_stdout {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let timing = std::fs::read_to_string(rss.path()).unwrap();
    assert!(
        !timing.contains("terminated by signal"),
        "{what}: {timing}\nstderr: {stderr}"
    );
    let code = o.status.code().expect("GNU time exits normally");
    assert!(
        code != 101 && !stderr.contains("panicked"),
        "{what}: panicked (exit {code}): {stderr}"
    );
    let kib: u64 = timing
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what}: no %M in {timing:?}"));
    Measured {
        code,
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr,
        peak: kib * 1024,
    }
}
