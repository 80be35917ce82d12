//! Helpers of the jffs2-dump tests (`dump_parity.rs`, `dump_cli.rs`): running our binary
//! (also as `jffs2dump`, through a symlink) and Debian's jffs2dump with a time limit and a
//! cap on what they print (jffs2dump loops forever on some images), making images with
//! mtd-utils' mkfs.jffs2 and sumtool, deterministic trees, and corruptions.
//!
//! Included with `#[path = "common/dump.rs"] mod dump_common;` next to `mod common;`
//! (whose `mtd_tool` finds the mtd-utils tools and fails loudly when they are missing).

#![allow(dead_code)] // each test binary uses a different subset

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// Our binary.
pub const OURS: &str = env!("CARGO_BIN_EXE_jffs2-dump");

/// Debian's jffs2dump (panics when mtd-utils is missing: the test checks
/// `common::require_mtd_utils()` first, which skips).
pub fn reference() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| crate::common::mtd_tool("jffs2dump"))
}

/// Debian's mkfs.jffs2.
pub fn mkfs_tool() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| crate::common::mtd_tool("mkfs.jffs2"))
}

/// Debian's sumtool.
pub fn sumtool_tool() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| crate::common::mtd_tool("sumtool"))
}

/// A `jffs2dump` symlink to our binary (made once per process, in Cargo's scratch
/// directory; directories of finished runs are removed).
pub fn ours_as_jffs2dump() -> &'static Path {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        if let Ok(rd) = std::fs::read_dir(base) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("as-jffs2dump-") {
                    if !Path::new("/proc").join(pid).exists() {
                        let _ = std::fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let dir = base.join(format!("as-jffs2dump-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = dir.join("jffs2dump");
        std::os::unix::fs::symlink(OURS, &link).expect("symlink jffs2dump");
        link
    })
}

/// Which jffs2dump to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dump {
    /// Debian's.
    Ref,
    /// Ours as `jffs2-dump`.
    Ours,
    /// Ours through the `jffs2dump` symlink.
    OursAsRef,
}

impl Dump {
    pub fn program(self) -> PathBuf {
        match self {
            Dump::Ref => reference().to_path_buf(),
            Dump::Ours => PathBuf::from(OURS),
            Dump::OursAsRef => ours_as_jffs2dump().to_path_buf(),
        }
    }

    pub fn command(self) -> Command {
        let mut c = Command::new(self.program());
        c.env("LC_ALL", "C")
            .env_remove("LANG")
            .env_remove("LANGUAGE");
        c
    }
}

/// What a limited run produced.
#[derive(Debug)]
pub struct Run {
    /// Exit status, if it exited.
    pub status: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Killed because it ran past the time limit.
    pub timed_out: bool,
    /// Its stdout was closed after `max_stdout` bytes.
    pub capped: bool,
    pub elapsed: Duration,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    /// Exited normally (not killed, not timed out).
    pub fn finished(&self) -> bool {
        self.status.is_some() && !self.timed_out && !self.capped
    }
}

fn read_capped(mut r: impl Read, max: usize, capped: Arc<AtomicBool>) -> Vec<u8> {
    let mut v = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = max - v.len();
                v.extend_from_slice(&buf[..n.min(room)]);
                if n >= room {
                    capped.store(true, Ordering::SeqCst);
                    break; // dropping the pipe ends a writer that goes on and on
                }
            }
        }
    }
    v
}

/// Runs `cmd` for at most `timeout`, keeping at most `max_stdout` bytes of its stdout.
pub fn run_limited(mut cmd: Command, timeout: Duration, max_stdout: usize) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let capped = Arc::new(AtomicBool::new(false));
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let c2 = capped.clone();
    let t_out = std::thread::spawn(move || read_capped(out, max_stdout, c2));
    let t_err =
        std::thread::spawn(move || read_capped(err, 1 << 20, Arc::new(AtomicBool::new(false))));
    // Wait in a thread, so that a quick run costs no polling delay.
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let mut timed_out = false;
    let status = match rx.recv_timeout(timeout) {
        Ok(s) => s,
        Err(_) => {
            timed_out = true;
            // SAFETY: kill(2) on our own child, which has not been reaped yet (the waiter
            // has not returned).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            rx.recv().expect("waiter")
        }
    }
    .expect("wait");
    waiter.join().expect("waiter");
    let stdout = t_out.join().expect("stdout reader");
    let stderr = t_err.join().expect("stderr reader");
    Run {
        status: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        timed_out,
        capped: capped.load(Ordering::SeqCst),
        elapsed: start.elapsed(),
    }
}

/// Runs a jffs2dump with `args`; must finish within 60 s (use [`run_limited`] for images
/// that make Debian's loop).
pub fn dump<S: AsRef<OsStr>>(which: Dump, args: &[S]) -> Run {
    let mut c = which.command();
    c.args(args);
    let r = run_limited(c, Duration::from_secs(60), 256 << 20);
    assert!(
        r.status.is_some() || r.signal.is_some(),
        "{which:?} {:?} did not finish",
        args.iter()
            .map(|a| a.as_ref().to_owned())
            .collect::<Vec<_>>()
    );
    r
}

/// Writes `data` to `dir/name` and returns the path.
pub fn put(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, data).expect("write test image");
    p
}

/// An image made by mtd-utils' mkfs.jffs2 from `root` with `args`.
pub fn mkfs(root: &Path, args: &[&str]) -> Vec<u8> {
    let dir = crate::common::scratch();
    let out = dir.path().join("img");
    let o = Command::new(mkfs_tool())
        .env("LC_ALL", "C")
        .args(args)
        .arg("-r")
        .arg(root)
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("run mkfs.jffs2");
    assert!(
        o.status.success(),
        "mkfs.jffs2 {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read(&out).expect("read image")
}

/// `image` passed through mtd-utils' sumtool with `args` (e.g. `-l -e 16KiB`).
pub fn sumtool(image: &[u8], args: &[&str]) -> Vec<u8> {
    let dir = crate::common::scratch();
    let input = put(dir.path(), "in", image);
    let out = dir.path().join("out");
    let o = Command::new(sumtool_tool())
        .args(args)
        .arg("-i")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("run sumtool");
    assert!(
        o.status.success(),
        "sumtool {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read(&out).expect("read image")
}

/// The project's demo tree (no devices, no xattrs).
pub fn rootfs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rootfs")
}

/// The kernel-written images.
pub fn kernel_images() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures/kernel")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    v.sort();
    assert!(v.len() >= 9, "the kernel fixtures are missing from {dir:?}");
    v
}

/// A tree without device nodes (so mtd-utils' conversion is right on it): text and
/// random files of many sizes (several data nodes each), directories, symlinks, hard
/// links, a fifo; with `user_xattrs`, user.* xattrs set with `setfattr`.
pub fn plain_tree(user_xattrs: bool) -> TempDir {
    use crate::common::{random, set_mtime, text};
    let dir = tempfile::Builder::new()
        .prefix("jffs2-dump-tree-")
        .tempdir()
        .expect("tempdir");
    let r = dir.path();
    let w = |rel: &str, data: &[u8]| {
        let p = r.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, data).expect("write");
    };
    for (i, n) in [0usize, 1, 100, 4095, 4096, 4097, 9000, 30_000, 70_000]
        .iter()
        .enumerate()
    {
        w(&format!("text/t{i}"), &text(i as u64, *n));
        w(&format!("rand/r{i}"), &random(50 + i as u64, *n));
    }
    w("deep/a/b/c/d/leaf", b"leaf\n");
    w("names/with space", b"x");
    w("names/\u{e9}t\u{e9}", b"utf-8 name\n");
    w(&format!("names/{}", "n".repeat(200)), b"long name\n");
    std::os::unix::fs::symlink("../text/t3", r.join("names/link")).expect("symlink");
    std::os::unix::fs::symlink("x".repeat(200), r.join("names/longlink")).expect("symlink");
    std::fs::hard_link(r.join("text/t5"), r.join("deep/hard")).expect("hard link");
    let fifo = std::ffi::CString::new(r.join("fifo").as_os_str().as_encoded_bytes()).expect("c");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0, "mkfifo");
    if user_xattrs {
        for (rel, name, value) in [
            ("text/t1", "user.comment", "first"),
            ("text/t1", "user.mime_type", "text/plain"),
            ("rand/r2", "user.comment", "first"),
            ("deep/a", "user.dir", "a directory"),
            (".", "user.root", "the root"),
        ] {
            let st = Command::new("setfattr")
                .args(["-h", "-n", name, "-v", value])
                .arg(r.join(rel))
                .status()
                .expect("setfattr (apt-get install attr)");
            assert!(st.success(), "setfattr {name} on {rel}");
        }
    }
    // Fixed times, deepest first so directory mtimes stay put.
    let mut all: Vec<PathBuf> = walk(r);
    all.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in all {
        set_mtime(&p, crate::common::FIXED_MTIME);
    }
    set_mtime(r, crate::common::FIXED_MTIME);
    dir
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            v.extend(walk(&p));
        }
        v.push(p);
    }
    v
}

/// Offsets of the nodes Debian's `jffs2dump -c -v` lists for `image` (node lines only).
pub fn node_offsets(image: &Path, big: bool) -> Vec<(u64, String)> {
    let r = dump(
        Dump::Ref,
        &[
            OsStr::new("-c"),
            OsStr::new("-v"),
            OsStr::new(if big { "-b" } else { "-l" }),
            image.as_os_str(),
        ],
    );
    let mut v = Vec::new();
    for l in r.stdout_text().lines() {
        let t = l.trim_start();
        let kind = t.split_whitespace().next().unwrap_or("").to_string();
        let kind = if kind == "Obsolete" {
            t.split_whitespace().nth(1).unwrap_or("").to_string()
        } else {
            kind
        };
        if let Some(i) = l.find(" at 0x") {
            let hex = &l[i + 6..i + 14];
            if let Ok(off) = u64::from_str_radix(hex, 16) {
                v.push((off, kind));
            }
        }
    }
    v
}

/// `image` with the ACCURATE bit cleared in every `every`-th inode, dirent, xattr and
/// xref node — what the kernel does on NOR flash to a node it has superseded.
pub fn obsolete_some(path: &Path, big: bool, every: usize) -> Vec<u8> {
    let mut img = std::fs::read(path).expect("read");
    let nodes: Vec<(u64, String)> = node_offsets(path, big)
        .into_iter()
        .filter(|(_, k)| matches!(k.as_str(), "Inode" | "Dirent" | "Xattr" | "Xref"))
        .collect();
    for (i, (off, _)) in nodes.iter().enumerate() {
        if i % every == every / 2 {
            let at = *off as usize + if big { 2 } else { 3 };
            img[at] &= !0x20; // 0x2000 is in the high byte of the type
        }
    }
    img
}

/// Lines of a `jffs2dump -c` text with the computed value of every "Wrong …_crc" line of
/// the nodes at `offsets` removed (jffs2dump reads past its buffer for them).
pub fn mask_crc_values(text: &str, offsets: &[u64]) -> String {
    let mut s = String::new();
    for l in text.split_inclusive('\n') {
        let masked = offsets
            .iter()
            .any(|o| l.starts_with("Wrong ") && l.contains(&format!("_crc at  0x{o:08x},")));
        match (masked, l.find(" instead of ")) {
            (true, Some(i)) => {
                s.push_str(&l[..i]);
                s.push_str(" instead of (masked)\n");
            }
            _ => s.push_str(l),
        }
    }
    s
}

/// The offsets our stderr names in "reaches past the end" warnings.
pub fn past_end_offsets(stderr: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter(|l| l.contains("reaches past the end"))
        .filter_map(|l| {
            let i = l.find("node at 0x")?;
            u64::from_str_radix(l.get(i + 10..i + 18)?, 16).ok()
        })
        .collect()
}

/// The first differing line of two texts, with context; `None` when equal.
pub fn first_diff(what: &str, reference: &str, ours: &str) -> Option<String> {
    if reference == ours {
        return None;
    }
    let a: Vec<&str> = reference.split_inclusive('\n').collect();
    let b: Vec<&str> = ours.split_inclusive('\n').collect();
    let i = (0..a.len().max(b.len()))
        .find(|&i| a.get(i) != b.get(i))
        .unwrap_or(0);
    let mut s = format!(
        "{what}: first difference at line {} ({} vs {} lines)\n",
        i + 1,
        a.len(),
        b.len()
    );
    for (tag, v) in [("jffs2dump", &a), ("ours", &b)] {
        s.push_str(&format!("  --- {tag}\n"));
        for l in v.iter().skip(i.saturating_sub(2)).take(5) {
            s.push_str(&format!("    {l:?}\n"));
        }
    }
    Some(s)
}

/// A JFFS2 CRC (for crafting headers), independent of the crate under test.
pub fn crc(data: &[u8]) -> u32 {
    let mut c = 0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    c
}

/// Writes at `at` a 12-byte node header (magic, `nodetype`, `totlen`) with a valid hdr_crc:
/// computed, as the kernel does, with the ACCURATE bit (0x2000) of the type set.
pub fn put_header(img: &mut [u8], at: usize, big: bool, nodetype: u16, totlen: u32) {
    let bytes = |t: u16| {
        if big {
            (
                0x1985u16.to_be_bytes(),
                t.to_be_bytes(),
                totlen.to_be_bytes(),
            )
        } else {
            (
                0x1985u16.to_le_bytes(),
                t.to_le_bytes(),
                totlen.to_le_bytes(),
            )
        }
    };
    let (m, t, l) = bytes(nodetype | 0x2000);
    img[at..at + 2].copy_from_slice(&m);
    img[at + 2..at + 4].copy_from_slice(&t);
    img[at + 4..at + 8].copy_from_slice(&l);
    let c = crc(&img[at..at + 8]);
    img[at + 2..at + 4].copy_from_slice(&bytes(nodetype).1);
    let c = if big {
        c.to_be_bytes()
    } else {
        c.to_le_bytes()
    };
    img[at + 8..at + 12].copy_from_slice(&c);
}
