//! `jffs2-mount`: an image mounted through FUSE shows what `jffs2-dump --extract` writes (the
//! files Linux shows), for every kind of entry, in both byte orders; an ordinary user mounts,
//! reads and unmounts; hostile images mount and can be walked without the server dying;
//! `statfs` gives `jffs2_statfs`'s figures; signals and `-u` unmount.
//!
//! Needs /dev/fuse and fusermount3 (Debian package fuse3): skipped loudly without them, and
//! failing under `CI=true`. No mount is left behind: every mount is held by a [`Mounted`] whose
//! drop detaches it, whether the test passed or not.

mod common;
#[path = "common/extract.rs"]
mod extract_common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::skip;
use extract_common::{md5_hex, xattrs};

const MOUNT: &str = env!("CARGO_BIN_EXE_jffs2-mount");
const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");
const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");

/// /dev/fuse and fusermount3, or skip.
fn fuse() -> bool {
    let ok = !skip::pretend_missing("fuse3")
        && Path::new("/dev/fuse").exists()
        && skip::find_program("fusermount3", "fuse3").is_some();
    ok || {
        skip::skip("fuse3 (/dev/fuse and fusermount3)");
        false
    }
}

/// Whether something is mounted on `dir` (`/proc/self/mountinfo`).
fn is_mounted(dir: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = dir.as_os_str().as_bytes();
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| m.as_bytes() == want))
}

/// A mount point that is detached when dropped (the test passed or not): `umount -l` as root,
/// `fusermount3 -u -z` otherwise.
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..4 {
            if !is_mounted(&self.dir) {
                return;
            }
            if skip::is_root() {
                let c = std::ffi::CString::new(self.dir.as_os_str().as_bytes()).expect("path");
                // SAFETY: valid NUL-terminated path.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            } else {
                let _ = Command::new("fusermount3")
                    .arg("-u")
                    .arg("-z")
                    .arg(&self.dir)
                    .status();
            }
        }
    }
}

/// Runs `jffs2-mount ARGS IMAGE DIR` (background); the mount must be ready when it returns.
fn mount(image: &Path, dir: &Path, args: &[&str]) -> Mounted {
    let guard = Mounted {
        dir: dir.to_path_buf(),
    };
    let o = Command::new(MOUNT)
        .args(args)
        .arg(image)
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run jffs2-mount");
    assert!(
        o.status.success(),
        "jffs2-mount {image:?} {dir:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        is_mounted(dir),
        "jffs2-mount returned before {dir:?} was mounted"
    );
    guard
}

/// Runs `jffs2-mkfs ARGS -r ROOT -o OUT`.
fn mkfs(root: &Path, out: &Path, args: &[&str]) {
    let o = Command::new(MKFS)
        .args(args)
        .arg("-r")
        .arg(root)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run jffs2-mkfs");
    assert!(
        o.status.success(),
        "jffs2-mkfs: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One entry as `lstat`, `readlink`, `read` and the xattr calls see it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    mode: u32,
    uid: u32,
    gid: u32,
    /// Not compared for directories (a host directory has a size of its own) nor symlinks
    /// (Linux gives a symlink the node's `isize`, which mkfs.jffs2 leaves at the length of
    /// a target it cut to 254 bytes; an extracted link has its target's length).
    size: u64,
    nlink: u64,
    mtime: i64,
    rdev: Option<(u32, u32)>,
    target: Option<Vec<u8>>,
    md5: Option<String>,
    xattrs: BTreeMap<String, Vec<u8>>,
}

/// A tree's listing: path -> entry (or the errno `lstat` gave), and the hard-link groups
/// (paths sharing an `st_ino`, for non-directories of several links).
struct Listing {
    entries: BTreeMap<Vec<u8>, Result<Entry, i32>>,
    links: BTreeSet<Vec<Vec<u8>>>,
}

fn entry(p: &Path, m: &std::fs::Metadata) -> Entry {
    let fmt = m.mode() & libc::S_IFMT;
    let dev = fmt == libc::S_IFCHR || fmt == libc::S_IFBLK;
    Entry {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        size: if fmt == libc::S_IFDIR || fmt == libc::S_IFLNK {
            0
        } else {
            m.size()
        },
        nlink: m.nlink(),
        mtime: m.mtime(),
        rdev: dev.then(|| (libc::major(m.rdev()), libc::minor(m.rdev()))),
        target: (fmt == libc::S_IFLNK).then(|| {
            std::fs::read_link(p)
                .map(|t| t.as_os_str().as_bytes().to_vec())
                .expect("readlink")
        }),
        md5: (fmt == libc::S_IFREG).then(|| match std::fs::read(p) {
            Ok(d) => md5_hex(&d),
            Err(e) => format!("read error {e}"),
        }),
        xattrs: xattrs(p),
    }
}

/// Every entry below `root`, never following links.
fn listing(root: &Path) -> Listing {
    let mut entries = BTreeMap::new();
    let mut inos: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
    let mut todo = vec![Vec::new()];
    while let Some(rel) = todo.pop() {
        let p = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(OsStr::from_bytes(&rel))
        };
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                entries.insert(rel, Err(e.raw_os_error().unwrap_or(0)));
                continue;
            }
        };
        if !m.is_dir() && m.nlink() > 1 {
            inos.entry(m.ino()).or_default().push(rel.clone());
        }
        if m.is_dir() {
            for e in std::fs::read_dir(&p).expect("readdir") {
                let mut r = rel.clone();
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(e.expect("dirent").file_name().as_bytes());
                todo.push(r);
            }
        }
        entries.insert(rel, Ok(entry(&p, &m)));
    }
    let links = inos
        .into_values()
        .map(|mut v| {
            v.sort();
            v
        })
        .collect();
    Listing { entries, links }
}

fn shown(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

/// The differences between the mount's listing and the extraction's. What may differ: the
/// root's link count (the kernel gives JFFS2's root one more, "for some reason"), and
/// entries the extraction leaves out because Linux cannot read them (on the mount their
/// `lstat` fails, as on Linux).
fn differences(mounted: &Listing, extracted: &Listing) -> Vec<String> {
    let mut out = Vec::new();
    for (path, m) in &mounted.entries {
        let e = extracted.entries.get(path);
        match (m, e) {
            (Ok(m), Some(Ok(e))) => {
                let mut m = m.clone();
                if path.is_empty() {
                    m.nlink -= 1;
                }
                if &m != e {
                    out.push(format!("{}: mounted {m:?}\n  extracted {e:?}", shown(path)));
                }
            }
            (Err(errno), None) => {
                if ![libc::ENAMETOOLONG, libc::EIO].contains(errno) {
                    out.push(format!("{}: lstat errno {errno}", shown(path)));
                }
            }
            _ => out.push(format!("{}: mounted {m:?}, extracted {e:?}", shown(path))),
        }
    }
    for path in extracted.entries.keys() {
        if !mounted.entries.contains_key(path) {
            out.push(format!("{}: extracted, not mounted", shown(path)));
        }
    }
    if mounted.links != extracted.links {
        out.push(format!(
            "hard links: mounted {:?}, extracted {:?}",
            mounted.links, extracted.links
        ));
    }
    out
}

/// `jffs2-dump --extract OUT IMAGE` (as root: owners and devices real).
fn extract(image: &Path, out: &Path) {
    let o = Command::new(DUMP)
        .arg("--extract")
        .arg(out)
        .arg(image)
        .output()
        .expect("run jffs2-dump");
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "jffs2-dump --extract: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn mount_lists_what_extraction_writes() {
    if !fuse() || !skip::root() {
        return;
    }
    let tree = common::tree(common::Kind::Small);
    let dir = common::scratch();
    let d = dir.path();
    // A file of holes and data, as big as a few erase blocks.
    let big = tree.path().join("big_with_holes");
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(&big).expect("create");
        f.write_all_at(&common::random(7, 300_000), 0)
            .expect("write");
        f.write_all_at(b"tail", 2_000_000).expect("write");
    }
    let img = d.join("img");
    mkfs(tree.path(), &img, &["-l", "-e", "64KiB", "--with-xattr"]);
    let out = d.join("out");
    extract(&img, &out);
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let _m = mount(&img, &mnt, &[]);
    let (mounted, extracted) = (listing(&mnt), listing(&out));
    assert!(
        mounted.entries.len() > 50,
        "{} entries",
        mounted.entries.len()
    );
    assert!(!mounted.links.is_empty(), "no hard links listed");
    assert!(
        mounted
            .entries
            .values()
            .flatten()
            .any(|e| e.xattrs.contains_key("system.posix_acl_access")),
        "no ACL shown"
    );
    let diff = differences(&mounted, &extracted);
    assert!(
        diff.is_empty(),
        "{} differences:\n{}",
        diff.len(),
        diff.join("\n")
    );
}
