//! Measures the "write floor" of `bench/dump.sh`: the time needed only to create a tree on
//! the host, with its contents already in memory: what any extraction of an image holding
//! that tree must at least spend writing, whatever it reads the data from.
//!
//!     cargo run --release --example write_floor -- [--threads N] TREE DEST
//!
//! TREE (an extracted tree, or the tree the image was made from) is read whole into memory
//! first, untimed. Then, timed: DEST is created and everything of TREE is created below it
//! as `jffs2-dump --extract` creates it: directories, regular files (created, written in one
//! call, mode and times set, the owner too when running as root), symbolic links, hard
//! links (further names of an inode `link`ed to the first) and FIFOs; each directory's mode
//! and times set after its children. Directories are created first on one thread, then the
//! files, symbolic links and FIFOs are shared among N threads (default 1: the extraction
//! writes on one thread), then the hard links are made and the directories finished. DEST is removed afterwards (untimed) unless
//! `--keep`.
//!
//! Prints on stdout the wall time and the CPU time (user + system, whole process, the
//! timed part only) in seconds; on stderr what was written.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What one entry of the tree is, with what creating it needs.
enum Kind {
    Dir,
    File(Vec<u8>),
    Symlink(PathBuf),
    /// A further name of the regular file at this index of the entries.
    HardLink(usize),
    Fifo,
}

struct Entry {
    /// Relative to the tree's root.
    rel: PathBuf,
    kind: Kind,
    mode: u32,
    uid: u32,
    gid: u32,
    atime: (i64, i64),
    mtime: (i64, i64),
}

fn main() {
    let mut threads = 1usize;
    let mut keep = false;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "--keep" => keep = true,
            _ => paths.push(PathBuf::from(a)),
        }
    }
    let [tree, dest] = paths.as_slice() else {
        eprintln!("usage: write_floor [--threads N] [--keep] TREE DEST");
        std::process::exit(2);
    };
    if dest.exists() {
        eprintln!("{}: exists", dest.display());
        std::process::exit(2);
    }
    let mut entries = Vec::new();
    let mut inodes = HashMap::new();
    if let Err(e) = read_tree(tree, Path::new(""), &mut entries, &mut inodes) {
        eprintln!("{}: {e}", tree.display());
        std::process::exit(1);
    }
    let bytes: usize = entries
        .iter()
        .map(|e| match &e.kind {
            Kind::File(d) => d.len(),
            _ => 0,
        })
        .sum();
    // SAFETY: no preconditions.
    let root = unsafe { libc::geteuid() } == 0;

    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let result = write_tree(dest, &entries, threads.max(1), root);
    let wall = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    if let Err(e) = result {
        eprintln!("{}: {e}", dest.display());
        std::process::exit(1);
    }
    eprintln!(
        "{} entries, {bytes} bytes of file data, {} thread(s){}",
        entries.len(),
        threads.max(1),
        if root { ", owners set" } else { "" }
    );
    println!("{wall:.3} {cpu:.3}");
    if !keep {
        let _ = fs::remove_dir_all(dest);
    }
}

/// The process's CPU time so far (user + system), in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `ru` is a valid out-parameter.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Reads `base/rel` and everything below it into `out`, directories before their contents.
fn read_tree(
    base: &Path,
    rel: &Path,
    out: &mut Vec<Entry>,
    inodes: &mut HashMap<(u64, u64), usize>,
) -> std::io::Result<()> {
    let mut names: Vec<_> = fs::read_dir(base.join(rel))?
        .map(|d| d.map(|d| d.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let r = rel.join(&name);
        let p = base.join(&r);
        let m = fs::symlink_metadata(&p)?;
        let ft = m.file_type();
        let kind = if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink(fs::read_link(&p)?)
        } else if ft.is_file() {
            match inodes.get(&(m.dev(), m.ino())) {
                Some(&first) => Kind::HardLink(first),
                None => {
                    inodes.insert((m.dev(), m.ino()), out.len());
                    Kind::File(fs::read(&p)?)
                }
            }
        } else if m.mode() & libc::S_IFMT == libc::S_IFIFO {
            Kind::Fifo
        } else {
            continue; // devices and sockets: none in the trees this measures
        };
        out.push(Entry {
            rel: r.clone(),
            kind,
            mode: m.permissions().mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
            atime: (m.atime(), m.atime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
        });
        if ft.is_dir() {
            read_tree(base, &r, out, inodes)?;
        }
    }
    Ok(())
}

fn cpath(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a path"))
}

fn times(e: &Entry) -> [libc::timespec; 2] {
    let ts = |(s, ns): (i64, i64)| libc::timespec {
        tv_sec: s as libc::time_t,
        tv_nsec: ns as libc::c_long,
    };
    [ts(e.atime), ts(e.mtime)]
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Creates the tree below `dest`.
fn write_tree(dest: &Path, entries: &[Entry], threads: usize, root: bool) -> std::io::Result<()> {
    fs::create_dir(dest)?;
    for e in entries.iter().filter(|e| matches!(e.kind, Kind::Dir)) {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dest.join(&e.rel))?;
    }
    let others: Vec<&Entry> = entries
        .iter()
        .filter(|e| !matches!(e.kind, Kind::Dir | Kind::HardLink(_)))
        .collect();
    let per = others.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let jobs: Vec<_> = others
            .chunks(per)
            .map(|part| {
                s.spawn(move || part.iter().try_for_each(|e| create(dest, entries, e, root)))
            })
            .collect();
        jobs.into_iter().try_for_each(|j| {
            j.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("panic")))
        })
    })?;
    // Hard links once every file they name exists.
    for e in entries
        .iter()
        .filter(|e| matches!(e.kind, Kind::HardLink(_)))
    {
        create(dest, entries, e, root)?;
    }
    // Directories last, deepest first: their times after their children are written.
    for e in entries.iter().rev().filter(|e| matches!(e.kind, Kind::Dir)) {
        let p = cpath(&dest.join(&e.rel))?;
        // SAFETY: `p` is a valid C string; the arrays are valid for the calls.
        unsafe {
            if root {
                check(libc::lchown(p.as_ptr(), e.uid, e.gid))?;
            }
            check(libc::chmod(p.as_ptr(), e.mode))?;
            check(libc::utimensat(
                libc::AT_FDCWD,
                p.as_ptr(),
                times(e).as_ptr(),
                0,
            ))?;
        }
    }
    Ok(())
}

/// Creates one entry that is not a directory.
fn create(dest: &Path, entries: &[Entry], e: &Entry, root: bool) -> std::io::Result<()> {
    let path = dest.join(&e.rel);
    match &e.kind {
        Kind::Dir => Ok(()),
        Kind::File(data) => {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(e.mode)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            f.write_all(data)?;
            use std::os::fd::AsRawFd;
            let fd = f.as_raw_fd();
            // SAFETY: `fd` is open; the array is valid for the call.
            unsafe {
                if root {
                    check(libc::fchown(fd, e.uid, e.gid))?;
                }
                check(libc::fchmod(fd, e.mode))?;
                check(libc::futimens(fd, times(e).as_ptr()))
            }
        }
        Kind::Symlink(target) => {
            std::os::unix::fs::symlink(target, &path)?;
            own_and_time(&cpath(&path)?, e, root, libc::AT_SYMLINK_NOFOLLOW)
        }
        Kind::HardLink(first) => fs::hard_link(dest.join(&entries[*first].rel), &path),
        Kind::Fifo => {
            let p = cpath(&path)?;
            // SAFETY: `p` is a valid C string.
            check(unsafe { libc::mkfifo(p.as_ptr(), e.mode) })?;
            own_and_time(&p, e, root, 0)
        }
    }
}

/// Gives the entry at `p` its owner (as root) and times, by path (`flags`: the `utimensat`
/// flags, `AT_SYMLINK_NOFOLLOW` for a link itself).
fn own_and_time(
    p: &std::ffi::CStr,
    e: &Entry,
    root: bool,
    flags: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: `p` is a valid C string; the array is valid for the call.
    unsafe {
        if root {
            check(libc::lchown(p.as_ptr(), e.uid, e.gid))?;
        }
        check(libc::utimensat(
            libc::AT_FDCWD,
            p.as_ptr(),
            times(e).as_ptr(),
            flags,
        ))
    }
}
