//! `jffs2-dump --extract` (and `--cat`, `jffs2reader -f`): the files Linux shows, recreated.
//!
//! * every kernel-written fixture extracts to exactly the listing the kernel showed (types,
//!   modes, owners, sizes, times, contents, link targets, device numbers, hard links);
//! * mtd-utils' mkfs.jffs2 images of a generated tree (both byte orders, devices from the tree
//!   and from a `-D` table, hard links, a sparse file, symlinks, xattrs and ACLs) extract to
//!   that tree; holes stay holes;
//! * as an unprivileged user, devices go to a device table beside the destination;
//! * hostile images (traversal names, a symlink standing where a directory was, entries
//!   "through" a symlink, cycles and directories with two parents, 4 GiB sparse claims, lying
//!   csize/dsize, a 1000-deep tree): nothing is written outside the destination, every
//!   refusal is reported, the exit status is 2, nothing panics.
//!
//! Needs root and Debian's mtd-utils (fails loudly without them).

mod common;
#[path = "common/dump.rs"]
mod dump_common;
#[path = "common/extract.rs"]
mod extract_common;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use common::{require_root, scratch, Kind};
use extract_common::*;
use jffs2::format::{dt, Endian};

fn hexs(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}

/// Extracts `image` into a fresh `DIR` inside a fresh parent; returns (parent, DIR, run).
fn extract(image: &Path, extra: &[&str]) -> (tempfile::TempDir, PathBuf, Out) {
    let parent = scratch();
    let dir = parent.path().join("out");
    let mut args: Vec<&OsStr> = vec![OsStr::new("--extract"), dir.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    args.push(image.as_os_str());
    let o = dump(&args);
    (parent, dir, o)
}

// ---------------------------------------------------------------------------------------
// Kernel-written fixtures
// ---------------------------------------------------------------------------------------

/// Compares an extracted tree with a kernel listing (`fixtures/kernel/*.json`); returns the
/// differences.
fn compare_with_listing(
    listing: &[serde_json::Value],
    got: &BTreeMap<Vec<u8>, HostEntry>,
) -> Vec<String> {
    let mut d = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in listing {
        let path = e["path"].as_str().expect("path").as_bytes().to_vec();
        let shown = String::from_utf8_lossy(&path).into_owned();
        seen.insert(path.clone());
        let Some(h) = got.get(&path) else {
            d.push(format!("{shown}: missing"));
            continue;
        };
        let kind = e["type"].as_str().unwrap_or("");
        if h.kind != kind {
            d.push(format!("{shown}: type {} != {kind}", h.kind));
            continue;
        }
        let mode = u32::from_str_radix(e["mode"].as_str().unwrap_or("0"), 8).unwrap_or(0);
        if kind != "symlink" && h.perm != mode {
            d.push(format!("{shown}: mode {:o} != {mode:o}", h.perm));
        }
        for (what, have, want) in [
            ("uid", u64::from(h.uid), e["uid"].as_u64()),
            ("gid", u64::from(h.gid), e["gid"].as_u64()),
            ("mtime", h.mtime as u64, e["mtime"].as_u64()),
        ] {
            if Some(have) != want {
                d.push(format!("{shown}: {what} {have} != {want:?}"));
            }
        }
        if kind == "file" {
            if Some(h.size) != e["size"].as_u64() {
                d.push(format!("{shown}: size {} != {:?}", h.size, e["size"]));
            }
            if h.md5.as_deref() != e["md5"].as_str() {
                d.push(format!("{shown}: md5 {:?} != {:?}", h.md5, e["md5"]));
            }
        }
        if kind != "dir" && Some(h.nlink) != e["nlink"].as_u64() {
            d.push(format!("{shown}: nlink {} != {:?}", h.nlink, e["nlink"]));
        }
        if let Some(t) = e["target"].as_str() {
            if h.target.as_deref() != Some(t.as_bytes()) {
                d.push(format!("{shown}: target {:?} != {t}", h.target));
            }
        }
        if let Some(r) = e["rdev"].as_str() {
            let have = h.rdev.map(|(a, b)| format!("{a}:{b}"));
            if have.as_deref() != Some(r) {
                d.push(format!("{shown}: rdev {have:?} != {r}"));
            }
        }
        if let Some(links) = e["links"].as_array() {
            for l in links {
                let other = got.get(l.as_str().unwrap_or("").as_bytes());
                if other.map(|o| o.ino) != Some(h.ino) {
                    d.push(format!("{shown}: not hard-linked with {l}"));
                }
            }
        }
        let want_x: BTreeMap<String, String> = e["xattrs"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let have_x: BTreeMap<String, String> =
            h.xattrs.iter().map(|(k, v)| (k.clone(), hexs(v))).collect();
        if want_x != have_x {
            d.push(format!("{shown}: xattrs {have_x:?} != {want_x:?}"));
        }
    }
    for p in got.keys() {
        if !seen.contains(p) {
            d.push(format!(
                "{}: extracted but not listed",
                String::from_utf8_lossy(p)
            ));
        }
    }
    d
}

#[test]
fn kernel_fixtures_extract_to_what_the_kernel_listed() {
    if !require_root() {
        return;
    }
    let mut failures = Vec::new();
    let images = dump_common::kernel_images();
    for img in &images {
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(img.with_extension("json")).expect("json"),
        )
        .expect("parse json");
        let (_p, dir, o) = extract(img, &[]);
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        if o.code != Some(0) {
            failures.push(format!("{name}: exit {:?}: {}", o.code, o.stderr));
            continue;
        }
        let listing = doc["listing"].as_array().expect("listing");
        for diff in compare_with_listing(listing, &snapshot(&dir)) {
            failures.push(format!("{name}: {diff}"));
        }
        // The same with the erase size given, as the .json records it.
        let es = doc["erase_size"].as_u64().expect("erase_size").to_string();
        let (_p2, dir2, o2) = extract(img, &["--erase-size", &es, "-l"]);
        assert_eq!(o2.code, Some(0), "{name} with --erase-size: {}", o2.stderr);
        assert_eq!(snapshot(&dir).len(), snapshot(&dir2).len(), "{name}");
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// mkfs.jffs2 images of a generated tree
// ---------------------------------------------------------------------------------------

/// Device table entries added on top of the tree: a device in an existing directory, a new
/// directory with a range of three block devices.
const DEVTABLE: &str = "# test table\n\
/special/ttyS1 c 620 0 5 4 65 0 0 -\n\
/devtab d 750 0 0 - - - - -\n\
/devtab/loop b 660 0 6 7 0 0 1 3\n";

/// The parent of a path (`.` for a top-level name).
fn parent_of(p: &[u8]) -> Vec<u8> {
    match p.iter().rposition(|&b| b == b'/') {
        Some(i) => p[..i].to_vec(),
        None => b".".to_vec(),
    }
}

/// What the extraction must show for the source tree: mkfs.jffs2's documented losses
/// applied (root faked by the kernel, symlink targets cut at 254 bytes, 16-bit owners), what
/// Linux shows for directory times, plus the device table's entries.
///
/// Directory times: mkfs.jffs2 numbers dirents globally, so a directory's last entry has a
/// newer version than the directory's own inode node, and Linux then shows that entry's
/// `mctime` — the mtime of the child mkfs wrote last, the last by name
/// (`docs/spec/kernel-jffs2-spec.md` §6.4).
fn expected_from_source(src: &BTreeMap<Vec<u8>, HostEntry>) -> BTreeMap<Vec<u8>, HostEntry> {
    let mut exp = src.clone();
    let mut last_child: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for p in src.keys().filter(|p| p.as_slice() != b".") {
        let parent = parent_of(p);
        let e = last_child.entry(parent).or_insert_with(|| p.clone());
        let base = |q: &[u8]| q[q.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..].to_vec();
        if base(p) > base(e) {
            *e = p.clone();
        }
    }
    for (dir, child) in &last_child {
        if dir.as_slice() == b"." {
            continue;
        }
        if let (Some(t), Some(d)) = (src.get(child).map(|c| c.mtime), exp.get_mut(dir)) {
            d.mtime = t;
        }
    }
    // A device-table entry is written last in its directory, with the time of the mkfs run.
    if let Some(s) = exp.get_mut(b"special".as_slice()) {
        s.mtime = -1;
    }
    for (p, e) in exp.iter_mut() {
        if p == b"." {
            e.perm = 0o755;
            e.uid = 0;
            e.gid = 0;
            e.mtime = 0;
            e.xattrs = src[p].xattrs.clone();
        }
        e.uid &= 0xFFFF;
        e.gid &= 0xFFFF;
        if let Some(t) = &mut e.target {
            t.truncate(254);
        }
    }
    let dev = |kind, perm, gid, rdev| HostEntry {
        kind,
        perm,
        uid: 0,
        gid,
        size: 0,
        nlink: 1,
        mtime: -1,
        ino: 0,
        blocks: 0,
        rdev: Some(rdev),
        target: None,
        md5: None,
        xattrs: BTreeMap::new(),
    };
    exp.insert(b"special/ttyS1".to_vec(), dev("char", 0o620, 5, (4, 65)));
    let mut d = dev("dir", 0o750, 0, (0, 0));
    d.rdev = None;
    exp.insert(b"devtab".to_vec(), d);
    for i in 0..3u32 {
        exp.insert(
            format!("devtab/loop{i}").into_bytes(),
            dev("block", 0o660, 6, (7, i)),
        );
    }
    exp
}

fn compare_trees(
    what: &str,
    exp: &BTreeMap<Vec<u8>, HostEntry>,
    got: &BTreeMap<Vec<u8>, HostEntry>,
) -> Vec<String> {
    let mut d = Vec::new();
    // Hard-link groups must map to hard-link groups.
    let mut group_of: HashMap<u64, Vec<u8>> = HashMap::new();
    for (p, e) in exp {
        let shown = format!("{what}: {}", String::from_utf8_lossy(p));
        let Some(h) = got.get(p) else {
            d.push(format!("{shown}: missing"));
            continue;
        };
        if h.kind != e.kind {
            d.push(format!("{shown}: type {} != {}", h.kind, e.kind));
            continue;
        }
        if e.kind != "symlink" && h.perm != e.perm {
            d.push(format!("{shown}: mode {:o} != {:o}", h.perm, e.perm));
        }
        if (h.uid, h.gid) != (e.uid, e.gid) {
            d.push(format!(
                "{shown}: owner {}:{} != {}:{}",
                h.uid, h.gid, e.uid, e.gid
            ));
        }
        if e.mtime >= 0 && h.mtime != e.mtime {
            d.push(format!("{shown}: mtime {} != {}", h.mtime, e.mtime));
        }
        if e.kind == "file" && (h.size != e.size || h.md5 != e.md5) {
            d.push(format!(
                "{shown}: content differs ({} vs {} bytes)",
                h.size, e.size
            ));
        }
        if e.kind != "dir" && e.mtime >= 0 && h.nlink != e.nlink {
            d.push(format!("{shown}: nlink {} != {}", h.nlink, e.nlink));
        }
        if h.target != e.target || h.rdev != e.rdev {
            d.push(format!(
                "{shown}: target/rdev {:?} {:?} != {:?} {:?}",
                h.target, h.rdev, e.target, e.rdev
            ));
        }
        if h.xattrs != e.xattrs {
            d.push(format!(
                "{shown}: xattrs {:?} != {:?}",
                h.xattrs.keys().collect::<Vec<_>>(),
                e.xattrs.keys().collect::<Vec<_>>()
            ));
        }
        if e.kind != "dir" && e.nlink > 1 {
            match group_of.get(&e.ino) {
                Some(first) => {
                    if got.get(first).map(|f| f.ino) != Some(h.ino) {
                        d.push(format!(
                            "{shown}: not linked to {}",
                            String::from_utf8_lossy(first)
                        ));
                    }
                }
                None => {
                    group_of.insert(e.ino, p.clone());
                }
            }
        }
    }
    for p in got.keys() {
        if !exp.contains_key(p) {
            d.push(format!(
                "{what}: {}: extracted but not in the tree",
                String::from_utf8_lossy(p)
            ));
        }
    }
    d
}

#[test]
fn mkfs_images_extract_to_their_source_tree() {
    if !require_root() {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = common::tree(Kind::Small);
    let dir = scratch();
    let table = dump_common::put(dir.path(), "devtable", DEVTABLE.as_bytes());
    let src = snapshot(tree.path());
    let exp = expected_from_source(&src);
    let mut failures = Vec::new();
    for (what, args) in [
        ("le-64k", vec!["-l", "-e", "64KiB", "--with-xattr"]),
        ("be-16k-n", vec!["-b", "-e", "16KiB", "-n", "--with-xattr"]),
    ] {
        let mut a = args.clone();
        a.extend(["-D", table.to_str().unwrap()]);
        let img = dump_common::mkfs(tree.path(), &a);
        let path = dump_common::put(dir.path(), what, &img);
        let (_p, out, o) = extract(&path, &[]);
        assert_eq!(o.code, Some(0), "{what}: {}", o.stderr);
        let got = snapshot(&out);
        failures.extend(compare_trees(what, &exp, &got));
        // Holes stay holes: the 120 000-byte sparse file holds two short runs of data.
        let sparse = &got[&b"data/sparse".to_vec()];
        assert_eq!(sparse.size, 120_000, "{what}");
        assert!(
            sparse.blocks * 512 <= 16 * 1024,
            "{what}: data/sparse allocates {} bytes",
            sparse.blocks * 512
        );
        let zeros = &got[&b"data/zeros".to_vec()];
        assert!(
            zeros.blocks * 512 <= 4096,
            "{what}: data/zeros is not sparse"
        );
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn unprivileged_extraction_lists_devices_in_a_table() {
    if !require_root() {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = common::tree(Kind::Small);
    let img = dump_common::mkfs(tree.path(), &["-l", "-e", "64KiB", "--with-xattr"]);
    let parent = scratch();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let image = dump_common::put(parent.path(), "img", &img);
    std::fs::set_permissions(&image, std::fs::Permissions::from_mode(0o644)).unwrap();
    let dest = parent.path().join("out");
    let o = run_prog(
        Path::new("/usr/bin/setpriv"),
        &[
            OsStr::new("--reuid=65534"),
            OsStr::new("--regid=65534"),
            OsStr::new("--clear-groups"),
            OsStr::new(OURS),
            OsStr::new("--extract"),
            dest.as_os_str(),
            image.as_os_str(),
        ],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let table = std::fs::read_to_string(parent.path().join("out.devtable")).expect("devtable");
    for line in [
        "/special/null c 666 0 0 1 3 0 0 -",
        "/special/sda b 660 0 6 8 0 0 0 -",
        "/special/tty64 c 620 0 0 4 64 0 0 -",
        "/special/c255_255 c 600 0 0 255 255 0 0 -",
        "/xattrs/dev c 600 0 0 10 200 0 0 -",
    ] {
        assert!(table.contains(line), "missing {line:?} in:\n{table}");
    }
    assert!(
        o.stderr.contains("device nodes could not be created"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains("trusted.* extended attributes not set"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("owners of"), "{}", o.stderr);
    let got = snapshot(&dest);
    assert_eq!(got[&b"special/fifo".to_vec()].kind, "fifo");
    assert_eq!(got[&b"special/sock".to_vec()].kind, "socket");
    assert!(!got.contains_key(b"special/null".as_slice()));
    assert_eq!(
        got[&b"xattrs/x2".to_vec()].xattrs["user.other"],
        b"only on x2"
    );
    assert_eq!(got[&b"links/hard_a".to_vec()].nlink, 3);
    // mkfs.jffs2 -D accepts the table.
    let rebuilt = dump_common::mkfs(
        &dest,
        &[
            "-l",
            "-D",
            parent.path().join("out.devtable").to_str().unwrap(),
        ],
    );
    assert!(!rebuilt.is_empty());
}

// ---------------------------------------------------------------------------------------
// Destination rules
// ---------------------------------------------------------------------------------------

fn small_image() -> (tempfile::TempDir, PathBuf) {
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::DIR, b"d")
        .dir(2)
        .dirent(2, 2, 3, dt::REG, b"f")
        .file(3, b"content\n")
        .dirent(1, 3, 4, dt::REG, b"top")
        .file(4, b"top\n");
    let d = scratch();
    let p = dump_common::put(d.path(), "small.img", &c.build());
    (d, p)
}

#[test]
fn destination_must_be_empty_unless_forced_and_nothing_is_replaced() {
    let (_d, img) = small_image();
    let parent = scratch();
    let dest = parent.path().join("out");
    std::fs::create_dir(&dest).unwrap();
    std::fs::write(dest.join("top"), b"mine").unwrap();
    std::fs::create_dir(dest.join("d")).unwrap();
    let o = dump(&[OsStr::new("--extract"), dest.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("not empty"), "{}", o.stderr);
    let o = dump(&[
        OsStr::new("--extract"),
        dest.as_os_str(),
        OsStr::new("--force"),
        img.as_os_str(),
    ]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("top: already exists"), "{}", o.stderr);
    assert_eq!(std::fs::read(dest.join("top")).unwrap(), b"mine");
    assert_eq!(std::fs::read(dest.join("d/f")).unwrap(), b"content\n");
    // A destination that is a file.
    let file = parent.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let o = dump(&[OsStr::new("--extract"), file.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("not a directory"), "{}", o.stderr);
    // A missing destination is created (one level).
    let (_p, out, o) = extract(&img, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(names_in(&out), vec!["d", "top"]);
}

// ---------------------------------------------------------------------------------------
// Hostile images
// ---------------------------------------------------------------------------------------

/// Runs an extraction of `image`, checking the invariants every hostile image must keep:
/// it finishes, does not panic, writes nothing beside the destination, and exits 2 with a
/// report. Returns the destination and the run.
fn hostile(image: &[u8], outside: &Path) -> (tempfile::TempDir, PathBuf, Out) {
    let d = scratch();
    let path = dump_common::put(d.path(), "hostile.img", image);
    let (parent, dir, o) = extract(&path, &[]);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    assert_eq!(o.code, Some(2), "stderr: {}", o.stderr);
    assert!(o.stderr.contains("refused"), "{}", o.stderr);
    assert_eq!(
        names_in(parent.path()),
        vec!["out"],
        "written beside the destination"
    );
    assert!(
        names_in(outside).is_empty(),
        "written outside: {:?}",
        names_in(outside)
    );
    (parent, dir, o)
}

/// An empty directory a symlink in the image points to: anything written "through" the
/// link would land in it.
fn outside_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("jffs2-outside-")
        .tempdir()
        .expect("tempdir")
}

#[test]
fn traversal_names_are_refused() {
    let outside = outside_dir();
    let mut c = Craft::new(Endian::Little, 16384);
    let mut ino = 2;
    for name in [&b".."[..], b".", b"a/b", b"../escape", b"", b"/etc/passwd"] {
        c.dirent(1, ino, ino, dt::REG, name).file(ino, b"evil\n");
        ino += 1;
    }
    c.dirent(1, ino, ino, dt::DIR, b"sub").dir(ino);
    c.dirent(ino, ino + 1, ino + 1, dt::REG, b"..")
        .file(ino + 1, b"evil\n");
    c.dirent(1, ino + 2, ino + 2, dt::REG, b"ok")
        .file(ino + 2, b"fine\n");
    let (_p, dir, o) = hostile(&c.build(), outside.path());
    assert_eq!(names_in(&dir), vec!["ok", "sub"]);
    assert!(names_in(&dir.join("sub")).is_empty());
    for what in [
        "\"..\"",
        "\"a\\x2fb\"",
        "\"..\\x2fescape\"",
        "\"\\x2fetc\\x2fpasswd\"",
        "empty name",
    ] {
        assert!(o.stderr.contains(what), "no report of {what}: {}", o.stderr);
    }
    let evil = o.stderr.matches("refused").count();
    assert!(evil >= 6, "{evil} refusals reported: {}", o.stderr);
}

#[test]
fn symlinks_are_never_followed() {
    let outside = outside_dir();
    let target = outside.path().as_os_str().as_bytes().to_vec();
    // "x": first a symlink to the outside directory, then (newer) a directory with a child.
    // "y": first a directory, then (newer) a symlink to the outside; the old directory keeps a
    // child. "z": a symlink whose inode has directory entries "through" it. "zl": a hard
    // link to the symlink z.
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::LNK, b"x")
        .symlink(2, &target)
        .dirent(1, 2, 3, dt::DIR, b"x")
        .dir(3)
        .dirent(3, 3, 4, dt::REG, b"child")
        .file(4, b"inside\n")
        .dirent(1, 4, 5, dt::DIR, b"y")
        .dir(5)
        .dirent(5, 5, 6, dt::REG, b"through-y")
        .file(6, b"evil\n")
        .dirent(1, 6, 7, dt::LNK, b"y")
        .symlink(7, &target)
        .dirent(1, 7, 8, dt::LNK, b"z")
        .symlink(8, &target)
        .dirent(8, 8, 9, dt::REG, b"through-z")
        .file(9, b"evil\n")
        .dirent(3, 9, 8, dt::LNK, b"zl");
    let img = c.build();
    let d = scratch();
    let path = dump_common::put(d.path(), "links.img", &img);
    let (parent, dir, o) = extract(&path, &[]);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    assert!(names_in(outside.path()).is_empty(), "written outside");
    assert_eq!(names_in(parent.path()), vec!["out"]);
    assert!(matches!(o.code, Some(0 | 2)), "{}", o.stderr);
    let got = snapshot(&dir);
    assert_eq!(got[&b"x".to_vec()].kind, "dir");
    assert_eq!(
        got[&b"x/child".to_vec()].md5.as_deref(),
        Some(md5_hex(b"inside\n").as_str())
    );
    assert_eq!(got[&b"y".to_vec()].target.as_deref(), Some(&target[..]));
    assert_eq!(got[&b"z".to_vec()].target.as_deref(), Some(&target[..]));
    assert_eq!(
        got[&b"x/zl".to_vec()].ino,
        got[&b"z".to_vec()].ino,
        "hard link to a symlink"
    );
    assert!(!got.keys().any(|k| k.windows(7).any(|w| w == b"through")));
    // Nothing of the listing goes through a link either.
    let o = dump(&[
        OsStr::new("--cat"),
        OsStr::new("y/through-y"),
        path.as_os_str(),
    ]);
    assert_eq!(o.code, Some(1));
}

#[test]
fn cycles_and_second_parents_are_extracted_once() {
    let outside = outside_dir();
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::DIR, b"a")
        .dir(2)
        .dirent(2, 2, 3, dt::DIR, b"b")
        .dir(3)
        .dirent(3, 3, 2, dt::DIR, b"back-to-a")
        .dirent(3, 4, 1, dt::DIR, b"root")
        .dirent(1, 5, 3, dt::DIR, b"c")
        .dirent(3, 6, 4, dt::REG, b"f")
        .file(4, b"once\n");
    let (_p, dir, o) = hostile(&c.build(), outside.path());
    let got = snapshot(&dir);
    let dirs: Vec<&Vec<u8>> = got.keys().filter(|k| got[*k].kind == "dir").collect();
    assert!(dirs.len() <= 4, "{dirs:?}");
    assert!(o.stderr.contains("already extracted"), "{}", o.stderr);
    let files: Vec<_> = got.values().filter(|e| e.kind == "file").collect();
    assert_eq!(
        files.len(),
        1,
        "the file in the shared directory is written once"
    );
}

#[test]
fn huge_sparse_claims_stay_sparse() {
    let outside = outside_dir();
    let tail: Vec<u8> = (0..4095u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut c = Craft::new(Endian::Little, 65536);
    // A ZERO node over almost 4 GiB, then data at the very end.
    c.dirent(1, 1, 2, dt::REG, b"huge")
        .inode(2, 1, REG, u32::MAX, 0, 0xFFFF_F000, 1, &[])
        .inode(2, 2, REG, u32::MAX, 0xFFFF_F000, 4095, 0, &tail)
        // A size of 4 GiB - 1 and a single byte of data.
        .dirent(1, 2, 3, dt::REG, b"claims")
        .inode(3, 1, REG, u32::MAX, 0, 1, 0, b"!")
        // A good file and an unreadable one (for the non-zero exit).
        .dirent(1, 3, 4, dt::REG, b"bad")
        .inode(4, 1, REG, 100, 0, 100, 0, &[1; 10]);
    let t = std::time::Instant::now();
    let (_p, dir, o) = hostile(&c.build(), outside.path());
    assert!(t.elapsed().as_secs() < 60, "took {:?}", t.elapsed());
    let m = std::fs::symlink_metadata(dir.join("huge")).unwrap();
    assert_eq!(m.len(), u64::from(u32::MAX), "{}", o.stderr);
    assert!(
        m.blocks() * 512 < 1 << 20,
        "{} bytes allocated",
        m.blocks() * 512
    );
    let f = std::fs::File::open(dir.join("huge")).unwrap();
    let mut end = vec![0u8; 4095];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut end, 0xFFFF_F000).unwrap();
    assert_eq!(end, tail);
    let mut mid = vec![1u8; 16];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut mid, 0x8000_0000).unwrap();
    assert_eq!(mid, vec![0; 16]);
    // Linux shows the claimed size cut to the data (readinode's truncation).
    assert_eq!(std::fs::read(dir.join("claims")).unwrap(), b"!");
}

/// Re-encodes a node's CRCs after its fields were patched.
fn fix_inode_crcs(node: &mut [u8]) {
    let crc = jffs2::crc::crc32(&node[..60]);
    node[64..68].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn lying_sizes_are_reported_not_trusted() {
    let outside = outside_dir();
    let hello = jffs2::compress::zlib_compress(&[b'h'; 4096], 4096)
        .expect("compressible")
        .0;
    let mut c = Craft::new(Endian::Little, 65536);
    c.dirent(1, 1, 2, dt::REG, b"toolarge")
        // zlib with a dsize the kernel cannot allocate.
        .inode(2, 1, REG, 0x7FFF_FFFF, 0, 0x7FFF_FFFF, 6, &hello)
        .dirent(1, 2, 3, dt::REG, b"short")
        // Uncompressed, 10 bytes stored for a dsize of 100.
        .inode(3, 1, REG, 100, 0, 100, 0, &[7; 10])
        .dirent(1, 3, 4, dt::REG, b"lessthan")
        // zlib data of 4096 bytes claiming 100.
        .inode(4, 1, REG, 100, 0, 100, 6, &hello)
        .dirent(1, 4, 5, dt::REG, b"morethan")
        // zlib data of 4096 bytes claiming 8192.
        .inode(5, 1, REG, 8192, 0, 8192, 6, &hello)
        .dirent(1, 5, 6, dt::REG, b"unknown-compr")
        .inode(6, 1, REG, 50, 0, 50, 0x42, &[1; 20]);
    // csize beyond the node: patch a copy's csize, fix the node CRC.
    let mut lie = Vec::new();
    jffs2::format::InodeNode {
        ino: 7,
        version: 1,
        mode: REG,
        isize: 4096,
        dsize: 4096,
        ..Default::default()
    }
    .encode(Endian::Little, &[5; 16], &mut lie);
    lie[48..52].copy_from_slice(&0x00FF_0000u32.to_le_bytes());
    fix_inode_crcs(&mut lie);
    c.dirent(1, 6, 7, dt::REG, b"csize-lie").raw(lie);
    c.dirent(1, 7, 8, dt::REG, b"good").file(8, b"good\n");
    let (_p, dir, o) = hostile(&c.build(), outside.path());
    assert_eq!(std::fs::read(dir.join("good")).unwrap(), b"good\n");
    for name in ["toolarge", "short", "lessthan", "morethan", "unknown-compr"] {
        assert!(
            o.stderr.contains(&format!("{name}:")),
            "{name} not reported: {}",
            o.stderr
        );
        let m = std::fs::symlink_metadata(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            m.blocks() * 512 <= 64 << 10,
            "{name}: {} bytes allocated",
            m.blocks() * 512
        );
    }
}

#[test]
fn a_thousand_levels_deep() {
    let mut c = Craft::new(Endian::Little, 65536);
    let depth = 1000u32;
    for i in 0..depth {
        let ino = i + 2;
        c.dirent(ino - 1, ino, ino, dt::DIR, b"d").dir(ino);
    }
    c.dirent(depth + 1, depth + 2, depth + 2, dt::REG, b"leaf")
        .file(depth + 2, b"bottom\n");
    let d = scratch();
    let path = dump_common::put(d.path(), "deep.img", &c.build());
    let (_p, dir, o) = extract(&path, &[]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let mut p = dir.clone();
    for _ in 0..depth {
        p.push("d");
    }
    assert_eq!(std::fs::read(p.join("leaf")).unwrap(), b"bottom\n");
    // Directory times are set after their children, all the way up.
    let m = std::fs::symlink_metadata(dir.join("d")).unwrap();
    assert_eq!(m.mtime(), 1_600_000_000);
}

// ---------------------------------------------------------------------------------------
// --cat and jffs2reader -f
// ---------------------------------------------------------------------------------------

#[test]
fn cat_streams_whole_files_and_follows_links_inside_the_image() {
    if !common::require_mtd_utils() {
        return;
    }
    let tree = dump_common::plain_tree(false);
    let img = dump_common::mkfs(tree.path(), &["-l", "-e", "16KiB"]);
    let d = scratch();
    let path = dump_common::put(d.path(), "img", &img);
    for rel in ["text/t8", "rand/r7", "names/link", "deep/hard", "text/t0"] {
        let want = std::fs::read(tree.path().join(rel)).unwrap();
        let o = dump(&[OsStr::new("--cat"), OsStr::new(rel), path.as_os_str()]);
        assert_eq!(o.code, Some(0), "{rel}: {}", o.stderr);
        assert!(
            o.stdout == want,
            "{rel}: {} bytes, want {}",
            o.stdout.len(),
            want.len()
        );
        // jffs2reader -f: Debian's shows only the first node of multi-node files.
        let o = run_prog(
            ours_as_reader(),
            &[path.as_os_str(), OsStr::new("-f"), OsStr::new(rel)],
        );
        assert_eq!(o.code, Some(0), "{rel}: {}", o.stderr);
        assert!(o.stdout == want, "jffs2reader -f {rel}");
    }
    let o = dump(&[OsStr::new("--cat"), OsStr::new("text"), path.as_os_str()]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("Not a regular file"), "{}", o.stderr);
    let o = dump(&[OsStr::new("--cat"), OsStr::new("nope"), path.as_os_str()]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("No such file"), "{}", o.stderr);
}
