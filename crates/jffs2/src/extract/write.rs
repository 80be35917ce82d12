//! Creating a [`Plan`]'s entries below a host directory, every one relative to an open
//! descriptor of its parent (see the module documentation of [`super`] for the rules).

use rayon::Scope;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::plan::{Entry, EntryKind, FileData, Plan};
use super::queue::{write_at, Item, Pending, Queue, Stats, Target, Work};
use super::stream::{ranges, read_range, Buffers, Bytes, Chunk, Range, StreamOptions};
use super::{default_devtable, Refusal};
use crate::fs::Fs;

/// Options of [`extract`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Set owners (`chown`). Default: when running as root.
    pub owners: bool,
    /// Set extended attributes and POSIX ACLs (where the host permits).
    pub xattrs: bool,
    /// Create character and block devices with `mknod` (falling back to the device table when
    /// not permitted). When false they all go to the device table.
    pub devices: bool,
    /// Accept a destination that is not empty: existing directories are merged into (their
    /// owner, mode, times and xattrs left as they are), existing entries of any other kind
    /// are left alone and reported ([`Refusal::Exists`]).
    pub allow_non_empty: bool,
    /// Where to write the device table (default: beside the destination, `DIR.devtable`,
    /// which never replaces an existing file: [`ExtractError::Io`] with `AlreadyExists`).
    pub devtable: Option<PathBuf>,
    /// How far decompression may run ahead.
    pub stream: StreamOptions,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        ExtractOptions {
            owners: root,
            xattrs: true,
            devices: true,
            allow_non_empty: false,
            devtable: None,
            stream: StreamOptions::default(),
        }
    }
}

/// Why an extraction stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The destination exists and is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The destination.
        path: PathBuf,
    },
    /// The destination is a directory that is not empty (see
    /// [`ExtractOptions::allow_non_empty`]).
    #[error("{}: the destination directory is not empty", path.display())]
    NotEmpty {
        /// The destination.
        path: PathBuf,
    },
    /// Preparing the destination or writing the device table failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The host's error.
        source: io::Error,
    },
    /// Writing a file's data failed (a full disk, an I/O error): the extraction stopped.
    #[error("writing {}: {source}", super::escape(path, false))]
    Write {
        /// The file, relative to the destination.
        path: Vec<u8>,
        /// The host's error.
        source: io::Error,
    },
}

/// Extended attributes that could not be set, grouped by name prefix and error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XattrSkip {
    /// The namespace (`user`, `trusted`, `security`, `system`).
    pub namespace: String,
    /// Why (`Operation not permitted`, `Operation not supported`, or for values Linux itself
    /// cannot return, the errno name).
    pub reason: String,
    /// How many.
    pub count: u64,
    /// The first path.
    pub first_path: Vec<u8>,
}

/// What an extraction did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExtractReport {
    /// Directories created (the destination not counted).
    pub dirs: u64,
    /// Directories that already existed and were merged into (only with
    /// [`ExtractOptions::allow_non_empty`]); their owner, mode, times and xattrs are left as
    /// they were.
    pub dirs_merged: u64,
    /// Regular files created.
    pub files: u64,
    /// Further names of inodes, created with `link(2)`.
    pub hard_links: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Character and block devices created.
    pub devices: u64,
    /// FIFOs.
    pub fifos: u64,
    /// Sockets.
    pub sockets: u64,
    /// File data written.
    pub data_bytes: u64,
    /// Zero bytes left as holes (never written).
    pub hole_bytes: u64,
    /// What was not created, and why. Not empty: the extraction is incomplete.
    pub refused: Vec<Refusal>,
    /// Extended attributes set.
    pub xattrs_set: u64,
    /// Extended attributes not set.
    pub xattrs_skipped: Vec<XattrSkip>,
    /// Entries whose owner differs from the extracting user's but was not set (not root).
    pub owners_not_set: u64,
    /// Metadata that could not be set (chown, chmod, times when permitted): first messages.
    pub metadata_errors: Vec<String>,
    /// Metadata errors not listed.
    pub metadata_errors_omitted: u64,
    /// The device table written (path, lines), when devices could not be created.
    pub devtable: Option<(PathBuf, usize)>,
}

/// How an entry ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Created,
    InTable,
    Failed,
}

/// An open directory on the current path.
struct Level {
    entry: usize,
    fd: Option<OwnedFd>,
    /// `None`: made by this extraction. Otherwise the directory was already there (merged
    /// into with `--force`, or an existing destination) and keeps its own owner, mode, xattrs
    /// and these access and modification times (restored once its subtree is done): the image
    /// must not choose who owns a host directory, nor what it looks like.
    existed: Option<[libc::timespec; 2]>,
}

/// The access and modification times of an open file, as `futimens` takes them.
fn times_of(fd: RawFd) -> io::Result<[libc::timespec; 2]> {
    // SAFETY: zeroed is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open descriptor and a valid pointer.
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok([
        libc::timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec,
        },
        libc::timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec,
        },
    ])
}

/// Descriptors kept open at least: directories along the current path (the rest are opened
/// again when needed) and, an eighth of them, entries waiting to be finished ([`Queue`]);
/// more when the descriptor limit allows ([`max_open`]).
const MAX_OPEN: usize = 128;

/// How many descriptors to keep open (see [`MAX_OPEN`]): half the soft descriptor limit, at
/// least [`MAX_OPEN`], and never more than a path of `PATH_MAX` bytes can hold (2048), so
/// that a deep tree is not opened again and again from its root while it is unwound.
fn max_open() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    let soft = if ok { r.rlim_cur as usize } else { 0 };
    (soft / 2).clamp(MAX_OPEN, 2048)
}
/// A file's pending data is written when it reaches this size.
const FLUSH_BYTES: u64 = 1 << 20;
/// Most pieces per `pwritev`.
const MAX_IOV: usize = 256;
/// Metadata error messages kept.
const MAX_META_ERRORS: usize = 32;

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

/// An error's text without Rust's " (os error N)".
fn text(e: &io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

fn openat(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: a valid NUL-terminated name; the descriptor is ours.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
        if fd >= 0 {
            // SAFETY: a fresh descriptor we own.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Opens the directory `name` in `dir`, never following a symbolic link.
fn open_dir_at(dir: RawFd, name: &[u8]) -> io::Result<OwnedFd> {
    let c = cstring(name)?;
    openat(
        dir,
        &c,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        0,
    )
}

fn lstat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: zeroed is a valid `stat`; fstatat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

fn timespecs(atime: u32, mtime: u32) -> [libc::timespec; 2] {
    let t = |s: u32| libc::timespec {
        tv_sec: libc::time_t::from(s),
        tv_nsec: 0,
    };
    [t(atime), t(mtime)]
}

/// Reads range `r` of `file` and writes its data to `fd` in large batches (one `pwritev`
/// each), skipping holes: a job run on the pool ([`Queue::submit_range`]).
fn write_range(
    fs: &Fs<'_>,
    file: &FileData,
    r: Range,
    buffers: &Buffers,
    fd: RawFd,
) -> io::Result<Stats> {
    let mut st = Stats::default();
    let mut pending: Vec<Bytes> = Vec::new();
    let (mut start, mut len) = (0u64, 0u64);
    let flush = |pending: &mut Vec<Bytes>, start: u64, st: &mut Stats| {
        let res = write_at(fd, start, pending);
        st.data += pending.iter().map(|b| b.len() as u64).sum::<u64>();
        pending.clear();
        res
    };
    read_range(fs, file, r, buffers, |c| {
        match c {
            Chunk::Data { offset, bytes } if !bytes.is_empty() => {
                if !pending.is_empty()
                    && (start + len != offset || len >= FLUSH_BYTES || pending.len() >= MAX_IOV)
                {
                    flush(&mut pending, start, &mut st)?;
                }
                if pending.is_empty() {
                    (start, len) = (offset, 0);
                }
                len += bytes.len() as u64;
                pending.push(bytes);
            }
            Chunk::Data { .. } => {}
            Chunk::Zeros { len, .. } => st.holes += len,
            Chunk::Unreadable { offset, len, error } => st.add_bad(offset, len, error),
        }
        Ok(())
    })?;
    if !pending.is_empty() {
        flush(&mut pending, start, &mut st)?;
    }
    Ok(st)
}

struct Writer<'p> {
    fs: &'p Fs<'p>,
    plan: &'p Plan,
    opts: &'p ExtractOptions,
    stack: Vec<Level>,
    /// Levels of `stack` with an open descriptor (the root's included).
    open: usize,
    /// Levels `1..shallow` are closed: descriptors are closed from the shallow end, so the
    /// open ones are the root and `shallow..` (counted, not searched: a deep path would make
    /// every search cost its depth).
    shallow: usize,
    max_open: usize,
    state: Vec<State>,
    report: ExtractReport,
    devtable: Vec<u8>,
    devtable_lines: usize,
    euid: u32,
    egid: u32,
    /// Writes handed out and the finishing steps waiting for them.
    queue: Queue,
    /// The range jobs' decompression buffers.
    buffers: Buffers,
    /// Where the next [`Refusal::Data`] goes in `report.refused`: refusals of unreadable
    /// data are known once a file's ranges are read, and go where the file was created
    /// (plan order): (file entry, its position when created).
    data_slots: std::collections::VecDeque<(usize, usize)>,
    /// [`Refusal::Data`] inserted so far (each shifts the positions after it).
    data_inserted: usize,
}

impl<'p> Writer<'p> {
    fn refuse(&mut self, i: usize, r: Refusal) {
        self.report.refused.push(r);
        if let Some(s) = self.state.get_mut(i) {
            *s = State::Failed;
        }
    }

    fn create_error(&mut self, i: usize, op: &'static str, e: &io::Error) {
        let path = self.plan.path(i);
        let r = if e.raw_os_error() == Some(libc::EEXIST) {
            Refusal::Exists { path }
        } else {
            Refusal::Create {
                path,
                op,
                error: text(e),
            }
        };
        self.refuse(i, r);
    }

    fn meta_error(&mut self, i: usize, op: &str, e: &io::Error) {
        if self.report.metadata_errors.len() < MAX_META_ERRORS {
            let p = super::show(&self.plan.path(i));
            self.report
                .metadata_errors
                .push(format!("{p}: {op} failed: {}", text(e)));
        } else {
            self.report.metadata_errors_omitted += 1;
        }
    }

    /// Closes the shallowest open directories beyond the cap (never the root, nor `keep`
    /// and the levels below it).
    fn close_shallow(&mut self, keep: usize) {
        while self.open > self.max_open && self.shallow < keep {
            if let Some(l) = self.stack.get_mut(self.shallow) {
                if l.fd.take().is_some() {
                    self.open -= 1;
                }
            }
            self.shallow += 1;
        }
    }

    /// Closes the shallowest open directories beyond the cap (never the root nor the top).
    fn enforce_cap(&mut self) {
        self.close_shallow(self.stack.len().saturating_sub(1));
    }

    /// The descriptor of the directory at stack level `lvl`, opened again (from the nearest
    /// open ancestor, component by component, never following a link) if it was closed.
    fn level_fd(&mut self, lvl: usize) -> io::Result<RawFd> {
        if let Some(fd) = self.stack.get(lvl).and_then(|l| l.fd.as_ref()) {
            return Ok(fd.as_raw_fd());
        }
        if lvl >= self.stack.len() {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        // Closed levels are `1..shallow`: the nearest open ancestor is the root.
        for k in 1..=lvl {
            if self.stack[k].fd.is_some() {
                continue;
            }
            let prev = self.stack[k - 1]
                .fd
                .as_ref()
                .map(AsRawFd::as_raw_fd)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
            let name = &self.plan.entries[self.stack[k].entry].name;
            let fd = open_dir_at(prev, name)?;
            self.stack[k].fd = Some(fd);
            self.open += 1;
        }
        self.shallow = 1;
        let fd = self.stack[lvl]
            .fd
            .as_ref()
            .map(AsRawFd::as_raw_fd)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
        // Keep this one and the levels below it (needed next while unwinding).
        self.close_shallow(lvl.saturating_sub(self.max_open / 2).max(1));
        Ok(fd)
    }

    /// A descriptor of the directory entry `dir` (on the current path, or opened from the
    /// root component by component).
    fn dir_fd(&mut self, dir: usize) -> io::Result<DirFd> {
        let depth = self.plan.entries.get(dir).map_or(0, |e| e.depth) as usize;
        if self.stack.get(depth).is_some_and(|l| l.entry == dir) {
            return self.level_fd(depth).map(DirFd::Borrowed);
        }
        let root = self.level_fd(0)?;
        let comps: Vec<Vec<u8>> = self
            .plan
            .components(dir)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        let mut cur: Option<OwnedFd> = None;
        for c in comps {
            let at = cur.as_ref().map_or(root, AsRawFd::as_raw_fd);
            cur = Some(open_dir_at(at, &c)?);
        }
        Ok(match cur {
            Some(fd) => DirFd::Owned(fd),
            None => DirFd::Borrowed(root),
        })
    }

    /// Sets owner, mode, xattrs and times of the open directory or file `fd`.
    fn finish_fd(&mut self, i: usize, fd: RawFd) {
        let out = set_metadata(&self.plan.entries[i], self.finishing(), Meta::Fd(fd));
        self.record(i, out);
    }

    /// Sets owner, mode (not for symbolic links), xattrs and times of `name` in `dir`, just
    /// created as a `ftype` (`S_IFLNK`, `S_IFIFO`, ...). Through an `O_PATH | O_NOFOLLOW`
    /// descriptor checked to be of that type with one link: in a directory others can write
    /// (merged into with `--force`), the name may have been swapped meanwhile for a link to
    /// someone's file, which must not be given the image's owner, setuid bits or
    /// capabilities. The descriptor's `/proc/self/fd` entry reaches that very inode (a
    /// symbolic link itself, not its target).
    ///
    /// The descriptor is opened here (the directory's descriptor may be closed before a
    /// worker runs); the rest runs on the pool (`finish_path`), and its outcomes are
    /// reported in turn, after the files created before it.
    fn finish_at(
        &mut self,
        i: usize,
        dir: RawFd,
        name: &CStr,
        ftype: libc::mode_t,
        scope: Option<&Scope<'p>>,
    ) {
        let pending = match open_created(dir, name, ftype) {
            Ok(fd) => {
                let (e, fin) = (&self.plan.entries[i], self.finishing());
                self.queue
                    .submit_finish(scope, move || finish_path(e, fin, fd, ftype))
            }
            Err(err) => Pending::done(vec![Outcome::Failed("open", err)]),
        };
        self.queue.push(Item {
            entry: i,
            work: Work::At { pending },
        });
    }

    /// What finishing on a worker needs of the writer.
    fn finishing(&self) -> Finishing {
        Finishing {
            owners: self.opts.owners,
            xattrs: self.opts.xattrs,
            euid: self.euid,
            egid: self.egid,
        }
    }

    /// Reports what a finishing step of entry `i` did.
    fn record(&mut self, i: usize, out: Vec<Outcome>) {
        for o in out {
            match o {
                Outcome::Failed(op, err) => self.meta_error(i, op, &err),
                Outcome::OwnersNotSet => self.report.owners_not_set += 1,
                Outcome::XattrSet => self.report.xattrs_set += 1,
                Outcome::XattrSkipped(name, reason) => self.skip_xattr(i, &name, reason),
            }
        }
    }

    fn skip_xattr(&mut self, i: usize, name: &[u8], reason: String) {
        // The image names it: escaped, as it is printed.
        let ns = crate::text::escape(name.split(|&b| b == b'.').next().unwrap_or(b""), false);
        if let Some(s) = self
            .report
            .xattrs_skipped
            .iter_mut()
            .find(|s| s.namespace == ns && s.reason == reason)
        {
            s.count += 1;
            return;
        }
        let first_path = self.plan.path(i);
        self.report.xattrs_skipped.push(XattrSkip {
            namespace: ns,
            reason,
            count: 1,
            first_path,
        });
    }

    /// Pops the directory at the top of the stack, to be finalised in turn (after the files
    /// created before it: removing one that could not be written changes its times).
    fn pop(&mut self) {
        let top = self.stack.len() - 1;
        let fd = self.level_fd(top);
        let Some(mut level) = self.stack.pop() else {
            return;
        };
        let owned = level.fd.take();
        if owned.is_some() {
            self.open -= 1;
        }
        self.shallow = self.shallow.min(self.stack.len().max(1));
        let fd = fd.and_then(|_| owned.ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF)));
        self.queue.push(Item {
            entry: level.entry,
            work: Work::Dir {
                existed: level.existed,
                fd,
            },
        });
    }

    /// Finalises a directory whose subtree is done: the image's metadata if this extraction
    /// made it, else only its own times put back (creating entries in it changed them).
    fn finish_level(
        &mut self,
        i: usize,
        existed: Option<[libc::timespec; 2]>,
        fd: io::Result<RawFd>,
    ) {
        match (fd, existed) {
            (Ok(fd), None) => self.finish_fd(i, fd),
            (Ok(fd), Some(ts)) => {
                // SAFETY: an open descriptor and a two-element array.
                if let Err(err) = check(unsafe { libc::futimens(fd, ts.as_ptr()) }) {
                    self.meta_error(i, "utimens", &err);
                }
            }
            (Err(e), _) => self.meta_error(i, "reopen", &e),
        }
    }

    /// Pops directories until the stack holds `depth` levels.
    fn pop_to(&mut self, depth: usize) {
        while self.stack.len() > depth.max(1) {
            self.pop();
        }
    }

    /// Runs the finishing steps whose writes are done, in order: all of them (waiting for
    /// the writes) when `all`, when more are waiting than descriptors allow, or once a write
    /// failed. A failed file is removed and stops the extraction: the steps after it are
    /// run all the same (files written whole are kept, the others removed).
    fn settle(&mut self, all: bool) -> Result<(), ExtractError> {
        loop {
            let wait = all || self.queue.len() > self.queue.max_items || self.queue.failed();
            let Some(item) = self.queue.next(wait) else {
                return Ok(());
            };
            if let Err(e) = self.apply(item) {
                while let Some(item) = self.queue.next(true) {
                    let _ = self.apply(item);
                }
                return Err(e);
            }
        }
    }

    /// Runs one finishing step (see [`Writer::settle`]).
    fn apply(&mut self, item: Item) -> Result<(), ExtractError> {
        let i = item.entry;
        match item.work {
            Work::File { target, name } => {
                let slot = self.data_slot(i);
                if let Some(source) = target.take_error() {
                    self.remove(i, &name);
                    return Err(ExtractError::Write {
                        path: self.plan.path(i),
                        source,
                    });
                }
                if target.aborted() {
                    // Another file's write failed (reported with it): not written whole.
                    self.remove(i, &name);
                    return Ok(());
                }
                self.account(i, target.take_stats(), slot);
                self.finish_fd(i, target.raw());
            }
            Work::At { pending } => {
                let out = pending.take();
                self.record(i, out);
            }
            Work::Dir { existed, fd } => match fd {
                Ok(fd) => self.finish_level(i, existed, Ok(fd.as_raw_fd())),
                Err(e) => self.finish_level(i, existed, Err(e)),
            },
        }
        Ok(())
    }

    /// The position in `report.refused` recorded for file `i` when it was created.
    fn data_slot(&mut self, i: usize) -> Option<usize> {
        while let Some(&(e, at)) = self.data_slots.front() {
            if e > i {
                break;
            }
            self.data_slots.pop_front();
            if e == i {
                return Some(at);
            }
        }
        None
    }

    /// Counts what file `i`'s ranges read, its unreadable data refused at `slot`.
    fn account(&mut self, i: usize, st: Stats, slot: Option<usize>) {
        self.report.data_bytes += st.data;
        self.report.hole_bytes += st.holes;
        if let Some((offset, bytes, error)) = st.bad {
            let r = Refusal::Data {
                path: self.plan.path(i),
                offset,
                bytes,
                error,
            };
            let at = slot.map_or(usize::MAX, |s| s + self.data_inserted);
            let at = at.min(self.report.refused.len());
            self.report.refused.insert(at, r);
            self.data_inserted += 1;
        }
    }

    /// Removes file `i`, named `name` in its parent, whose data could not all be written:
    /// it was sized first, so what is missing (a full disk) would read as zeros under the
    /// right size; better no file than a plausible-looking truncated copy. A failure leaves
    /// it (the write error is reported anyway).
    fn remove(&mut self, i: usize, name: &CStr) {
        let parent = self.plan.entries.get(i).map_or(0, |e| e.parent);
        if let Ok(dir) = self.dir_fd(parent) {
            // SAFETY: an open directory and a NUL-terminated name in it (the file this
            // extraction created with O_EXCL).
            unsafe {
                libc::unlinkat(dir.raw(), name.as_ptr(), 0);
            }
        }
    }

    fn make_dir(&mut self, i: usize, e: &Entry) -> bool {
        let Ok(pfd) = self.level_fd(self.stack.len() - 1) else {
            self.refuse(
                i,
                Refusal::Create {
                    path: self.plan.path(i),
                    op: "open parent",
                    error: "cannot reopen the parent directory".into(),
                },
            );
            return false;
        };
        let Ok(name) = cstring(&e.name) else {
            return false;
        };
        // SAFETY: valid descriptor and name.
        let made = check(unsafe { libc::mkdirat(pfd, name.as_ptr(), 0o700) });
        let created = made.is_ok();
        if let Err(err) = made {
            let merge = err.raw_os_error() == Some(libc::EEXIST)
                && self.opts.allow_non_empty
                && lstat_at(pfd, &name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
            if !merge {
                self.create_error(i, "mkdir", &err);
                return false;
            }
        }
        match open_dir_at(pfd, &e.name) {
            Ok(fd) => {
                let existed = if created {
                    None
                } else {
                    match times_of(fd.as_raw_fd()) {
                        Ok(ts) => Some(ts),
                        Err(err) => {
                            self.create_error(i, "stat", &err);
                            return false;
                        }
                    }
                };
                self.stack.push(Level {
                    entry: i,
                    fd: Some(fd),
                    existed,
                });
                self.open += 1;
                self.enforce_cap();
                self.state[i] = State::Created;
                if created {
                    self.report.dirs += 1;
                } else {
                    self.report.dirs_merged += 1;
                }
                true
            }
            Err(err) => {
                self.create_error(i, "open", &err);
                false
            }
        }
    }

    fn make_file(&mut self, i: usize, e: &Entry, f: &'p FileData, scope: Option<&Scope<'p>>) {
        let pfd = match self.level_fd(self.stack.len() - 1) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "open parent", &err);
                return;
            }
        };
        let Ok(name) = cstring(&e.name) else {
            return;
        };
        let fd = match openat(
            pfd,
            &name,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o600,
        ) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "open", &err);
                return;
            }
        };
        let size = libc::off_t::try_from(f.size).unwrap_or(libc::off_t::MAX);
        // Sized first: what is never written stays a hole.
        // SAFETY: an open descriptor.
        if let Err(err) = check(unsafe { libc::ftruncate(fd.as_raw_fd(), size) }) {
            self.create_error(i, "truncate", &err);
            return;
        }
        let target = Target::new(fd);
        for r in ranges(f, self.opts.stream.job_bytes) {
            if r.first == r.end {
                // No fragment: all hole.
                self.report.hole_bytes += r.hi - r.lo;
                continue;
            }
            let (fs, buffers) = (self.fs, self.buffers.clone());
            self.queue.submit_range(scope, &target, r.cost, move |fd| {
                write_range(fs, f, r, &buffers, fd)
            });
        }
        self.report.files += 1;
        self.state[i] = State::Created;
        self.data_slots.push_back((i, self.report.refused.len()));
        // Finished (metadata) once its data is written.
        self.queue.push(Item {
            entry: i,
            work: Work::File { target, name },
        });
    }

    fn make_link(&mut self, i: usize, e: &Entry, first: usize) -> Result<(), ExtractError> {
        // Linked once written and finished: a file removed for a failed write must not
        // stay under its other name.
        if self.queue.holds_file(first) {
            self.settle(true)?;
        }
        self.link(i, e, first);
        Ok(())
    }

    fn link(&mut self, i: usize, e: &Entry, first: usize) {
        match self.state.get(first).copied() {
            Some(State::Created) => {}
            Some(State::InTable) => {
                self.table_line(i, first);
                return;
            }
            _ => {
                let r = Refusal::LinkTargetMissing {
                    path: self.plan.path(i),
                    first_path: self.plan.path(first),
                };
                self.refuse(i, r);
                return;
            }
        }
        let src_parent = self.plan.entries[first].parent;
        let src = match self.dir_fd(src_parent) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "link", &err);
                return;
            }
        };
        let pfd = match self.level_fd(self.stack.len() - 1) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "link", &err);
                return;
            }
        };
        let (Ok(from), Ok(to)) = (cstring(&self.plan.entries[first].name), cstring(&e.name)) else {
            return;
        };
        // linkat without AT_SYMLINK_FOLLOW links a symbolic link itself.
        // SAFETY: valid descriptors and names.
        let rc = unsafe { libc::linkat(src.raw(), from.as_ptr(), pfd, to.as_ptr(), 0) };
        match check(rc) {
            Ok(()) => {
                self.state[i] = State::Created;
                self.report.hard_links += 1;
            }
            Err(err) => self.create_error(i, "link", &err),
        }
    }

    fn make_symlink(&mut self, i: usize, e: &Entry, target: &[u8], scope: Option<&Scope<'p>>) {
        let pfd = match self.level_fd(self.stack.len() - 1) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "symlink", &err);
                return;
            }
        };
        let (Ok(name), Ok(t)) = (cstring(&e.name), cstring(target)) else {
            return;
        };
        // SAFETY: valid descriptor and strings.
        match check(unsafe { libc::symlinkat(t.as_ptr(), pfd, name.as_ptr()) }) {
            Ok(()) => {
                self.state[i] = State::Created;
                self.report.symlinks += 1;
                self.finish_at(i, pfd, &name, libc::S_IFLNK, scope);
            }
            Err(err) => self.create_error(i, "symlink", &err),
        }
    }

    fn make_special(&mut self, i: usize, e: &Entry, scope: Option<&Scope<'p>>) {
        let (kind, dev) = match e.kind {
            EntryKind::Char(ma, mi) => (libc::S_IFCHR, Some(libc::makedev(ma, mi))),
            EntryKind::Block(ma, mi) => (libc::S_IFBLK, Some(libc::makedev(ma, mi))),
            EntryKind::Fifo => (libc::S_IFIFO, None),
            _ => (libc::S_IFSOCK, None),
        };
        if dev.is_some() && !self.opts.devices {
            self.table_line(i, i);
            return;
        }
        let pfd = match self.level_fd(self.stack.len() - 1) {
            Ok(fd) => fd,
            Err(err) => {
                self.create_error(i, "mknod", &err);
                return;
            }
        };
        let Ok(name) = cstring(&e.name) else {
            return;
        };
        // SAFETY: valid descriptor and name.
        let rc = unsafe { libc::mknodat(pfd, name.as_ptr(), kind | 0o600, dev.unwrap_or(0)) };
        match check(rc) {
            Ok(()) => {
                self.state[i] = State::Created;
                match kind {
                    libc::S_IFIFO => self.report.fifos += 1,
                    libc::S_IFSOCK => self.report.sockets += 1,
                    _ => self.report.devices += 1,
                }
                self.finish_at(i, pfd, &name, kind, scope);
            }
            Err(err)
                if dev.is_some()
                    && matches!(err.raw_os_error(), Some(libc::EPERM | libc::EACCES)) =>
            {
                self.table_line(i, i);
            }
            Err(err) => self.create_error(i, "mknod", &err),
        }
    }

    /// Records device `i` (or a further name of device `first`) in the device table.
    fn table_line(&mut self, i: usize, first: usize) {
        let path = self.plan.path(i);
        let bad = path
            .iter()
            .any(|&b| b.is_ascii_whitespace() || b == 0x0b || b.is_ascii_control());
        let e = &self.plan.entries[first];
        let (t, ma, mi) = match e.kind {
            EntryKind::Char(ma, mi) => ('c', ma, mi),
            EntryKind::Block(ma, mi) => ('b', ma, mi),
            _ => ('?', 0, 0),
        };
        if bad || t == '?' {
            let r = Refusal::NotInDeviceTable { path };
            self.refuse(i, r);
            return;
        }
        let m = &e.meta;
        self.devtable.push(b'/');
        self.devtable.extend_from_slice(&path);
        self.devtable.extend_from_slice(
            format!(
                " {t} {:o} {} {} {ma} {mi} 0 0 -\n",
                m.mode & 0o7777,
                m.uid,
                m.gid
            )
            .as_bytes(),
        );
        self.devtable_lines += 1;
        self.state[i] = State::InTable;
    }
}

/// What a finishing step did, recorded where it ran (on a worker, for `finish_path`) and
/// reported in plan order by `Writer::record`.
pub(super) enum Outcome {
    /// A step failed: the operation and its error.
    Failed(&'static str, io::Error),
    /// The owner was not set (not root) and differs from ours.
    OwnersNotSet,
    XattrSet,
    /// An extended attribute not set: its name and why.
    XattrSkipped(Vec<u8>, String),
}

/// What finishing on a worker needs of the writer.
#[derive(Clone, Copy)]
struct Finishing {
    owners: bool,
    xattrs: bool,
    euid: u32,
    egid: u32,
}

/// Sets the owner, mode (not for symbolic links), xattrs and times of entry `e` through
/// its `O_PATH` descriptor `fd` (see `Writer::finish_at`), then closes it.
fn finish_path(e: &Entry, f: Finishing, fd: OwnedFd, ftype: libc::mode_t) -> Vec<Outcome> {
    let Ok(path) = cstring(format!("/proc/self/fd/{}", fd.as_raw_fd()).as_bytes()) else {
        return Vec::new();
    };
    // `fd` stays open until the metadata is set, and is closed on return.
    let raw = fd.as_raw_fd();
    set_metadata(
        e,
        f,
        Meta::Proc {
            fd: raw,
            path: &path,
            ftype,
        },
    )
}

/// Sets the owner, mode, xattrs and times of entry `e` on `t`, in that order (the mode after
/// the owner: chown clears the setuid and setgid bits).
fn set_metadata(e: &Entry, f: Finishing, t: Meta<'_>) -> Vec<Outcome> {
    let mut out = Vec::new();
    let meta = &e.meta;
    if f.owners {
        let rc = match t {
            // SAFETY: an open descriptor.
            Meta::Fd(fd) => unsafe { libc::fchown(fd, meta.uid, meta.gid) },
            // SAFETY: an open descriptor and an empty name (AT_EMPTY_PATH: the descriptor's
            // own inode).
            Meta::Proc { fd, .. } => unsafe {
                libc::fchownat(
                    fd,
                    c"".as_ptr(),
                    meta.uid,
                    meta.gid,
                    libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
                )
            },
        };
        failed(&mut out, "chown", rc);
    } else if meta.uid != f.euid || meta.gid != f.egid {
        out.push(Outcome::OwnersNotSet);
    }
    let mode = meta.mode & 0o7777;
    match t {
        // SAFETY: an open descriptor.
        Meta::Fd(fd) => failed(&mut out, "chmod", unsafe { libc::fchmod(fd, mode) }),
        // A symbolic link has no mode of its own.
        Meta::Proc { ftype, .. } if ftype == libc::S_IFLNK => {}
        // SAFETY: a valid path (the descriptor's /proc entry).
        Meta::Proc { path, .. } => {
            failed(&mut out, "chmod", unsafe {
                libc::chmod(path.as_ptr(), mode)
            });
        }
    }
    set_xattrs(e, f.xattrs, t, &mut out);
    let ts = timespecs(meta.atime, meta.mtime);
    let (op, rc) = match t {
        // SAFETY: an open descriptor and a two-element array.
        Meta::Fd(fd) => ("utimens", unsafe { libc::futimens(fd, ts.as_ptr()) }),
        // SAFETY: a valid path and a two-element array.
        Meta::Proc { path, .. } => ("utimensat", unsafe {
            libc::utimensat(libc::AT_FDCWD, path.as_ptr(), ts.as_ptr(), 0)
        }),
    };
    failed(&mut out, op, rc);
    out
}

/// Records `op`'s failure when `rc` says it failed.
fn failed(out: &mut Vec<Outcome>, op: &'static str, rc: libc::c_int) {
    if let Err(err) = check(rc) {
        out.push(Outcome::Failed(op, err));
    }
}

/// Sets the extended attributes of entry `e` (when `enabled`) on `target`.
fn set_xattrs(e: &Entry, enabled: bool, target: Meta<'_>, out: &mut Vec<Outcome>) {
    if !enabled {
        return;
    }
    for x in &e.xattrs {
        let value = match &x.value {
            Ok(v) => v,
            Err(errno) => {
                let why = format!("Linux cannot read it either ({errno})");
                out.push(Outcome::XattrSkipped(x.name.clone(), why));
                continue;
            }
        };
        let Ok(cname) = cstring(&x.name) else {
            out.push(Outcome::XattrSkipped(
                x.name.clone(),
                "name contains NUL".into(),
            ));
            continue;
        };
        let rc = match target {
            // SAFETY: valid descriptor, name and value buffer.
            Meta::Fd(fd) => unsafe {
                libc::fsetxattr(fd, cname.as_ptr(), value.as_ptr().cast(), value.len(), 0)
            },
            // SAFETY: valid path, name and value buffer; the path is a descriptor's /proc
            // entry, which reaches the descriptor's inode (see `finish_at`).
            Meta::Proc { path, .. } => unsafe {
                libc::setxattr(
                    path.as_ptr(),
                    cname.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    0,
                )
            },
        };
        match check(rc) {
            Ok(()) => out.push(Outcome::XattrSet),
            Err(err) => out.push(Outcome::XattrSkipped(x.name.clone(), text(&err))),
        }
    }
}

/// Where metadata is set.
#[derive(Clone, Copy)]
enum Meta<'a> {
    /// An open file or directory.
    Fd(RawFd),
    /// An `O_PATH` descriptor (symbolic links, devices, FIFOs, sockets), its
    /// `/proc/self/fd` entry, and the type it was checked to be.
    Proc {
        fd: RawFd,
        path: &'a CStr,
        ftype: libc::mode_t,
    },
}

/// A directory descriptor that is either on the writer's stack or owned for one operation.
enum DirFd {
    Borrowed(RawFd),
    Owned(OwnedFd),
}

impl DirFd {
    fn raw(&self) -> RawFd {
        match self {
            DirFd::Borrowed(fd) => *fd,
            DirFd::Owned(fd) => fd.as_raw_fd(),
        }
    }
}

/// An `O_PATH` descriptor of `name` in `dir`, never following it, which must be a `ftype`
/// with a single link: what the extraction just created, not something swapped in since (see
/// [`Writer::finish_at`]).
fn open_created(dir: RawFd, name: &CStr, ftype: libc::mode_t) -> io::Result<OwnedFd> {
    let fd = openat(dir, name, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
    // SAFETY: zeroed is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open descriptor and a valid pointer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    if st.st_mode & libc::S_IFMT != ftype || st.st_nlink != 1 {
        return Err(io::Error::other(
            "replaced during the extraction; metadata not set",
        ));
    }
    Ok(fd)
}

/// Prepares the destination: creates it (one level) if missing; otherwise it must be a
/// directory and, unless allowed, empty. Returns an open descriptor, and whether it was
/// created here.
fn open_destination(dir: &Path, allow_non_empty: bool) -> Result<(OwnedFd, bool), ExtractError> {
    let io = |what, source| ExtractError::Io {
        what,
        path: dir.to_path_buf(),
        source,
    };
    let c = cstring(dir.as_os_str().as_bytes()).map_err(|e| io("open", e))?;
    let mut created = false;
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(ExtractError::NotADirectory {
                path: dir.to_path_buf(),
            })
        }
        Ok(_) => {
            if !allow_non_empty {
                let mut rd = std::fs::read_dir(dir).map_err(|e| io("read", e))?;
                if rd.next().is_some() {
                    return Err(ExtractError::NotEmpty {
                        path: dir.to_path_buf(),
                    });
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // SAFETY: a valid path.
            check(unsafe { libc::mkdir(c.as_ptr(), 0o700) }).map_err(|e| io("mkdir", e))?;
            created = true;
        }
        Err(e) => return Err(io("stat", e)),
    }
    // Once created, never follow a link someone put in its place since.
    let nofollow = if created { libc::O_NOFOLLOW } else { 0 };
    let fd = openat(
        libc::AT_FDCWD,
        &c,
        libc::O_RDONLY | libc::O_DIRECTORY | nofollow,
        0,
    )
    .map_err(|e| io("open", e))?;
    Ok((fd, created))
}

/// Extracts `plan` (built from `fs`) into `dir`: see the module documentation of [`super`].
/// Refusals are in the report; an error means the extraction could not start or had to stop
/// (the destination is unusable, a write failed).
pub fn extract(
    fs: &Fs<'_>,
    plan: &Plan,
    dir: &Path,
    opts: &ExtractOptions,
) -> Result<ExtractReport, ExtractError> {
    let (root, root_created) = open_destination(dir, opts.allow_non_empty)?;
    let root_existed = if root_created {
        None
    } else {
        Some(
            times_of(root.as_raw_fd()).map_err(|source| ExtractError::Io {
                what: "stat",
                path: dir.to_path_buf(),
                source,
            })?,
        )
    };
    let mut w = Writer::new(fs, plan, opts, root, root_existed);
    let result = if opts.stream.sequential {
        w.create_all(None)
    } else {
        rayon::in_place_scope(|s| w.create_all(Some(s)))
    };
    // Finalise every directory still open, the destination last.
    w.pop_to(1);
    let settled = w.settle(true);
    let fd = w.level_fd(0);
    w.finish_level(0, root_existed, fd);
    result?;
    settled?;
    w.write_devtable(dir)?;
    Ok(w.report)
}

impl<'p> Writer<'p> {
    /// A writer for `plan` whose stack holds the destination, open as `root`.
    fn new(
        fs: &'p Fs<'p>,
        plan: &'p Plan,
        opts: &'p ExtractOptions,
        root: OwnedFd,
        root_existed: Option<[libc::timespec; 2]>,
    ) -> Writer<'p> {
        // SAFETY: no preconditions.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        // The descriptor cap covers the directories kept open and the files and entries
        // waiting to be finished.
        let cap = max_open();
        let waiting = cap / 8;
        let dirs_open = cap - waiting;
        let mut w = Writer {
            fs,
            plan,
            opts,
            stack: vec![Level {
                entry: 0,
                fd: Some(root),
                existed: root_existed,
            }],
            open: 1,
            shallow: 1,
            max_open: dirs_open,
            state: vec![State::Pending; plan.entries.len()],
            report: ExtractReport {
                refused: plan.refused.clone(),
                ..ExtractReport::default()
            },
            devtable: Vec::new(),
            devtable_lines: 0,
            euid,
            egid,
            queue: Queue::new(opts.stream.sequential, opts.stream.ahead_bytes, waiting),
            buffers: Buffers::default(),
            data_slots: std::collections::VecDeque::new(),
            data_inserted: 0,
        };
        if let Some(s) = w.state.first_mut() {
            *s = State::Created;
        }
        w
    }

    /// Creates every entry below the root in plan order, `files` (the plan's regular files
    /// with their entry indices) read from `reader`; skips the subtree of a directory not made.
    fn create_all(&mut self, scope: Option<&Scope<'p>>) -> Result<(), ExtractError> {
        let plan = self.plan;
        let mut skip_below: Option<u32> = None;
        for (i, e) in plan.entries.iter().enumerate().skip(1) {
            if let Some(d) = skip_below {
                if e.depth > d {
                    continue;
                }
                skip_below = None;
            }
            self.pop_to(e.depth as usize);
            self.settle(false)?;
            if self.stack.last().map(|l| l.entry) != Some(e.parent) {
                // The parent was not created: skip (its refusal is reported).
                continue;
            }
            match &e.kind {
                EntryKind::Dir => {
                    if !self.make_dir(i, e) {
                        skip_below = Some(e.depth);
                    }
                }
                EntryKind::File(f) => {
                    // A write failed: the extraction stops (at the first failure in plan
                    // order, which `settle` reports).
                    if self.queue.failed() {
                        self.settle(true)?;
                    }
                    self.make_file(i, e, f, scope);
                }
                EntryKind::HardLink { first } => self.make_link(i, e, *first)?,
                EntryKind::Symlink(t) => self.make_symlink(i, e, t, scope),
                EntryKind::Char(..)
                | EntryKind::Block(..)
                | EntryKind::Fifo
                | EntryKind::Socket => self.make_special(i, e, scope),
            }
        }
        Ok(())
    }

    /// Writes the device table (devices not created), if any, and records it in the report.
    fn write_devtable(&mut self, dir: &Path) -> Result<(), ExtractError> {
        if !self.devtable.is_empty() {
            let path = self
                .opts
                .devtable
                .clone()
                .unwrap_or_else(|| default_devtable(dir));
            let mut text = b"# Device nodes not created by jffs2-dump (not permitted); add them with\n\
# mkfs.jffs2 -D this-file. <name> <type> <mode> <uid> <gid> <major> <minor> <start> <inc> <count>\n"
                .to_vec();
            text.extend_from_slice(&self.devtable);
            // A name the user did not give never replaces a file: O_EXCL.
            write_nofollow(&path, &text, self.opts.devtable.is_none()).map_err(|source| {
                ExtractError::Io {
                    what: "write device table",
                    path: path.clone(),
                    source,
                }
            })?;
            self.report.devtable = Some((path, self.devtable_lines));
        }
        Ok(())
    }
}

/// Writes `data` to `path`, replacing the content of a regular file there (unless
/// `exclusive`: then an existing name is an error) but never following a symbolic link, never
/// blocking on a FIFO, and never writing through a second hard link (the file would be someone
/// else's too).
fn write_nofollow(path: &Path, data: &[u8], exclusive: bool) -> io::Result<()> {
    use std::io::Write;
    let c = cstring(path.as_os_str().as_bytes())?;
    // Truncated only once checked (below): O_TRUNC would empty a second hard link first.
    let keep = if exclusive { libc::O_EXCL } else { 0 };
    let fd = openat(
        libc::AT_FDCWD,
        &c,
        libc::O_WRONLY | libc::O_CREAT | keep | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        0o644,
    )?;
    // SAFETY: zeroed is a valid `stat`; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open descriptor and a valid pointer.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(io::Error::other("exists and is not a regular file"));
    }
    if st.st_nlink > 1 {
        return Err(io::Error::other(
            "has other hard links; not overwritten (remove it first)",
        ));
    }
    // SAFETY: an open descriptor.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) })?;
    let mut f = std::fs::File::from(fd);
    f.write_all(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_set_only_on_what_was_created() {
        let d = tempfile::tempdir().unwrap();
        let dir = std::fs::File::open(d.path()).unwrap();
        let at = |n: &str| CString::new(n).unwrap();
        let fifo = at("fifo");
        // SAFETY: valid descriptor and name.
        check(unsafe { libc::mknodat(dir.as_raw_fd(), fifo.as_ptr(), libc::S_IFIFO | 0o600, 0) })
            .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("link")).unwrap();
        std::fs::write(d.path().join("file"), b"x").unwrap();
        let raw = dir.as_raw_fd();
        assert!(open_created(raw, &fifo, libc::S_IFIFO).is_ok());
        assert!(open_created(raw, &at("link"), libc::S_IFLNK).is_ok());
        // A regular file where a FIFO or a link was made; a second link to the FIFO.
        assert!(open_created(raw, &at("file"), libc::S_IFIFO).is_err());
        assert!(open_created(raw, &at("file"), libc::S_IFLNK).is_err());
        std::fs::hard_link(d.path().join("fifo"), d.path().join("fifo2")).unwrap();
        assert!(open_created(raw, &fifo, libc::S_IFIFO).is_err());
    }
}
