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
use std::process::{Command, Output, Stdio};
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
    lists_mount(&info, dir)
}

/// `jffs2-mount -f [EXTRA] IMG MNT` spawned, once the mount shows (or 20 s passed: the
/// caller asserts what it needs).
fn serve_foreground(img: &Path, mnt: &Path, extra: &[&str]) -> std::process::Child {
    let child = Command::new(MOUNT)
        .arg("-f")
        .args(extra)
        .arg(img)
        .arg(mnt)
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while !is_mounted(mnt) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child
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

/// Whether this process can mount: as root, or through fusermount3 when /dev/fuse opens
/// for it (else skip: some containers give /dev/fuse to root alone).
fn can_mount() -> bool {
    let ok = skip::is_root()
        || std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .is_ok();
    ok || {
        skip::skip("a /dev/fuse this user can open (crw-rw-rw-, as Debian's udev sets it)");
        false
    }
}

/// A scratch directory others can traverse (for an ordinary user's mount point under it).
fn open_scratch() -> tempfile::TempDir {
    let dir = common::scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// A directory `d/name`, made.
fn mkdir(d: &Path, name: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::create_dir(&p).expect("mkdir");
    p
}

fn rootfs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rootfs")
}

#[test]
fn big_endian_mount_equals_little_endian() {
    if !fuse() || !can_mount() {
        return;
    }
    // As root, the tree with every kind of entry (xattrs and ACLs, whose byte order the
    // mount converts); otherwise the demo tree.
    let tree = skip::is_root().then(|| common::tree(common::Kind::Small));
    let src = tree
        .as_ref()
        .map_or_else(rootfs, |t| t.path().to_path_buf());
    let dir = open_scratch();
    let d = dir.path();
    let (le, be) = (d.join("le"), d.join("be"));
    mkfs(&src, &le, &["-l", "-e", "16KiB", "--with-xattr"]);
    mkfs(&src, &be, &["-b", "-e", "16KiB", "--with-xattr"]);
    let (ml, mb) = (mkdir(d, "ml"), mkdir(d, "mb"));
    let _a = mount(&le, &ml, &[]);
    let _b = mount(&be, &mb, &[]);
    let (l, b) = (listing(&ml), listing(&mb));
    assert!(l.entries.len() > 10);
    assert_eq!(l.links, b.links);
    for (path, e) in &l.entries {
        assert_eq!(Some(e), b.entries.get(path), "{}", shown(path));
    }
    assert_eq!(l.entries.len(), b.entries.len());
}

/// What every ordinary-user scenario starts with, run as root in a private mount and PID
/// namespace: a `/dev/fuse` every user can open (a 0666 node 10,229 on a tmpfs of its own,
/// bind-mounted over `/dev/fuse`; fusermount3 opens the device as the user, and some machines
/// give it to root alone), seen in the namespace only, and `as_user` to run a command as uid
/// 65534. `$1` is the directory for the tmpfs; the scenario's arguments follow.
const OPEN_FUSE: &str = r#"
dev=$1; shift
mount -t tmpfs -o mode=0755,size=64k jffs2-test-dev "$dev" &&
    mknod -m 0666 "$dev/fuse" c 10 229 &&
    mount --bind "$dev/fuse" /dev/fuse || exit 90
: >"$dev.ready"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
"#;

/// Runs the shell `scenario` (after [`OPEN_FUSE`]) as root with `args` as `$1`..., in a
/// private mount and PID namespace (`unshare --mount --propagation private --pid --fork
/// --mount-proc`): nothing it mounts is seen outside, and when it ends, every process it
/// left (a server) is killed and every mount it made goes with the namespace. `None`, after
/// skipping, when the namespace cannot be made.
fn as_user_in_namespace(d: &Path, scenario: &str, args: &[&OsStr]) -> Option<Output> {
    if !skip::root()
        || !skip::program("unshare", "util-linux")
        || !skip::program("setpriv", "util-linux")
    {
        return None;
    }
    let dev = mkdir(d, "dev");
    let o = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--pid", "--fork"])
        .args(["--mount-proc", "sh", "-c"])
        .arg(format!("{OPEN_FUSE}{scenario}"))
        .arg("sh")
        .arg(&dev)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run unshare");
    if !d.join("dev.ready").exists() {
        let err = String::from_utf8_lossy(&o.stderr);
        skip::skip(&format!(
            "a private mount namespace with its own /dev/fuse (unshare --mount --pid, as root): \
             {err}"
        ));
        return None;
    }
    Some(o)
}

/// What a scenario step left in `out`: `NAME.status` (its exit status) and `NAME.err`.
fn step(out: &Path, name: &str) -> (String, String) {
    let read = |ext: &str| std::fs::read_to_string(out.join(format!("{name}.{ext}")));
    let status = read("status").unwrap_or_else(|_| "(not run)".into());
    (status.trim().to_string(), read("err").unwrap_or_default())
}

/// Whether `mountinfo` (`/proc/PID/mountinfo`'s text) lists a mount on `dir`.
fn lists_mount(mountinfo: &str, dir: &Path) -> bool {
    let want = dir.as_os_str().as_bytes();
    mountinfo
        .lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| m.as_bytes() == want))
}

#[test]
fn ordinary_user_mounts_reads_and_unmounts() {
    if !fuse() || !skip::root() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB"]);
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let mnt = mkdir(d, "mnt");
    let out = mkdir(d, "out");
    // SAFETY: valid NUL-terminated path.
    let c = std::ffi::CString::new(mnt.as_os_str().as_bytes()).expect("path");
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    // Mount, list the mounts, read a file, unmount, list the mounts: each step as uid 65534
    // (the listings as root), its status and stderr kept in `out`.
    let scenario = r#"
trap 'umount -l "$3" 2>/dev/null' EXIT
as_user "$1" "$2" "$3" 2>"$4/mount.err"; echo $? >"$4/mount.status"
cat /proc/self/mounts >"$4/mounts"
as_user cat "$3/etc/passwd" >"$4/cat.out" 2>"$4/cat.err"; echo $? >"$4/cat.status"
as_user "$1" -u "$3" 2>"$4/u.err"; echo $? >"$4/u.status"
cat /proc/self/mountinfo >"$4/mountinfo"
"#;
    let args = [
        OsStr::new(MOUNT),
        img.as_os_str(),
        mnt.as_os_str(),
        out.as_os_str(),
    ];
    let Some(o) = as_user_in_namespace(d, scenario, &args) else {
        return;
    };
    let ran = String::from_utf8_lossy(&o.stderr);
    let (status, err) = step(&out, "mount");
    assert_eq!(status, "0", "mount as uid 65534: {err}{ran}");
    let mounts = std::fs::read_to_string(out.join("mounts")).expect("mounts");
    let line = mounts
        .lines()
        .find(|l| l.split(' ').nth(1) == Some(mnt.to_str().expect("utf-8")))
        .expect("listed in /proc/self/mounts");
    assert!(
        line.contains("fuse.jffs2-mount") && line.contains("user_id=65534"),
        "{line}"
    );
    let (status, err) = step(&out, "cat");
    assert_eq!(status, "0", "cat as uid 65534: {err}");
    assert_eq!(
        std::fs::read(out.join("cat.out")).expect("read"),
        std::fs::read(rootfs().join("etc/passwd")).expect("read")
    );
    let (status, err) = step(&out, "u");
    assert_eq!(status, "0", "-u as uid 65534: {err}");
    let after = std::fs::read_to_string(out.join("mountinfo")).expect("mountinfo");
    assert!(!lists_mount(&after, &mnt), "still mounted after -u");
    assert!(
        !is_mounted(&mnt),
        "the namespace's mount is seen outside it"
    );
}

/// Waits up to `secs` seconds for `dir` to be unmounted; whether it was.
fn unmounted_within(dir: &Path, secs: u64) -> bool {
    let start = Instant::now();
    while is_mounted(dir) && start.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(Duration::from_millis(20));
    }
    !is_mounted(dir)
}

#[test]
fn auto_unmount_when_the_server_is_killed() {
    if !fuse() || !skip::root() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB"]);
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    // Root, in the foreground: kill -9, and the mount goes within a few seconds.
    let mnt = mkdir(d, "root");
    let _guard = Mounted { dir: mnt.clone() };
    let mut server = serve_foreground(&img, &mnt, &["-o", "auto_unmount"]);
    assert!(is_mounted(&mnt), "-f -o auto_unmount did not mount");
    server.kill().expect("kill -9");
    let _ = server.wait();
    assert!(
        unmounted_within(&mnt, 5),
        "root: still mounted 5 s after kill -9"
    );
    // An ordinary user, in the background: the server (the process holding /dev/fuse) is
    // killed with -9; the mount must go within 5 s.
    let mnt = mkdir(d, "user");
    let out = mkdir(d, "out");
    let c = std::ffi::CString::new(mnt.as_os_str().as_bytes()).expect("path");
    // SAFETY: valid NUL-terminated path.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
    let scenario = r#"
trap 'umount -l "$3" 2>/dev/null' EXIT
as_user "$1" -o auto_unmount "$2" "$3" 2>"$4/mount.err"; echo $? >"$4/mount.status"
cat /proc/self/mountinfo >"$4/before"
for p in /proc/[0-9]*; do
    for f in "$p"/fd/*; do
        [ "$(readlink "$f" 2>/dev/null)" = /dev/fuse ] && echo "${p#/proc/}" >>"$4/server"
    done
done
kill -9 $(cat "$4/server")
i=0
while grep -qF " $3 " /proc/self/mountinfo && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
cat /proc/self/mountinfo >"$4/after"
"#;
    let args = [
        OsStr::new(MOUNT),
        img.as_os_str(),
        mnt.as_os_str(),
        out.as_os_str(),
    ];
    let Some(o) = as_user_in_namespace(d, scenario, &args) else {
        return;
    };
    let (status, err) = step(&out, "mount");
    let ran = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        status, "0",
        "mount -o auto_unmount as uid 65534: {err}{ran}"
    );
    let read = |name: &str| std::fs::read_to_string(out.join(name)).expect(name);
    assert!(lists_mount(&read("before"), &mnt), "not mounted");
    let server = read("server");
    assert_eq!(server.lines().count(), 1, "the server's pid: {server:?}");
    assert!(
        !lists_mount(&read("after"), &mnt),
        "uid 65534: still mounted 5 s after kill -9"
    );
}

#[test]
fn a_server_ending_late_leaves_a_new_mount_on_its_mount_point() {
    if !fuse() || !skip::root() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB"]);
    let mnt = mkdir(d, "mnt");
    let _guard = Mounted { dir: mnt.clone() };
    let mut first = serve_foreground(&img, &mnt, &[]);
    // An open file keeps the first mount alive after a lazy unmount; a second mount is made
    // on the same mount point; closing the file ends the first server.
    let open = std::fs::File::open(mnt.join("etc/passwd")).expect("open");
    let c = std::ffi::CString::new(mnt.as_os_str().as_bytes()).expect("path");
    // SAFETY: valid NUL-terminated path.
    assert_eq!(unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) }, 0);
    let _second = mount(&img, &mnt, &[]);
    drop(open);
    let status = first.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(
        is_mounted(&mnt),
        "the first server, ending, unmounted the second mount"
    );
    assert_eq!(
        std::fs::read(mnt.join("etc/hostname")).ok(),
        std::fs::read(rootfs().join("etc/hostname")).ok()
    );
}

/// Walks every file of `mnt` with `find` and `cat` (and `getfattr` when present) within a
/// minute; the mount must still answer afterwards.
fn walk_survives(mnt: &Path, what: &str) {
    let script = "find \"$1\" >/dev/null 2>&1; find \"$1\" -type f -exec cat {} + >/dev/null 2>&1; \
                  command -v getfattr >/dev/null && getfattr -R -d -m - \"$1\" >/dev/null 2>&1; exit 0";
    let start = Instant::now();
    let o = Command::new("timeout")
        .args(["60", "sh", "-c", script, "walk"])
        .arg(mnt)
        .output()
        .expect("run timeout");
    assert_eq!(o.status.code(), Some(0), "{what}: the walk did not finish");
    assert!(start.elapsed() < Duration::from_secs(60), "{what}");
    assert!(is_mounted(mnt), "{what}: unmounted");
    assert!(std::fs::read_dir(mnt).is_ok(), "{what}: the server died");
}

/// An image whose file `bad` has a readable first page and a second page whose zlib data
/// is garbage under correct CRCs (Linux's read fails on it), beside a good file.
fn bad_data_image() -> Vec<u8> {
    use jffs2::compress::{COMPR_NONE, COMPR_ZLIB};
    use jffs2::format::dt;
    let mut i = jffs2::testing::Img::new();
    let reg = 0o100644;
    i.dirent(1, 1, 2, dt::REG, b"bad")
        .inode_parts(2, 1, reg, 8192, 0, 4096, COMPR_NONE, &[b'g'; 4096])
        .inode_parts(2, 2, reg, 8192, 4096, 4096, COMPR_ZLIB, &[0x55; 64])
        .file(1, 3, b"good", 3, b"fine\n");
    i.build()
}

#[test]
fn hostile_images_mount_and_walk() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB", "-l"]);
    let good = std::fs::read(&img).expect("read");
    let truncated = good[..good.len() * 3 / 5].to_vec();
    let mut corrupted = good.clone();
    for k in (100..corrupted.len()).step_by(997) {
        corrupted[k] ^= 0x5a;
    }
    for (what, bytes) in [
        ("truncated", truncated),
        ("corrupted", corrupted),
        ("bad-data", bad_data_image()),
    ] {
        let p = d.join(what);
        std::fs::write(&p, &bytes).expect("write");
        let mnt = mkdir(d, &format!("m-{what}"));
        let _m = mount(&p, &mnt, &["-e", "16KiB", "-l"]);
        walk_survives(&mnt, what);
    }
    // Reads of the bad page fail with EIO, as on Linux; the page before it reads.
    let mnt = d.join("m-bad-data");
    let _m = mount(&d.join("bad-data"), &mnt, &["-e", "16KiB", "-l"]);
    let e = std::fs::read(mnt.join("bad")).expect_err("reading past the bad node");
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    let mut first = vec![0u8; 4096];
    use std::io::Read;
    std::fs::File::open(mnt.join("bad"))
        .and_then(|mut f| f.read_exact(&mut first))
        .expect("the first page reads");
    assert_eq!(first, [b'g'; 4096]);
    assert_eq!(std::fs::read(mnt.join("good")).expect("read"), b"fine\n");
}

#[test]
fn statfs_is_jffs2_statfs() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    // Padded to 2 MiB: free space above the write reserve.
    mkfs(&rootfs(), &img, &["-e", "16KiB", "-l", "--pad=2097152"]);
    let mnt = mkdir(d, "mnt");
    let _m = mount(&img, &mnt, &[]);
    let c = std::ffi::CString::new(mnt.as_os_str().as_bytes()).expect("path");
    // SAFETY: a zeroed statvfs is a valid out-buffer; the path is NUL-terminated.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut s) }, 0);
    // jffs2_statfs over the scan's counters (docs/spec/kernel-jffs2-spec.md §7.3).
    let image = jffs2::Image::open(&img).expect("open");
    let fs = image.mount().expect("mount");
    let (t, es) = (fs.scan().totals(), 16384u64);
    let flash = u64::from(fs.scan().flash_size);
    assert_eq!(flash, 2 << 20);
    let resv = 2 + (flash / 50 + flash / es * 100).div_ceil(es);
    let avail = (t.dirty + t.free).saturating_sub(resv * es) / 4096;
    assert!(avail > 0);
    let got = (
        s.f_bsize,
        s.f_frsize,
        s.f_blocks,
        s.f_bfree,
        s.f_bavail,
        s.f_files,
        s.f_ffree,
        s.f_namemax,
    );
    assert_eq!(got, (4096, 4096, flash / 4096, avail, avail, 0, 0, 254));
}

#[test]
fn foreground_signal_and_unmount_options() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB"]);
    let mnt = mkdir(d, "mnt");
    let _guard = Mounted { dir: mnt.clone() };
    // -f: served until SIGTERM, which unmounts.
    let mut child = serve_foreground(&img, &mnt, &[]);
    assert!(is_mounted(&mnt), "-f did not mount");
    assert_eq!(
        std::fs::read(mnt.join("etc/hostname")).ok(),
        std::fs::read(rootfs().join("etc/hostname")).ok()
    );
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(!is_mounted(&mnt), "SIGTERM left the mount");
    // -f again: unmounting from outside ends the server, with status 0.
    let mut child = serve_foreground(&img, &mnt, &[]);
    let o = Command::new(MOUNT)
        .arg("-u")
        .arg(&mnt)
        .output()
        .expect("run -u");
    assert!(
        o.status.success(),
        "-u: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let status = child.wait().expect("wait");
    assert!(status.success(), "after -u: {status:?}");
    // Background, then -u.
    let _m = mount(&img, &mnt, &["-o", "ro,fsname=firmware"]);
    let o = Command::new(MOUNT)
        .arg("-u")
        .arg(&mnt)
        .output()
        .expect("run -u");
    assert!(
        o.status.success(),
        "-u: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!is_mounted(&mnt), "-u left the mount");
    // Errors name the path and the errno.
    let o = Command::new(MOUNT)
        .arg(&img)
        .arg(d.join("nowhere"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nowhere: No such file or directory (ENOENT)")
    );
}

#[test]
fn mount8_type_fuse_jffs2_mount() {
    if !fuse() || !skip::root() || !skip::program("mount.fuse3", "fuse3") {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "16KiB"]);
    let mnt = mkdir(d, "mnt");
    let _guard = Mounted { dir: mnt.clone() };
    // `mount -t fuse.jffs2-mount IMAGE DIR -o OPTS` runs `mount.fuse3 IMAGE DIR -o OPTS -t
    // fuse.jffs2-mount` (with a PATH of its own: /usr/local/bin, /usr/bin, ...), which runs
    // `jffs2-mount IMAGE DIR -o OPTS`. Here mount.fuse3 is run as mount(8) runs it, with the
    // built binary first in PATH.
    let bin = Path::new(MOUNT).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new(skip::find_program("mount.fuse3", "fuse3").expect("mount.fuse3"))
        .arg(&img)
        .arg(&mnt)
        .args(["-o", "ro,allow_other", "-t", "fuse.jffs2-mount"])
        .env("PATH", path)
        .output()
        .expect("run mount.fuse3");
    assert!(
        o.status.success(),
        "mount.fuse3: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(is_mounted(&mnt));
    let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
    assert!(
        mounts.lines().any(|l| l.contains(" fuse.jffs2-mount ro,")),
        "{mounts}"
    );
    assert_eq!(
        std::fs::read(mnt.join("etc/passwd")).ok(),
        std::fs::read(rootfs().join("etc/passwd")).ok()
    );
    let o = Command::new("umount")
        .arg(&mnt)
        .output()
        .expect("run umount");
    assert!(
        o.status.success(),
        "umount: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!is_mounted(&mnt));
}

#[test]
fn kernel_written_images_list_as_extracted() {
    if !fuse() || !skip::root() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut images: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .expect("fixtures/kernel")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    images.sort();
    assert!(images.len() >= 9, "kernel fixtures missing");
    let mut failures = Vec::new();
    for (k, img) in images.iter().enumerate() {
        let out = d.join(format!("out{k}"));
        extract(img, &out);
        let mnt = mkdir(d, &format!("mnt{k}"));
        let _m = mount(img, &mnt, &[]);
        for f in differences(&listing(&mnt), &listing(&out)) {
            failures.push(format!("{}: {f}", img.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn nand_dump_with_oob_lists_as_the_plain_image() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    mkfs(&rootfs(), &img, &["-e", "128KiB", "-l", "-n"]);
    let plain = std::fs::read(&img).expect("read");
    // 64 bytes of OOB after every 2048-byte page, as a raw NAND dump has them.
    let mut raw = Vec::new();
    for page in plain.chunks(2048) {
        raw.extend_from_slice(page);
        raw.resize(raw.len() + (2048 - page.len()) + 64, 0xff);
    }
    let nand = d.join("nand");
    std::fs::write(&nand, &raw).expect("write");
    let (a, b) = (mkdir(d, "a"), mkdir(d, "b"));
    let _a = mount(&img, &a, &[]);
    let _b = mount(&nand, &b, &["--oobsize", "64", "--pagesize", "2048"]);
    let (la, lb) = (listing(&a), listing(&b));
    assert!(la.entries.len() > 10);
    assert_eq!(la.entries, lb.entries);
}

#[test]
fn image_linux_refuses_is_mounted_with_a_warning() {
    if !fuse() || !can_mount() {
        return;
    }
    let mut i = jffs2::testing::Img::new();
    i.file(1, 2, b"kept", 1, b"still here\n");
    // An INCOMPAT node of an unknown type: Linux refuses the mount (-EINVAL).
    let mut node = Vec::new();
    node.extend_from_slice(&0x1985u16.to_le_bytes());
    node.extend_from_slice(&0xe00fu16.to_le_bytes());
    node.extend_from_slice(&12u32.to_le_bytes());
    let crc = jffs2::crc::crc32(&node);
    node.extend_from_slice(&crc.to_le_bytes());
    i.raw(node);
    let dir = open_scratch();
    let d = dir.path();
    let img = d.join("img");
    std::fs::write(&img, i.build()).expect("write");
    let mnt = mkdir(d, "mnt");
    let _guard = Mounted { dir: mnt.clone() };
    let o = Command::new(MOUNT)
        .args(["-e", "16KiB", "-l"])
        .arg(&img)
        .arg(&mnt)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("Linux would refuse to mount this image"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(mnt.join("kept")).expect("read"),
        b"still here\n"
    );
}

/// The server's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        * 1024
}

#[test]
fn memory_stays_bounded_while_readers_read_concurrently() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let src = mkdir(d, "src");
    // 48 MiB that compresses well: the image is small, the file is not.
    let mut big = Vec::with_capacity(48 << 20);
    let mut k = 0u64;
    while big.len() < 48 << 20 {
        big.extend_from_slice(
            format!("line {k} of a file much larger than its image\n").as_bytes(),
        );
        k += 1;
    }
    std::fs::write(src.join("big"), &big).expect("write");
    let img = d.join("img");
    mkfs(&src, &img, &["-e", "128KiB"]);
    let mnt = mkdir(d, "mnt");
    let _guard = Mounted { dir: mnt.clone() };
    let mut server = serve_foreground(&img, &mnt, &["--cache-size=1MiB"]);
    assert!(is_mounted(&mnt));
    let want = md5_hex(&big);
    drop(big);
    // Four readers at once, each the whole file.
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let p = mnt.join("big");
            std::thread::spawn(move || md5_hex(&std::fs::read(p).expect("read")))
        })
        .collect();
    for r in readers {
        assert_eq!(r.join().expect("reader"), want);
    }
    let peak = peak_rss(server.id());
    let image_len = std::fs::metadata(&img).expect("img").len();
    // The model, the mapped image, the 1 MiB cache and the binary: far below the file.
    assert!(
        peak < image_len + (24 << 20),
        "peak RSS {peak} for an image of {image_len} bytes and a 48 MiB file"
    );
    // SAFETY: kill with a valid pid and signal.
    unsafe { libc::kill(server.id() as libc::pid_t, libc::SIGINT) };
    assert!(server.wait().expect("wait").success());
}

/// The mount as the kernel harness lists a mount (`fixtures/kernel/README.md`): one object per
/// entry, sorted by path, `.` the root.
fn harness_listing(mnt: &Path) -> Vec<serde_json::Value> {
    use serde_json::json;
    let l = listing(mnt);
    let mut links: BTreeMap<Vec<u8>, Vec<String>> = BTreeMap::new();
    for group in &l.links {
        for p in group {
            links.insert(p.clone(), group.iter().map(|q| shown(q)).collect());
        }
    }
    let mut out = Vec::new();
    for (path, e) in &l.entries {
        let Ok(e) = e else { continue };
        let p = if path.is_empty() {
            ".".to_string()
        } else {
            shown(path)
        };
        let fmt = e.mode & libc::S_IFMT;
        let kind = match fmt {
            libc::S_IFDIR => "dir",
            libc::S_IFREG => "file",
            libc::S_IFLNK => "symlink",
            libc::S_IFIFO => "fifo",
            libc::S_IFCHR => "char",
            libc::S_IFBLK => "block",
            _ => "socket",
        };
        let meta = std::fs::symlink_metadata(mnt.join(OsStr::from_bytes(path))).expect("lstat");
        let mut o = json!({
            "path": p, "type": kind, "mode": format!("{:04o}", e.mode & 0o7777),
            "uid": e.uid, "gid": e.gid, "size": meta.size(), "nlink": e.nlink, "mtime": e.mtime,
            "xattrs": e.xattrs.iter().map(|(k, v)| (k.clone(), json!(v.iter().map(|b| format!("{b:02x}")).collect::<String>()))).collect::<serde_json::Map<_, _>>(),
        });
        if let Some(m) = &e.md5 {
            o["md5"] = json!(m);
        }
        if let Some(t) = &e.target {
            o["target"] = json!(shown(t));
        }
        if let Some((ma, mi)) = e.rdev {
            o["rdev"] = json!(format!("{ma}:{mi}"));
        }
        if let Some(g) = links.get(path) {
            o["links"] = json!(g);
        }
        out.push(o);
    }
    out.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    out
}

#[test]
fn kernel_written_images_show_what_linux_showed() {
    if !fuse() || !can_mount() {
        return;
    }
    let dir = open_scratch();
    let d = dir.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut failures = Vec::new();
    let mut n = 0;
    for e in std::fs::read_dir(&fixtures)
        .expect("fixtures/kernel")
        .flatten()
    {
        let img = e.path();
        if img.extension().is_none_or(|x| x != "img") {
            continue;
        }
        n += 1;
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(img.with_extension("json")).expect("json"))
                .expect("parse");
        let mnt = mkdir(d, &format!("m{n}"));
        let _m = mount(&img, &mnt, &[]);
        let got = harness_listing(&mnt);
        let want = json["listing"].as_array().cloned().unwrap_or_default();
        if got.len() != want.len() {
            failures.push(format!(
                "{}: {} entries, Linux showed {}",
                img.display(),
                got.len(),
                want.len()
            ));
        }
        for (g, w) in got.iter().zip(&want) {
            if g != w {
                failures.push(format!("{}:\n  mounted {g}\n  Linux   {w}", img.display()));
            }
        }
    }
    assert!(n >= 9, "kernel fixtures missing");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every file below `dir` (recursively), sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A foreground server killed (and reaped) when dropped, the test passed or not.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The server's exit status within `secs` seconds, or `None` (it still runs).
fn exit_within(s: &mut Server, secs: u64) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        match s.0.try_wait().expect("wait") {
            Some(st) => return Some(st),
            None if start.elapsed() > Duration::from_secs(secs) => return None,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// `jffs2-mount -f` on one fuzzed file: refused quickly with a clear message and exit 1, or
/// mounted, walked, within the memory bound, and unmounted by SIGTERM. Whether it mounted,
/// and what went wrong, if anything.
fn fuzzed_file_through_the_mount(file: &Path, mnt: &Path, err: &Path) -> (bool, Vec<String>) {
    let what = file.display().to_string();
    let _guard = Mounted {
        dir: mnt.to_path_buf(),
    };
    let child = Command::new(MOUNT)
        .arg("-f")
        .arg(file)
        .arg(mnt)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).expect("stderr file"))
        .spawn()
        .expect("spawn jffs2-mount");
    let mut server = Server(child);
    let start = Instant::now();
    let mut status = None;
    while !is_mounted(mnt) && status.is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(10));
        status = server.0.try_wait().expect("wait");
    }
    let stderr = || std::fs::read_to_string(err).unwrap_or_default();
    let mut bad = Vec::new();
    let mounted = is_mounted(mnt);
    if let Some(st) = status.filter(|_| !mounted) {
        // Refused: a non-zero exit with an error line naming the file.
        let e = stderr();
        if st.code() != Some(1) || !e.contains("error!:") || !e.contains(&what) {
            bad.push(format!("{what}: refused with {st:?} and stderr {e:?}"));
        }
    } else if !mounted {
        bad.push(format!("{what}: neither mounted nor refused within 20 s"));
    } else {
        walk_survives(mnt, &what);
        let peak = peak_rss(server.0.id());
        let bound = 2 * std::fs::metadata(file).expect("len").len() + (64 << 20);
        if peak > bound {
            bad.push(format!("{what}: peak RSS {peak} above {bound}"));
        }
        // SAFETY: kill with a valid pid and signal.
        unsafe { libc::kill(server.0.id() as libc::pid_t, libc::SIGTERM) };
        match exit_within(&mut server, 20) {
            Some(st) if st.success() => {}
            st => bad.push(format!("{what}: after SIGTERM: {st:?}")),
        }
        if is_mounted(mnt) {
            bad.push(format!("{what}: still mounted after the server ended"));
        }
    }
    if stderr().contains("panicked") {
        bad.push(format!("{what}: the server panicked: {}", stderr()));
    }
    (mounted, bad)
}

#[test]
fn fuzzed_files_are_refused_or_mounted_and_walked() {
    if !fuse() || !can_mount() {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for sub in ["corpus", "regressions", "hostile"] {
        files.extend(files_below(&root.join(sub)));
    }
    assert!(files.len() >= 200, "{} fuzz files", files.len());
    let dir = open_scratch();
    let d = dir.path();
    let start = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let mounted = std::sync::atomic::AtomicUsize::new(0);
    // Four at a time: each mount waits mostly on its walk's processes.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(file) = files.get(k) else { break };
                let mnt = mkdir(d, &format!("m{k}"));
                let (m, bad) = fuzzed_file_through_the_mount(file, &mnt, &d.join(format!("e{k}")));
                mounted.fetch_add(usize::from(m), std::sync::atomic::Ordering::Relaxed);
                failures.lock().expect("lock").extend(bad);
            });
        }
    });
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    let left: Vec<_> = (0..files.len())
        .filter(|k| lists_mount(&info, &d.join(format!("m{k}"))))
        .collect();
    assert!(left.is_empty(), "mounts left behind: {left:?}");
    let failures = failures.into_inner().expect("lock");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most seeds are images (the compressor samples and READMEs are not).
    let mounted = mounted.into_inner();
    eprintln!(
        "{mounted} of {} fuzz files mounted and walked, the rest refused, in {:?}",
        files.len(),
        start.elapsed()
    );
    assert!(mounted >= 100, "only {mounted} mounted");
    assert!(
        start.elapsed() < Duration::from_secs(300),
        "{} files took {:?}",
        files.len(),
        start.elapsed()
    );
}

#[test]
fn openwrt_lzma_image_with_its_end_marker_lists_as_extracted() {
    if !fuse() || !skip::root() {
        return;
    }
    let tree = common::tree(common::Kind::Small);
    let dir = open_scratch();
    let d = dir.path();
    // OpenWrt's image (include/image.mk, as tests/openwrt.rs runs it): big-endian, padded,
    // LZMA for what it shrinks most, then the end-of-filesystem marker appended.
    let img = d.join("img");
    let lzma = ["-X", "lzma", "--compression-mode=size"];
    let opts = [
        &["--pad", "-b", "-X", "rtime", "-X", "zlib"][..],
        &lzma,
        &["-e", "64KiB"],
    ];
    mkfs(tree.path(), &img, &opts.concat());
    let mut bytes = std::fs::read(&img).expect("read");
    let at = bytes.len();
    bytes.extend_from_slice(&[0xde, 0xad, 0xc0, 0xde]);
    // Past the marker, what an older firmware left on the flash: a filesystem of its own,
    // which the reader must not look at (Linux erases it at the first mount).
    bytes.resize(at + 65536, 0xff);
    let old = mkdir(d, "old");
    std::fs::write(old.join("stale"), b"old firmware\n").expect("write");
    let stale = d.join("stale.img");
    mkfs(&old, &stale, &["-b", "-e", "64KiB"]);
    bytes.extend_from_slice(&std::fs::read(&stale).expect("read"));
    std::fs::write(&img, &bytes).expect("write");
    // The reader sees the marker where it was put, and LZMA nodes (compressor 8) before it.
    let o = Command::new(DUMP)
        .args(["--json"])
        .arg(&img)
        .output()
        .expect("run jffs2-dump --json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json");
    assert_eq!(v["end_marker"], at, "the end marker");
    let lzma_nodes = v["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["type"] == "inode" && n["fields"]["compr"] == 8)
        .count();
    assert!(lzma_nodes > 10, "{lzma_nodes} LZMA nodes");
    let out = d.join("out");
    extract(&img, &out);
    let mnt = mkdir(d, "mnt");
    let _m = mount(&img, &mnt, &[]);
    let (mounted, extracted) = (listing(&mnt), listing(&out));
    assert!(mounted.entries.len() > 50, "{}", mounted.entries.len());
    let diff = differences(&mounted, &extracted);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
    // The tree's files, with their bytes (LZMA-compressed ones included), and nothing else.
    let src = listing(tree.path());
    let paths = |l: &Listing| l.entries.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(paths(&mounted), paths(&src));
    for (path, e) in &mounted.entries {
        let (Ok(m), Some(Ok(s))) = (e, src.entries.get(path)) else {
            continue;
        };
        assert_eq!(m.md5, s.md5, "{}", shown(path));
    }
}
