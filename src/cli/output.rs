//! Outputs: a run leaves the complete output or nothing, and writes only where the user
//! could have written with mkfs.jffs2.
//!
//! How an output FILE is opened (every image, map or table a tool writes to a named file):
//!
//! * The kernel opens FILE for writing, without creating or truncating it, as mkfs.jffs2's
//!   own `open` would: symbolic links are followed by the kernel, so permission checks and
//!   `fs.protected_symlinks` / `fs.protected_regular` apply exactly as to mkfs.jffs2 (a link
//!   resolved here instead would let a link planted in a shared directory redirect a root
//!   build onto any file).
//! * Not a regular file (a pipe, a terminal, a device, `/dev/stdout`, `/dev/null`): written
//!   directly, as the bytes come.
//! * A regular file, reached directly or through links: the output is written to a temporary
//!   file in the directory of that file's real path (found from the open descriptor), given
//!   that file's mode (and owner, as root), and renamed over it when complete, after checking
//!   that the name still names the file opened. The result is a new inode: other hard links
//!   to the old file keep the old bytes, as with `sed -i` or `mksquashfs`. Being complete or
//!   absent matters more than keeping the inode: writing in place would leave a truncated
//!   image behind on a full disk or an interrupted run.
//! * FILE does not exist: when it is a dangling symbolic link, the kernel creates the file it
//!   names (removed again if the run fails), which is then replaced as above; otherwise the
//!   output is written beside FILE and renamed to it, with mode 0644 less the umask.
//!
//! The temporary file has no name (`O_TMPFILE`) until it is complete, so an interrupted run
//! (Ctrl-C, SIGTERM, a crash) leaves nothing. On file systems without `O_TMPFILE` (or with
//! `JFFS2_TOOLS_NO_TMPFILE` set in the environment, for tests) it is a hidden
//! `.FILE.XXXXXX.tmp`, removed on SIGINT, SIGTERM and SIGHUP by the handler of `cleanup`.
//! Errors keep the kernel's errno (the messages name it, e.g. "Is a directory").
//!
//! The data is not `fsync`ed before the rename, as no mtd-utils tool (nor `cp`, `tar`,
//! `mksquashfs`) does: syncing a 128 MB image costs more than summarising it. After a power
//! cut the destination is the old file or the new one, or, on file systems without ext4's
//! replace-by-rename heuristic, possibly an incomplete new one; build systems that need
//! durability run `sync` once at the end.

mod cleanup;

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use cleanup::Registered;

const BUF: usize = 1 << 20;
/// A buffered writer whose `write` system calls run on a thread of their own: the kernel's
/// copy of each buffer (on tmpfs, as costly as producing the bytes) overlaps the work that
/// produces the next one. At most three buffers of `BUF` (1 MiB) exist.
pub struct Behind<W: Write + Send + 'static> {
    buf: Vec<u8>,
    written: u64,
    tx: Option<SyncSender<Vec<u8>>>,
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<W>>>,
    /// Set by [`Behind::direct`]: the inner writer, written on the caller's thread.
    direct: Option<W>,
}

impl<W: Write + Send + 'static> Behind<W> {
    /// Starts the writing thread for `inner`.
    pub fn new(mut inner: W) -> io::Result<Behind<W>> {
        let (tx, rx) = sync_channel::<Vec<u8>>(1);
        let (give_back, spare) = sync_channel::<Vec<u8>>(2);
        let thread =
            std::thread::Builder::new()
                .name("writer".into())
                .spawn(move || -> io::Result<W> {
                    for mut b in rx {
                        inner.write_all(&b)?;
                        b.clear();
                        let _ = give_back.try_send(b);
                    }
                    inner.flush()?;
                    Ok(inner)
                })?;
        Ok(Behind {
            buf: Vec::with_capacity(BUF),
            written: 0,
            tx: Some(tx),
            spare,
            thread: Some(thread),
            direct: None,
        })
    }

    /// From now on, writes go straight to the inner writer on the caller's thread (what was
    /// buffered is written first): for a caller that runs the writes on a thread of its own
    /// and passes large slices, which the buffer would only copy once more.
    pub fn direct(&mut self) -> io::Result<()> {
        if self.direct.is_none() {
            self.ship()?;
            self.direct = Some(self.join()?);
        }
        Ok(())
    }

    /// Hands the full buffer to the thread; its error, if it stopped on one.
    fn ship(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BUF));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.tx.as_ref().map(|tx| tx.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: on a write error, which joining returns.
            _ => match self.join() {
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other("the writing thread stopped")),
            },
        }
    }

    fn join(&mut self) -> io::Result<W> {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the writing thread panicked")),
            None => Err(io::Error::other("the output was already closed")),
        }
    }

    /// Writes what is buffered, waits for the thread, and returns the inner writer (or the
    /// first error any write met).
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(mut w) = self.direct.take() {
            w.flush()?;
            return Ok(w);
        }
        self.ship()?;
        self.join()
    }
}

impl<W: Write + Send + 'static> Write for Behind<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b)?;
        Ok(b.len())
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match &mut self.direct {
            Some(w) => {
                let n = w.write_vectored(bufs)?;
                self.written += n as u64;
                Ok(n)
            }
            None => {
                let b = bufs
                    .iter()
                    .find(|b| !b.is_empty())
                    .map_or(&[][..], |b| &**b);
                self.write(b)
            }
        }
    }

    fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        self.written += b.len() as u64;
        if let Some(w) = &mut self.direct {
            return w.write_all(b);
        }
        while !b.is_empty() {
            let n = (BUF - self.buf.len().min(BUF)).min(b.len());
            self.buf.extend_from_slice(&b[..n]);
            b = &b[n..];
            if self.buf.len() >= BUF {
                self.ship()?;
            }
        }
        Ok(())
    }

    /// Hands what is buffered to the thread (the bytes reach the file before
    /// [`Behind::finish`] returns).
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.direct {
            Some(w) => w.flush(),
            None => self.ship(),
        }
    }
}

impl<W: Write + Send + 'static> Drop for Behind<W> {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

/// A file's identity: what "the same file" means (hard links and symbolic links included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Id {
    dev: u64,
    ino: u64,
}

impl Id {
    fn of(st: &libc::stat) -> Id {
        Id {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}

fn cstring(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn open_at(dir: RawFd, path: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: a valid NUL-terminated path; the descriptor returned is ours.
        let fd = unsafe {
            libc::openat(
                dir,
                path.as_ptr(),
                flags | libc::O_CLOEXEC,
                libc::c_uint::from(mode),
            )
        };
        if fd >= 0 {
            // SAFETY: a fresh descriptor nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: fstat fills the zeroed struct it is given.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::fstat(fd, &mut st))?;
        Ok(st)
    }
}

/// `fstatat(dir, name)`, never following a symbolic link at the end.
fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: as `fstat`, with a valid NUL-terminated name.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        check(libc::fstatat(
            dir,
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ))?;
        Ok(st)
    }
}

fn is_reg(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFREG
}

/// Where an open descriptor's file lives, as the kernel knows it (`/proc/self/fd/N`).
fn fd_path(fd: RawFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
}

/// The directory of `path` (opened) and the last component's name.
fn split(path: &Path) -> io::Result<(OwnedFd, CString)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = open_at(
        libc::AT_FDCWD,
        &cstring(dir.as_os_str().as_bytes())?,
        libc::O_PATH | libc::O_DIRECTORY,
        0,
    )?;
    Ok((dir, cstring(name.as_bytes())?))
}

/// A hidden temporary name beside `name`: `.NAME.XXXXXX.tmp`, within `NAME_MAX`.
fn temp_name(name: &CStr) -> io::Result<CString> {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let tag = h.finish() % 1_000_000;
    let bytes = name.to_bytes();
    let keep = bytes.len().min(255 - ".".len() - ".000000.tmp".len());
    let mut t = Vec::with_capacity(255);
    t.push(b'.');
    t.extend_from_slice(bytes.get(..keep).unwrap_or(bytes));
    t.extend_from_slice(format!(".{tag:06}.tmp").as_bytes());
    cstring(&t)
}

/// The temporary file.
enum Temp {
    /// Unnamed (`O_TMPFILE`); linked in at the commit through `/proc/self/fd` (or, without
    /// `/proc`, `AT_EMPTY_PATH`, which needs root).
    Unnamed { via_proc: bool },
    /// A hidden name in the destination's directory.
    Named {
        name: CString,
        reg: Option<Registered>,
    },
}

/// A file created through a dangling symbolic link: removed if the run fails.
struct Created {
    id: Id,
    reg: Option<Registered>,
}

/// The replacement of a regular file (or the creation of a new one) by a temporary file.
struct Replace {
    /// A handle on the temporary file of its own (size, mode, owner, link).
    file: File,
    /// The directory of the destination, and its name there.
    dir: OwnedFd,
    name: CString,
    temp: Temp,
    /// The file the name must still name at the rename (the one opened, or created).
    expect: Option<Id>,
    /// Mode and owner given to the temporary file at the commit (those of the file it
    /// replaces; a new file has the mode `open` gave it).
    mode: Option<libc::mode_t>,
    owner: Option<(libc::uid_t, libc::gid_t)>,
    created: Option<Created>,
    /// A thread reserving the file's space ahead of the writes.
    prealloc: Option<JoinHandle<()>>,
    /// The temporary file is in place: nothing to undo.
    done: bool,
}

impl Replace {
    /// A temporary file in `dir` for the destination `name` there, created with `mode`
    /// (less the umask).
    fn new(dir: OwnedFd, name: CString, mode: libc::mode_t) -> io::Result<Replace> {
        let (file, temp) = Self::temp_file(&dir, &name, mode)?;
        Ok(Replace {
            file,
            dir,
            name,
            temp,
            expect: None,
            mode: None,
            owner: None,
            created: None,
            prealloc: None,
            done: false,
        })
    }

    fn temp_file(dir: &OwnedFd, name: &CStr, mode: libc::mode_t) -> io::Result<(File, Temp)> {
        let no_tmpfile = std::env::var_os("JFFS2_TOOLS_NO_TMPFILE").is_some_and(|v| !v.is_empty());
        if !no_tmpfile {
            match open_at(
                dir.as_raw_fd(),
                c".",
                libc::O_TMPFILE | libc::O_WRONLY,
                mode,
            ) {
                Ok(fd) => {
                    let via_proc = fd_path(fd.as_raw_fd()).is_some();
                    // SAFETY: geteuid has no preconditions.
                    if via_proc || unsafe { libc::geteuid() } == 0 {
                        return Ok((File::from(fd), Temp::Unnamed { via_proc }));
                    }
                    // Without /proc only root could link it in: a named file instead.
                }
                // No O_TMPFILE on this file system (EISDIR: on this kernel).
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        for _ in 0..100 {
            let t = temp_name(name)?;
            // Registered before it exists, so that no signal can come between its creation
            // and its registration.
            let reg = cleanup::register(dir.as_raw_fd(), &t);
            match open_at(
                dir.as_raw_fd(),
                &t,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
                mode,
            ) {
                Ok(fd) => return Ok((File::from(fd), Temp::Named { name: t, reg })),
                Err(e) => {
                    if let Some(r) = reg {
                        cleanup::unregister(r);
                    }
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
            }
        }
        Err(io::Error::from_raw_os_error(libc::EEXIST))
    }

    /// Links the unnamed temporary file in as `to`.
    fn link_unnamed(&self, via_proc: bool, to: &CStr) -> io::Result<()> {
        let fd = self.file.as_raw_fd();
        if via_proc {
            let from = cstring(format!("/proc/self/fd/{fd}").as_bytes())?;
            // SAFETY: valid NUL-terminated paths and open descriptors.
            check(unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    from.as_ptr(),
                    self.dir.as_raw_fd(),
                    to.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            })
        } else {
            // SAFETY: as above; the empty path names `fd` itself.
            check(unsafe {
                libc::linkat(
                    fd,
                    c"".as_ptr(),
                    self.dir.as_raw_fd(),
                    to.as_ptr(),
                    libc::AT_EMPTY_PATH,
                )
            })
        }
    }

    fn rename(&self, from: &CStr) -> io::Result<()> {
        let d = self.dir.as_raw_fd();
        // SAFETY: valid NUL-terminated names in an open directory.
        check(unsafe { libc::renameat(d, from.as_ptr(), d, self.name.as_ptr()) })
    }

    fn unlink(&self, name: &CStr) {
        // SAFETY: a valid NUL-terminated name in an open directory.
        unsafe {
            libc::unlinkat(self.dir.as_raw_fd(), name.as_ptr(), 0);
        }
    }

    /// Completes the file (size, owner, mode) and puts it in place of the destination.
    fn commit(&mut self, w: Behind<File>) -> io::Result<()> {
        let written = w.written;
        let reserved = self.prealloc.take().map(JoinHandle::join).is_some();
        drop(w.finish()?);
        if reserved {
            // Gives back what the estimate reserved beyond the output.
            self.file.set_len(written)?;
        }
        let fd = self.file.as_raw_fd();
        if let Some((uid, gid)) = self.owner {
            // Best effort, before the mode (chown clears setuid bits): some file systems
            // have no owners.
            // SAFETY: fchown on our own descriptor.
            unsafe {
                libc::fchown(fd, uid, gid);
            }
        }
        if let Some(mode) = self.mode {
            // SAFETY: fchmod on our own descriptor.
            check(unsafe { libc::fchmod(fd, mode) })?;
        }
        if let Some(id) = self.expect {
            let now = stat_at(self.dir.as_raw_fd(), &self.name).map(|st| Id::of(&st));
            if now.ok() != Some(id) {
                // Moved or replaced by someone else while the output was written: what is
                // there now is not ours to replace.
                return Err(io::Error::other(format!(
                    "{} was replaced or removed while the output was written; left as it is",
                    String::from_utf8_lossy(self.name.to_bytes())
                )));
            }
        }
        match &self.temp {
            Temp::Unnamed { via_proc } => {
                let mut linked = None;
                for _ in 0..100 {
                    let t = temp_name(&self.name)?;
                    let reg = cleanup::register(self.dir.as_raw_fd(), &t);
                    match self.link_unnamed(*via_proc, &t) {
                        Ok(()) => {
                            linked = Some((t, reg));
                            break;
                        }
                        Err(e) => {
                            if let Some(r) = reg {
                                cleanup::unregister(r);
                            }
                            if e.kind() != io::ErrorKind::AlreadyExists {
                                return Err(e);
                            }
                        }
                    }
                }
                let Some((t, reg)) = linked else {
                    return Err(io::Error::from_raw_os_error(libc::EEXIST));
                };
                let r = self.rename(&t);
                if r.is_err() {
                    self.unlink(&t);
                }
                if let Some(reg) = reg {
                    cleanup::unregister(reg);
                }
                r?;
            }
            Temp::Named { name, .. } => self.rename(name)?,
        }
        self.done = true;
        if let Temp::Named { reg: Some(r), .. } = &self.temp {
            cleanup::unregister(*r);
        }
        if let Some(Created { reg: Some(r), .. }) = &self.created {
            cleanup::unregister(*r);
        }
        Ok(())
    }
}

impl Drop for Replace {
    /// Not committed: the temporary file and a file created through a dangling link go.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Temp::Named { name, reg } = &self.temp {
            self.unlink(name);
            if let Some(r) = reg {
                cleanup::unregister(*r);
            }
        }
        if let Some(c) = &self.created {
            if stat_at(self.dir.as_raw_fd(), &self.name).is_ok_and(|st| Id::of(&st) == c.id) {
                self.unlink(&self.name);
            }
            if let Some(r) = c.reg {
                cleanup::unregister(r);
            }
        }
    }
}

enum Dest {
    Temp {
        /// Writes to the temporary file through a `File` of its own.
        w: Behind<File>,
        r: Box<Replace>,
    },
    Direct(Behind<File>),
    Stdout(BufWriter<io::Stdout>),
}

/// An output being written.
pub struct Output {
    dest: Dest,
    /// The file the output replaces or writes to, when it existed (to tell an input).
    id: Option<(Id, bool)>,
}

impl Output {
    /// Output to the file at `path`, by the rule of the module documentation: opened by the
    /// kernel (links followed there), written directly when not a regular file, else
    /// written beside the real file and renamed over it when complete.
    pub fn file(path: PathBuf) -> io::Result<Output> {
        let c = cstring(path.as_os_str().as_bytes())?;
        let flags = libc::O_WRONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        match open_at(libc::AT_FDCWD, &c, flags, 0) {
            Ok(fd) => Self::opened(&path, fd, false),
            // A FIFO without a reader: wait for one, as mkfs.jffs2's blocking open does.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                let fd = open_at(libc::AT_FDCWD, &c, libc::O_WRONLY | libc::O_NOCTTY, 0)?;
                Self::opened(&path, fd, false)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                if link {
                    // A dangling link: the kernel creates what it names (O_EXCL would refuse
                    // any link, and the protected_symlinks checks are the kernel's).
                    let fd = open_at(libc::AT_FDCWD, &c, flags | libc::O_CREAT, 0o644)?;
                    // Non-empty: someone else created it meanwhile; not ours to remove.
                    let ours = fstat(fd.as_raw_fd()).is_ok_and(|st| st.st_size == 0);
                    return Self::opened(&path, fd, ours);
                }
                if path.as_os_str().as_bytes().ends_with(b"/") {
                    // What open(O_CREAT) says for "name/".
                    return Err(io::Error::from_raw_os_error(libc::EISDIR));
                }
                let (dir, name) = split(&path)?;
                let r = Replace::new(dir, name, 0o644)?;
                Self::temp(r, None)
            }
            Err(e) => Err(e),
        }
    }

    /// The kernel opened `path` as `fd`; `created`: by us, through a dangling link.
    fn opened(path: &Path, fd: OwnedFd, created: bool) -> io::Result<Output> {
        let st = fstat(fd.as_raw_fd())?;
        let id = Id::of(&st);
        if !is_reg(&st) {
            // Streamed: blocking writes from here on.
            // SAFETY: fcntl on our own descriptor.
            unsafe {
                let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                if fl >= 0 {
                    libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
                }
            }
            let block = st.st_mode & libc::S_IFMT == libc::S_IFBLK;
            return Ok(Output {
                dest: Dest::Direct(Behind::new(File::from(fd))?),
                id: Some((id, block)),
            });
        }
        // The file's real place, from the kernel (what the links led to); without /proc,
        // the path itself when it is no symbolic link.
        let real = match fd_path(fd.as_raw_fd()) {
            Some(p) if p.is_absolute() => p,
            _ => {
                let plain = std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_symlink());
                if !plain {
                    return Err(io::Error::other(
                        "cannot tell where the symbolic link leads without /proc",
                    ));
                }
                path.to_path_buf()
            }
        };
        let (dir, name) = split(&real)?;
        // The real path must name the file opened (it may have been renamed, or be a
        // deleted file's "(deleted)" name).
        if stat_at(dir.as_raw_fd(), &name).map(|s| Id::of(&s)).ok() != Some(id) {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        let mut r = match Replace::new(dir, name, 0o600) {
            Ok(r) => r,
            Err(e) => {
                if created {
                    remove_if(&real, id);
                }
                return Err(e);
            }
        };
        if created {
            let reg = cleanup::register(r.dir.as_raw_fd(), &r.name);
            r.created = Some(Created { id, reg });
        }
        drop(fd);
        r.expect = Some(id);
        r.mode = Some(st.st_mode & 0o7777);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            r.owner = Some((st.st_uid, st.st_gid));
        }
        Self::temp(r, Some((id, false)))
    }

    fn temp(r: Replace, id: Option<(Id, bool)>) -> io::Result<Output> {
        let w = Behind::new(r.file.try_clone()?)?;
        Ok(Output {
            dest: Dest::Temp { w, r: Box::new(r) },
            id: id.map(|(i, _)| (i, true)),
        })
    }

    /// Output to standard output.
    pub fn stdout() -> io::Result<Output> {
        Ok(Output {
            dest: Dest::Stdout(BufWriter::with_capacity(BUF, io::stdout())),
            id: None,
        })
    }

    /// Whether this output is the file `input` (the same inode once the kernel has followed
    /// links; hard links too): an output that would overwrite the input. Only regular files
    /// and block devices count (a pipe or terminal may be both a tool's input and output).
    pub fn is_same_file(&self, input: &Path) -> bool {
        let Some((id, counts)) = self.id else {
            return false;
        };
        counts
            && std::fs::metadata(input).is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.dev() == id.dev && m.ino() == id.ino
            })
    }

    /// Reserves `len` bytes for the output on a thread of its own, while the caller is still
    /// reading its input (an estimate: what the output does not use is given back at
    /// [`Output::commit`]). Allocating the file's pages ahead, beside the work, takes that
    /// cost off the writes (on tmpfs, about half of writing). Best effort: file systems
    /// without `fallocate` just skip it.
    pub fn preallocate(&mut self, len: u64) {
        let Dest::Temp { r, .. } = &mut self.dest else {
            return;
        };
        let (Ok(len), Ok(dup)) = (libc::off_t::try_from(len), r.file.try_clone()) else {
            return;
        };
        let t = std::thread::Builder::new()
            .name("prealloc".into())
            .spawn(move || {
                // SAFETY: fallocate on a file descriptor this thread owns (`dup`); its
                // result does not matter (the writes allocate whatever it did not).
                unsafe {
                    libc::fallocate(dup.as_raw_fd(), 0, 0, len);
                }
            });
        // Without a thread, no reservation: the writes allocate.
        r.prealloc = t.ok();
    }

    /// The writer to write the image to.
    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.dest {
            Dest::Temp { w, .. } => w,
            Dest::Direct(w) => w,
            Dest::Stdout(w) => w,
        }
    }

    /// The writer for a producer that runs its writes on a thread of its own (a
    /// conversion): no buffer of ours between it and the file. Not to be mixed with
    /// [`Output::writer`] afterwards.
    pub fn direct_writer(&mut self) -> io::Result<&mut (dyn Write + Send)> {
        match &mut self.dest {
            Dest::Temp { w, .. } | Dest::Direct(w) => {
                w.direct()?;
                Ok(w)
            }
            Dest::Stdout(w) => Ok(w),
        }
    }

    /// Completes the output: flushes, and puts the temporary file in place (with the mode
    /// of the file it replaces, or 0644 less the umask for a new one).
    pub fn commit(self) -> io::Result<()> {
        match self.dest {
            Dest::Temp { w, mut r } => r.commit(w),
            Dest::Direct(w) => w.finish().map(drop),
            Dest::Stdout(mut w) => w.flush(),
        }
    }

    /// Gives up: the temporary file is removed (and a file created through a dangling
    /// link), the destination left untouched.
    pub fn abandon(self) {
        drop(self);
    }
}

/// The message for an output that is an input: it names both.
pub fn is_input_message(output: &Path, input: &Path) -> String {
    format!(
        "{}: is the input {} (the same file): refusing to overwrite it; name another output",
        output.display(),
        input.display()
    )
}

/// Whether `output` and `input` are the same file (after the kernel has followed links;
/// hard links too), for outputs not opened through [`Output`]. Only regular files and block
/// devices count, as in [`Output::is_same_file`].
pub fn same_file(output: &Path, input: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match (std::fs::metadata(output), std::fs::metadata(input)) {
        (Ok(o), Ok(i)) => {
            let counts = o.is_file() || o.file_type().is_block_device();
            counts && o.dev() == i.dev() && o.ino() == i.ino()
        }
        _ => false,
    }
}

/// Removes `path` if it is still the file `id` (one we created).
fn remove_if(path: &Path, id: Id) {
    if let Ok((d, n)) = split(path) {
        if stat_at(d.as_raw_fd(), &n).is_ok_and(|s| Id::of(&s) == id) {
            // SAFETY: a valid name in an open directory.
            unsafe {
                libc::unlinkat(d.as_raw_fd(), n.as_ptr(), 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Writes `data` in uneven pieces through an output reserved for `estimate` bytes.
    fn write_with_estimate(path: PathBuf, data: &[u8], estimate: Option<u64>) {
        let mut out = Output::file(path).expect("output");
        if let Some(e) = estimate {
            out.preallocate(e);
        }
        let w = out.writer();
        for piece in data.chunks(4093) {
            w.write_all(piece).expect("write");
        }
        out.commit().expect("commit");
    }

    #[test]
    fn preallocated_output_equals_the_bytes_at_any_estimate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = bytes(3 << 20);
        for estimate in [
            None,
            Some(0),
            Some(1),
            Some(1 << 20),
            Some(3 << 20),
            Some(8 << 20),
        ] {
            let p = dir.path().join("out.img");
            write_with_estimate(p.clone(), &data, estimate);
            let got = std::fs::read(&p).expect("read");
            assert!(got == data, "estimate {estimate:?}: output differs");
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .expect("dir")
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                .collect();
            assert!(left.is_empty(), "temporary file left behind");
        }
    }

    #[test]
    fn abandoned_preallocated_output_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("out.img");
        let mut out = Output::file(p.clone()).expect("output");
        out.preallocate(1 << 20);
        out.writer().write_all(&bytes(5000)).expect("write");
        out.abandon();
        assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none());
    }

    fn mode_of(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777
    }

    fn is_link(p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
    }

    /// The kernel follows the link; the file it names is replaced (complete, its mode kept),
    /// the link kept. A dangling link gets the file it names created, and removed again when
    /// the run fails.
    #[test]
    fn a_symlink_is_written_through_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let real_dir = dir.path().join("real");
        std::fs::create_dir(&real_dir).expect("mkdir");
        let target = real_dir.join("image.bin");
        std::fs::write(&target, b"old").expect("write");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let other_link = dir.path().join("hard.bin");
        std::fs::hard_link(&target, &other_link).expect("link");
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let data = bytes(10000);
        write_with_estimate(link.clone(), &data, Some(10000));
        assert!(is_link(&link));
        assert!(std::fs::read(&target).expect("target") == data);
        assert_eq!(mode_of(&target), 0o600, "the replaced file's mode is kept");
        // A new inode: the other hard link keeps the old bytes.
        assert_eq!(std::fs::read(&other_link).expect("hard link"), b"old");
        assert_eq!(names(&real_dir), ["image.bin"]);

        let dangling = dir.path().join("dangling.bin");
        let missing = real_dir.join("new.bin");
        std::os::unix::fs::symlink(&missing, &dangling).expect("symlink");
        // Abandoned: what the link names is removed again, the link left dangling.
        let mut out = Output::file(dangling.clone()).expect("output");
        out.writer().write_all(&data).expect("write");
        assert!(missing.exists(), "created through the link");
        out.abandon();
        assert!(!missing.exists() && is_link(&dangling));
        assert_eq!(names(&real_dir), ["image.bin"]);
        // Committed: created with the bytes, the link kept.
        write_with_estimate(dangling.clone(), &data, None);
        assert!(std::fs::read(&missing).expect("created") == data);
        assert!(is_link(&dangling));
        assert_eq!(names(&real_dir), ["image.bin", "new.bin"]);
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// The kernel's errno reaches the caller: a directory (also written `dir/` or as a
    /// missing `name/`), a missing directory.
    #[test]
    fn errors_keep_the_kernels_errno() {
        let dir = tempfile::tempdir().expect("tempdir");
        let errno = |p: PathBuf| Output::file(p).err().and_then(|e| e.raw_os_error());
        assert_eq!(errno(dir.path().to_path_buf()), Some(libc::EISDIR));
        let mut slash = dir.path().as_os_str().to_owned();
        slash.push("/");
        assert_eq!(errno(PathBuf::from(slash)), Some(libc::EISDIR));
        assert_eq!(errno(dir.path().join("new/")), Some(libc::EISDIR));
        assert_eq!(
            errno(dir.path().join("missing/out.img")),
            Some(libc::ENOENT)
        );
        assert!(names(dir.path()).is_empty());
    }

    /// A file replaced by another while the output was written is left as it is: the
    /// rename happens only over the file opened.
    #[test]
    fn a_file_replaced_meanwhile_is_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("out.img");
        std::fs::write(&p, b"opened").expect("write");
        let mut out = Output::file(p.clone()).expect("output");
        out.writer().write_all(&bytes(5000)).expect("write");
        let other = dir.path().join("other");
        std::fs::write(&other, b"someone else's").expect("write");
        std::fs::rename(&other, &p).expect("rename");
        assert!(out.commit().is_err());
        assert_eq!(std::fs::read(&p).expect("read"), b"someone else's");
        assert_eq!(names(dir.path()), ["out.img"]);
    }

    /// Devices are written directly; an output is the same file as its input through links.
    #[test]
    fn devices_directly_and_inputs_recognised() {
        let mut out = Output::file(PathBuf::from("/dev/null")).expect("/dev/null");
        out.writer().write_all(b"x").expect("write");
        assert!(
            !out.is_same_file(Path::new("/dev/null")),
            "character devices do not count"
        );
        out.commit().expect("commit");
        let dir = tempfile::tempdir().expect("tempdir");
        let img = dir.path().join("in.img");
        std::fs::write(&img, b"image").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&img, &link).expect("symlink");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&img, &hard).expect("link");
        let out = Output::file(link).expect("output");
        assert!(out.is_same_file(&img) && out.is_same_file(&hard));
        assert!(!out.is_same_file(&dir.path().join("other")));
        out.abandon();
        assert_eq!(std::fs::read(&img).expect("read"), b"image");
    }
}
