//! Extraction metadata and terminal-safe text against hostile images and hostile trees:
//!
//! * `jffs2-dump --force --extract` into an existing tree never hands an existing directory
//!   (the destination included) the image's owner, mode, times or xattrs; only what it
//!   creates gets them, and nothing is chown/chmod-ed through a symbolic link that was there.
//!
//! The metadata test needs root (chown); without it, it says SKIPPED loudly (fails under
//! `CI=true`).

mod common;
#[path = "common/dump.rs"]
mod dump_common;
#[path = "common/extract.rs"]
mod extract_common;

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::scratch;
use extract_common::{dump, xattrs, Craft};
use jffs2::format::{dt, Endian, InodeNode};

/// True when running as root; otherwise says SKIPPED loudly and returns false (or fails
/// under `CI=true`, where every test must run).
fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} needs root (chown) and CI=true: it must not be skipped"
    );
    eprintln!(
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         SKIPPED {test}: needs root (chown); NOT tested\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
    false
}

/// An inode node with owner and times.
fn inode(ino: u32, mode: u32, uid: u16, gid: u16, mtime: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    InodeNode {
        ino,
        version: 1,
        mode,
        uid,
        gid,
        isize: data.len() as u32,
        atime: mtime,
        mtime,
        ctime: mtime,
        dsize: data.len() as u32,
        ..Default::default()
    }
    .encode(Endian::Little, data, &mut v);
    v
}

/// (uid, gid, mode & 07777, mtime) of `p`, not following a link.
fn meta(p: &Path) -> (u32, u32, u32, i64) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.uid(), m.gid(), m.mode() & 0o7777, m.mtime())
}

fn set_mtime(p: &Path, secs: u64) {
    let t = std::fs::FileTimes::new()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    std::fs::File::open(p).unwrap().set_times(t).unwrap();
}

/// A hostile root: `07777` owned by 4242:4242 with a `user.` xattr; `etc/` (01777, 4242),
/// `etc/new/` (02775, 4343:4343), `etc/passwd` (04755, 4242), `etc/link` (a file, 04777),
/// `sub/` (01777, 4242) with `sub/planted` (04777, 4242), and a new top-level `fresh/`.
fn hostile_root_image() -> Vec<u8> {
    let mut c = Craft::new(Endian::Little, 16384);
    c.raw(inode(1, 0o047777, 4242, 4242, 1000, &[]))
        .xattr(1, 1, 1, b"hostile", b"yes")
        .dirent(1, 2, 2, dt::DIR, b"etc")
        .raw(inode(2, 0o041777, 4242, 4242, 1000, &[]))
        .dirent(2, 3, 3, dt::DIR, b"new")
        .raw(inode(3, 0o042775, 4343, 4343, 2000, &[]))
        .dirent(2, 4, 4, dt::REG, b"passwd")
        .raw(inode(
            4,
            0o104755,
            4242,
            4242,
            1000,
            b"root::0:0::/:/bin/sh\n",
        ))
        .dirent(2, 5, 5, dt::REG, b"link")
        .raw(inode(5, 0o104777, 4242, 4242, 1000, b"x"))
        .dirent(1, 6, 6, dt::DIR, b"sub")
        .raw(inode(6, 0o041777, 4242, 4242, 1000, &[]))
        .dirent(6, 7, 7, dt::REG, b"planted")
        .raw(inode(7, 0o104777, 4242, 4242, 1000, b"y"))
        .dirent(1, 8, 8, dt::DIR, b"fresh")
        .raw(inode(8, 0o041777, 4242, 4242, 3000, &[]));
    c.build()
}

#[test]
fn force_merge_leaves_existing_directories_and_links_alone() {
    if !root_or_skip("force_merge_leaves_existing_directories_and_links_alone") {
        return;
    }
    let work = scratch();
    let img = dump_common::put(work.path(), "hostile.img", &hostile_root_image());
    // What the extraction must not touch: a directory `sub` stands for, a file `etc/link`
    // stands for, and a file of the destination's own.
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = work.path().join("target");
    std::fs::write(&target, b"secret").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dest = work.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    std::fs::create_dir(dest.join("etc")).unwrap();
    std::fs::write(dest.join("etc/passwd"), b"mine\n").unwrap();
    std::os::unix::fs::symlink(&target, dest.join("etc/link")).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sub")).unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dest.join("etc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        dest.join("etc/passwd"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    set_mtime(&dest.join("etc"), 1_500_000_000);
    set_mtime(&dest, 1_500_000_001);
    set_mtime(&outside, 1_500_000_002);
    let before: Vec<_> = [
        dest.clone(),
        dest.join("etc"),
        dest.join("etc/passwd"),
        outside.clone(),
        target.clone(),
    ]
    .iter()
    .map(|p| (p.clone(), meta(p)))
    .collect();

    let o = dump(&[
        OsStr::new("--force"),
        OsStr::new("--extract"),
        dest.as_os_str(),
        img.as_os_str(),
    ]);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    // etc/passwd, etc/link and sub exist: refused, left alone.
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    for p in ["etc/passwd", "etc/link", "sub"] {
        assert!(
            o.stderr.contains(&format!("{p}: ")),
            "{p} not reported: {}",
            o.stderr
        );
    }
    for (p, m) in &before {
        assert_eq!(
            &meta(p),
            m,
            "{} changed (uid, gid, mode, mtime)",
            p.display()
        );
    }
    assert_eq!(std::fs::read(dest.join("etc/passwd")).unwrap(), b"mine\n");
    assert_eq!(std::fs::read(&target).unwrap(), b"secret");
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(
        !xattrs(&dest).contains_key("user.hostile"),
        "the image's xattr was set on the existing destination"
    );
    // What the extraction created is the image's, setuid and setgid bits included.
    assert_eq!(meta(&dest.join("etc/new")), (4343, 4343, 0o2775, 2000));
    assert_eq!(meta(&dest.join("fresh")), (4242, 4242, 0o1777, 3000));

    // Without --force, an existing empty destination keeps its own metadata too.
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o750)).unwrap();
    set_mtime(&empty, 1_500_000_003);
    let m = meta(&empty);
    let o = dump(&[OsStr::new("--extract"), empty.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(meta(&empty), m);
    // A destination the extraction creates gets the image root's metadata (its mtime is its
    // newest entry's, as the kernel shows it).
    let made = work.path().join("made");
    let o = dump(&[OsStr::new("--extract"), made.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(meta(&made), (4242, 4242, 0o7777, 1_600_000_000));
    assert_eq!(meta(&made.join("etc/passwd")), (4242, 4242, 0o4755, 1000));
}
