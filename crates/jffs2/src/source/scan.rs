//! The host tree scan (`recursive_add_host_directory` / `add_host_filesystem_entry`,
//! `docs/spec/mtd-utils-spec.md` §3.3).

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::sys::{self, Stat};
use super::xattr::read_xattrs;
use super::{EntryId, SourceEntry, SourceError, SourceOptions, SourceTree, SourceWarning};

/// Scans the host directory `root` into a [`SourceTree`], exactly as mkfs.jffs2 does before it
/// writes anything (`docs/spec/mtd-utils-spec.md` §3.2 step 3 and §3.3):
///
/// * The root is resolved like mkfs' `chdir(root)` + `getcwd()` (symlinks resolved,
///   absolute); a missing root, or one that is not a directory, is a [`SourceError::Root`].
/// * Each directory's entries are sorted by raw byte comparison — glibc `alphasort` under
///   the "C" locale mkfs runs in is `strcmp` order (§3.3). "." and ".." are skipped, dot-files
///   are included, mount points are crossed, directories are recursed depth first.
/// * Metadata comes from libc `lstat` (fakeroot/pseudo see it); regular files get
///   `st_size`, symlinks `strlen(readlink())`, everything else size 0; directories get
///   rdev 0 (mkfs passes 0), other types `st_rdev`.
/// * `squash_uids` / `squash_perms` are applied here, to host entries only (§3.1 `-U`/`-P`;
///   symlinks keep their permissions); timestamps are `st_mtime` or 0 with `faketime`.
/// * Types other than directory, regular file, symlink, character/block device, FIFO and
///   socket are skipped with the warning "Unknown file type %o for %s" (§3.3).
/// * Selected xattrs are read for every entry, the root included (§3.5.7).
///
/// A failing `lstat` or directory listing is fatal (mkfs dies there too) and names the path.
///
/// ```
/// let root = tempfile::tempdir()?;
/// std::fs::write(root.path().join("hello"), "hi\n")?;
/// let (tree, _warnings) = jffs2::source::scan_host(root.path(), &Default::default())?;
/// let hello = &tree.entries[tree.find(b"/hello").unwrap()];
/// assert!(hello.is_file());
/// assert_eq!((hello.size, hello.full_name.as_slice()), (3, &b"/hello"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scan_host(
    root: &Path,
    opts: &SourceOptions,
) -> Result<(SourceTree, Vec<SourceWarning>), SourceError> {
    let root_err = |source| SourceError::Root {
        path: root.to_path_buf(),
        source,
    };
    // mkfs: chdir(rootdir); cwd = getcwd() — the physical absolute path of the root.
    let canon = std::fs::canonicalize(root).map_err(root_err)?;
    let st = sys::lstat(&canon).map_err(root_err)?;
    if st.mode & libc::S_IFMT != libc::S_IFDIR {
        return Err(root_err(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
    }

    let mut warnings = Vec::new();
    let mut tree = SourceTree::default();
    let root_entry = host_entry(
        Vec::new(),
        b"/".to_vec(),
        canon,
        &st,
        None,
        opts,
        &mut warnings,
    )?;
    tree.entries.push(root_entry);

    // Depth-first walk with an explicit stack (deep trees must not overflow the Rust stack).
    struct Frame {
        dir: EntryId,
        names: std::vec::IntoIter<Vec<u8>>,
    }
    let mut stack = vec![Frame {
        dir: SourceTree::ROOT,
        names: read_sorted(&tree.entries[SourceTree::ROOT].host_path)?.into_iter(),
    }];
    while let Some(frame) = stack.last_mut() {
        let Some(name) = frame.names.next() else {
            stack.pop();
            continue;
        };
        let dir = frame.dir;
        let parent = &tree.entries[dir];
        // mkfs: hpath = "%s/%s" (host dir, d_name); tpath = "/%s" under the root, else "%s/%s".
        let mut hbytes = parent.host_path.as_os_str().as_bytes().to_vec();
        hbytes.push(b'/');
        hbytes.extend_from_slice(&name);
        let hpath = sys::path_from_bytes(&hbytes);
        let mut full = parent.full_name.clone();
        if full != b"/" {
            full.push(b'/');
        }
        full.extend_from_slice(&name);

        let st = sys::lstat(&hpath).map_err(|source| SourceError::Lstat {
            path: hpath.clone(),
            source,
        })?;
        match st.mode & libc::S_IFMT {
            libc::S_IFDIR => {
                let names = read_sorted(&hpath)?;
                let id = push_child(&mut tree, dir, name, full, hpath, &st, opts, &mut warnings)?;
                stack.push(Frame {
                    dir: id,
                    names: names.into_iter(),
                });
            }
            libc::S_IFREG
            | libc::S_IFSOCK
            | libc::S_IFIFO
            | libc::S_IFLNK
            | libc::S_IFCHR
            | libc::S_IFBLK => {
                push_child(&mut tree, dir, name, full, hpath, &st, opts, &mut warnings)?;
            }
            _ => warnings.push(unknown_type_warning(st.mode, &hpath)),
        }
    }
    Ok((tree, warnings))
}

/// mkfs' message for a host object of an unsupported type (`errmsg`, non-fatal, §3.3).
fn unknown_type_warning(mode: u32, hpath: &Path) -> SourceWarning {
    SourceWarning::error(format!(
        "Unknown file type {mode:o} for {}",
        crate::text::path(hpath)
    ))
}

/// Lists a directory, sorted in C-locale `alphasort` order (raw bytes, `strcmp`).
/// The standard library already drops "." and "..", as mkfs does.
fn read_sorted(path: &Path) -> Result<Vec<Vec<u8>>, SourceError> {
    let err = |source| SourceError::ReadDir {
        path: path.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for ent in std::fs::read_dir(path).map_err(err)? {
        names.push(ent.map_err(err)?.file_name().into_vec());
    }
    // Vec<u8> ordering is lexicographic on unsigned bytes with a proper prefix first,
    // which is exactly strcmp() on NUL-terminated names (§3.3).
    names.sort_unstable();
    Ok(names)
}

#[allow(clippy::too_many_arguments)]
fn push_child(
    tree: &mut SourceTree,
    parent: EntryId,
    name: Vec<u8>,
    full: Vec<u8>,
    hpath: PathBuf,
    st: &Stat,
    opts: &SourceOptions,
    warnings: &mut Vec<SourceWarning>,
) -> Result<EntryId, SourceError> {
    let entry = host_entry(name, full, hpath, st, Some(parent), opts, warnings)?;
    let id = tree.entries.len();
    tree.entries.push(entry);
    tree.entries[parent].children.push(id);
    Ok(id)
}

/// Builds a host-scanned entry (`add_host_filesystem_entry` with the lstat values).
fn host_entry(
    name: Vec<u8>,
    full_name: Vec<u8>,
    host_path: PathBuf,
    st: &Stat,
    parent: Option<EntryId>,
    opts: &SourceOptions,
    warnings: &mut Vec<SourceWarning>,
) -> Result<SourceEntry, SourceError> {
    let ftype = st.mode & libc::S_IFMT;
    let mut mode = st.mode;
    let (mut uid, mut gid) = (st.uid, st.gid);
    // §3.1 -U: squash owner of host entries.
    if opts.squash_uids {
        uid = 0;
        gid = 0;
    }
    // §3.1 -P: clear group/other write and set-id bits of non-symlinks (sticky bit kept).
    if opts.squash_perms && ftype != libc::S_IFLNK {
        mode &= !(libc::S_IWGRP | libc::S_IWOTH | libc::S_ISUID | libc::S_ISGID);
    }
    // Directories are added with rdev 0 (recursive_add_host_directory passes 0).
    let rdev = if ftype == libc::S_IFDIR { 0 } else { st.rdev };
    let mut size = 0;
    let mut link_target = None;
    if ftype == libc::S_IFREG {
        size = st.size.max(0) as u64;
    }
    if ftype == libc::S_IFLNK {
        let t = std::fs::read_link(&host_path)
            .map_err(|source| SourceError::ReadLink {
                path: host_path.clone(),
                source,
            })?
            .into_os_string()
            .into_vec();
        size = t.len() as u64;
        link_target = Some(t);
    }
    let xattrs = read_xattrs(&host_path, &host_path, opts.xattr, opts.verbose, warnings);
    Ok(SourceEntry {
        name,
        full_name,
        mode,
        uid,
        gid,
        rdev_major: sys::dev_major(rdev),
        rdev_minor: sys::dev_minor(rdev),
        size,
        // §3.3: atime = ctime = mtime = st_mtime (truncated to 32 bits on flash); -f → 0.
        mtime: if opts.faketime { 0 } else { st.mtime as u32 },
        dev: st.dev,
        ino: st.ino,
        nlink: st.nlink,
        link_target,
        children: Vec::new(),
        parent,
        xattrs,
        host_path,
    })
}

/// Returns the byte string of a path (helper shared with the device table).
pub(crate) fn path_bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{SourceWarningKind, XattrSelect};
    use std::ffi::CString;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::process::Command;

    fn c(p: &Path) -> CString {
        CString::new(p.as_os_str().as_bytes()).unwrap()
    }

    /// Sets mtime (and atime) of `p` without following symlinks.
    fn set_mtime(p: &Path, secs: i64) {
        let ts = [
            libc::timespec {
                tv_sec: secs,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: secs,
                tv_nsec: 0,
            },
        ];
        // SAFETY: valid C string and a two-element timespec array.
        let rc = unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c(p).as_ptr(),
                ts.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        assert_eq!(rc, 0, "utimensat {}", p.display());
    }

    fn chown(p: &Path, uid: u32, gid: u32) {
        // SAFETY: valid C string.
        assert_eq!(unsafe { libc::lchown(c(p).as_ptr(), uid, gid) }, 0);
    }

    fn mknod(p: &Path, mode: u32, major: u32, minor: u32) {
        // SAFETY: valid C string.
        let rc = unsafe { libc::mknod(c(p).as_ptr(), mode, libc::makedev(major, minor)) };
        assert_eq!(
            rc,
            0,
            "mknod {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
        // Undo the umask.
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode & 0o7777)).unwrap();
    }

    fn child_names(tree: &SourceTree, id: EntryId) -> Vec<Vec<u8>> {
        tree.entries[id]
            .children
            .iter()
            .map(|&c| tree.entries[c].name.clone())
            .collect()
    }

    fn by_full<'a>(tree: &'a SourceTree, full: &str) -> &'a SourceEntry {
        tree.entries
            .iter()
            .find(|e| e.full_name == full.as_bytes())
            .unwrap_or_else(|| panic!("no entry {full}"))
    }

    #[test]
    fn order_is_c_locale_bytewise() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<&[u8]> = vec![
            b"b",
            b"B",
            b"a",
            b"A",
            b".hidden",
            b"_u",
            b"\xc3\xa9t\xc3\xa9",
            b"\xff",
            b"ab",
            b"a.b",
            b"a-b",
            b"Z",
            b"0",
            b"~",
            b"..x",
        ];
        for n in &names {
            let p = dir.path().join(std::ffi::OsStr::from_bytes(n));
            std::fs::write(p, b"").unwrap();
        }
        let (tree, w) = scan_host(dir.path(), &SourceOptions::default()).unwrap();
        assert!(w.is_empty());
        let got = child_names(&tree, SourceTree::ROOT);
        let want: Vec<Vec<u8>> = [
            &b"..x"[..],
            b".hidden",
            b"0",
            b"A",
            b"B",
            b"Z",
            b"_u",
            b"a",
            b"a-b",
            b"a.b",
            b"ab",
            b"b",
            b"~",
            b"\xc3\xa9t\xc3\xa9",
            b"\xff",
        ]
        .iter()
        .map(|s| s.to_vec())
        .collect();
        assert_eq!(got, want);
        for &id in &tree.root().children {
            let e = &tree.entries[id];
            let mut full = b"/".to_vec();
            full.extend_from_slice(&e.name);
            assert_eq!(e.full_name, full);
            assert_eq!(e.parent, Some(SourceTree::ROOT));
        }
    }

    #[test]
    fn recursion_types_sizes_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("etc/init.d")).unwrap();
        std::fs::create_dir(r.join("empty")).unwrap();
        std::fs::write(r.join("etc/passwd"), b"root:x:0:0\n").unwrap();
        std::fs::write(r.join("etc/init.d/rcS"), vec![7u8; 5000]).unwrap();
        symlink("../etc/passwd", r.join("etc/link")).unwrap();
        symlink("a-rather-long-symlink-target/with/components", r.join("l2")).unwrap();
        std::fs::create_dir(r.join("dev")).unwrap();
        mknod(&r.join("dev/null"), libc::S_IFCHR | 0o666, 1, 3);
        mknod(&r.join("dev/sda1"), libc::S_IFBLK | 0o660, 8, 1);
        mknod(&r.join("dev/big"), libc::S_IFCHR | 0o600, 300, 70000);
        mknod(&r.join("dev/fifo"), libc::S_IFIFO | 0o644, 0, 0);
        let _sock = std::os::unix::net::UnixListener::bind(r.join("dev/sock")).unwrap();
        // A hard link.
        std::fs::hard_link(r.join("etc/passwd"), r.join("etc/passwd-")).unwrap();

        let (tree, w) = scan_host(r, &SourceOptions::default()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let root = tree.root();
        assert_eq!(root.full_name, b"/");
        assert_eq!(root.name, b"");
        assert!(root.is_dir());
        assert_eq!(root.parent, None);
        assert_eq!(root.host_path, std::fs::canonicalize(r).unwrap());
        assert_eq!(
            child_names(&tree, 0),
            [&b"dev"[..], b"empty", b"etc", b"l2"]
        );

        let etc = tree.find(b"/etc").unwrap();
        assert_eq!(
            child_names(&tree, etc),
            [&b"init.d"[..], b"link", b"passwd", b"passwd-"]
        );
        let passwd = by_full(&tree, "/etc/passwd");
        assert!(passwd.is_file());
        assert_eq!(passwd.size, 11);
        assert_eq!(passwd.nlink, 2);
        let passwd2 = by_full(&tree, "/etc/passwd-");
        assert_eq!((passwd2.dev, passwd2.ino), (passwd.dev, passwd.ino));
        assert_eq!(passwd.host_path, root.host_path.join("etc/passwd"));
        assert_eq!(by_full(&tree, "/etc/init.d/rcS").size, 5000);
        assert_eq!(by_full(&tree, "/etc/init.d").size, 0);
        assert!(by_full(&tree, "/empty").children.is_empty());

        let link = by_full(&tree, "/etc/link");
        assert!(link.is_symlink());
        assert_eq!(link.link_target.as_deref(), Some(&b"../etc/passwd"[..]));
        assert_eq!(link.size, 13);
        assert_eq!(by_full(&tree, "/l2").size, 44);

        let null = by_full(&tree, "/dev/null");
        assert!(null.is_char_device());
        assert_eq!((null.rdev_major, null.rdev_minor, null.size), (1, 3, 0));
        assert_eq!(null.permissions(), 0o666);
        let sda = by_full(&tree, "/dev/sda1");
        assert!(sda.is_block_device());
        assert_eq!((sda.rdev_major, sda.rdev_minor), (8, 1));
        let big = by_full(&tree, "/dev/big");
        assert_eq!((big.rdev_major, big.rdev_minor), (300, 70000));
        let fifo = by_full(&tree, "/dev/fifo");
        assert!(fifo.is_fifo());
        assert_eq!((fifo.size, fifo.rdev_major, fifo.rdev_minor), (0, 0, 0));
        let sock = by_full(&tree, "/dev/sock");
        assert!(sock.is_socket());
        assert_eq!(sock.size, 0);

        // Parent links and child lists agree.
        for (id, e) in tree.entries.iter().enumerate() {
            for &c in &e.children {
                assert_eq!(tree.entries[c].parent, Some(id));
            }
        }
    }

    #[test]
    fn squash_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir(r.join("d")).unwrap();
        std::fs::write(r.join("d/f"), b"x").unwrap();
        symlink("f", r.join("d/l")).unwrap();
        // chown first: it clears set-id bits.
        chown(&r.join("d/f"), 1000, 1001);
        chown(&r.join("d/l"), 1002, 1003);
        chown(&r.join("d"), 70000, 80000);
        std::fs::set_permissions(r.join("d/f"), std::fs::Permissions::from_mode(0o6777)).unwrap();
        std::fs::set_permissions(r.join("d"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        set_mtime(&r.join("d/f"), 1_234_567_890);
        set_mtime(&r.join("d/l"), 1_000_000_000);
        set_mtime(&r.join("d"), 0x1_2345_6789); // beyond 32 bits: truncated

        let (t, _) = scan_host(r, &SourceOptions::default()).unwrap();
        let f = by_full(&t, "/d/f");
        assert_eq!((f.uid, f.gid, f.mode), (1000, 1001, libc::S_IFREG | 0o6777));
        assert_eq!(f.mtime, 1_234_567_890);
        let l = by_full(&t, "/d/l");
        assert_eq!((l.uid, l.gid, l.mode & 0o7777), (1002, 1003, 0o777));
        assert_eq!(l.mtime, 1_000_000_000);
        let d = by_full(&t, "/d");
        assert_eq!((d.uid, d.gid), (70000, 80000)); // not truncated to 16 bits here
        assert_eq!(d.mtime, 0x2345_6789);

        let opts = SourceOptions {
            squash_uids: true,
            ..Default::default()
        };
        let (t, _) = scan_host(r, &opts).unwrap();
        assert!(t.entries.iter().all(|e| e.uid == 0 && e.gid == 0));
        assert_eq!(by_full(&t, "/d/f").mode, libc::S_IFREG | 0o6777);

        let opts = SourceOptions {
            squash_perms: true,
            ..Default::default()
        };
        let (t, _) = scan_host(r, &opts).unwrap();
        let f = by_full(&t, "/d/f");
        assert_eq!(f.mode, libc::S_IFREG | 0o755);
        assert_eq!(f.uid, 1000);
        assert_eq!(by_full(&t, "/d").mode, libc::S_IFDIR | 0o1755); // sticky kept
        assert_eq!(by_full(&t, "/d/l").mode, libc::S_IFLNK | 0o777); // symlinks untouched

        let opts = SourceOptions {
            faketime: true,
            now: 99,
            ..Default::default()
        };
        let (t, _) = scan_host(r, &opts).unwrap();
        assert!(t.entries.iter().all(|e| e.mtime == 0));
    }

    #[test]
    fn root_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let e = scan_host(&missing, &SourceOptions::default()).unwrap_err();
        assert!(matches!(e, SourceError::Root { .. }));
        assert_eq!(
            e.to_string(),
            format!(
                "{}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        let e = scan_host(&file, &SourceOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with(&file.display().to_string()));
        assert!(e.to_string().contains("Not a directory"));
    }

    #[test]
    fn root_through_symlink_and_relative_components() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/f"), b"").unwrap();
        symlink("real", dir.path().join("alias")).unwrap();
        let (t, _) = scan_host(
            &dir.path().join("alias/../alias"),
            &SourceOptions::default(),
        )
        .unwrap();
        let canon = std::fs::canonicalize(dir.path().join("real")).unwrap();
        assert_eq!(t.root().host_path, canon);
        assert_eq!(t.entries[1].host_path, canon.join("f"));
    }

    #[test]
    fn xattrs_are_read_for_root_and_children() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("f"), b"").unwrap();
        for p in [r.to_path_buf(), r.join("f")] {
            let st = Command::new("setfattr")
                .args(["-n", "user.k", "-v", "v"])
                .arg(&p)
                .status()
                .unwrap();
            assert!(st.success());
        }
        let (t, w) = scan_host(r, &SourceOptions::default()).unwrap();
        assert!(w.is_empty());
        assert!(t.entries.iter().all(|e| e.xattrs.is_empty()));
        let opts = SourceOptions {
            xattr: XattrSelect::USER,
            ..Default::default()
        };
        let (t, _) = scan_host(r, &opts).unwrap();
        for e in &t.entries {
            assert_eq!(e.xattrs.len(), 1);
            assert_eq!((e.xattrs[0].prefix, &e.xattrs[0].name[..]), (1, &b"k"[..]));
            assert_eq!(e.xattrs[0].value, b"v");
        }
    }

    #[test]
    fn unknown_type_message() {
        let w = unknown_type_warning(0o160644, Path::new("/r/x"));
        assert_eq!(w.message, "Unknown file type 160644 for /r/x");
        assert_eq!(w.kind, SourceWarningKind::Error);
    }

    #[test]
    fn deep_tree_does_not_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = dir.path().to_path_buf();
        for _ in 0..300 {
            p.push("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        let handle = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn({
                let r = dir.path().to_path_buf();
                move || scan_host(&r, &SourceOptions::default()).map(|(t, _)| t.entries.len())
            })
            .unwrap();
        assert_eq!(handle.join().unwrap().unwrap(), 301);
    }
}
