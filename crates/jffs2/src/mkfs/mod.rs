//! The image builder behind `jffs2-mkfs`: a scanned host tree in, a JFFS2 image out,
//! byte-identical to mtd-utils' mkfs.jffs2 for the same tree and options.
//!
//! The work is split in three:
//! 1. `plan` walks the tree in mkfs.jffs2's write order (`docs/spec/mtd-utils-spec.md` §3.5.2) and
//!    fixes every inode number and hard link up front;
//! 2. `feed` has a pool of compressor threads read the regular files in that order, a batch
//!    of pages per job, and compress each page *speculatively* — assuming it will not have
//!    to be split at an erase-block end;
//! 3. the calling thread lays the nodes out in order with the one [`BlockWriter`] (with
//!    `--summary`, re-laid into summarised blocks as `jffs2-sumtool` does). When a
//!    page does land on a block tail, it is compressed again, here, with the room that is
//!    really left — exactly what mkfs.jffs2 does — so the bytes never depend on the number
//!    of threads.
//!
//! # Example
//!
//! `mkfs.jffs2 -r DIR -o OUT -e 128KiB -l -n -f --pad=SIZE`, with the `-v` listing collected:
//!
//! ```
//! use jffs2::format::Endian;
//! use jffs2::layout::EndPad;
//! use jffs2::mkfs::{build, MkfsConfig, Sink};
//! use jffs2::source::{scan_host, SourceOptions};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("bin"))?;
//! std::fs::write(dir.path().join("bin/busybox"), vec![0x90; 50_000])?;
//! std::os::unix::fs::symlink("busybox", dir.path().join("bin/sh"))?;
//! let (tree, _) = scan_host(dir.path(), &SourceOptions { faketime: true, ..Default::default() })?;
//!
//! /// Keeps the `-v` listing; messages and progress are ignored.
//! #[derive(Default)]
//! struct Listing(Vec<String>);
//! impl Sink for Listing {
//!     fn listing(&mut self, line: &str) {
//!         self.0.push(line.to_string());
//!     }
//! }
//!
//! let cfg = MkfsConfig {
//!     endian: Endian::Little,
//!     erase_size: 128 * 1024,
//!     cleanmarker: None,
//!     pad: EndPad::Size(4 << 20),
//!     verbose: true,
//!     ..MkfsConfig::default()
//! };
//! let mut image = Vec::new();
//! let mut listing = Listing::default();
//! let report = build(&tree, &cfg, &mut image, &mut listing)?;
//! assert_eq!(image.len(), 4 << 20);
//! assert_eq!(report.last_ino, 4); // the root, bin, busybox, sh
//! assert!(listing.0.iter().any(|l| l.contains("busybox")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod feed;
mod incremental;
mod plan;

pub use incremental::{incremental_max_ino, IncrementalScan};

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::compress::{Compressors, Stats, COMPR_NONE};
use crate::crc::crc32;
use crate::format::{
    mode_to_dt, DirentNode, Endian, InodeNode, NodeKind, XattrNode, XrefNode, INODE_SIZE,
    MAX_NAME_LEN, MIN_DATA_LEN, XATTR_SIZE, XREF_SIZE,
};
use crate::format::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFMT, S_IFSOCK};
use crate::layout::SummarizingWriter;
use crate::layout::{record_size, BlockWriter, EndPad, LayoutConfig};
use crate::source::{acl_to_jffs2, SourceEntry, SourceTree};

use feed::{Feed, Spec};
use plan::{Plan, Step};

/// Files of this size or more are skipped, as mkfs.jffs2 does (`JFFS2_MAX_FILE_SIZE`).
pub const MAX_FILE_SIZE: u64 = 0xFFFF_FFFF;
/// The longest symlink target mkfs.jffs2 stores (`JFFS2_MAX_SYMLINK_LEN`).
pub const MAX_SYMLINK_LEN: usize = 254;

/// Everything that decides the bytes of the image.
#[derive(Debug, Clone)]
pub struct MkfsConfig {
    /// Byte order (`-l` / `-b`; default: the host's).
    pub endian: Endian,
    /// Erase-block size (`-e`).
    pub erase_size: u32,
    /// Maximum data per node and unit of compression (`-s`).
    pub page_size: u32,
    /// Cleanmarker size, `None` with `-n`.
    pub cleanmarker: Option<u32>,
    /// End padding (`-p`, `--pad=SIZE`).
    pub pad: EndPad,
    /// Compressors, their priorities and the selection mode (`-m -x -X -y -t`).
    pub compressors: Compressors,
    /// Write an erase-block summary in every block (`--summary`; not in mkfs.jffs2).
    pub summary: bool,
    /// Clamp every timestamp to this value (`SOURCE_DATE_EPOCH`; not in mkfs.jffs2).
    pub clamp_time: Option<u32>,
    /// Highest inode number already used (`-i`: taken from the old image; 0 otherwise).
    pub first_ino: u32,
    /// Produce the `-v` listing.
    pub verbose: bool,
    /// Compressor threads (0 = one per core). The bytes never depend on it.
    pub threads: usize,
}

impl Default for MkfsConfig {
    /// mkfs.jffs2's defaults: the host's byte order, 64 KiB erase blocks, 4 KiB pages (mkfs.jffs2
    /// takes the host's page size, 4 KiB on x86 and most ARM systems), 12-byte cleanmarkers, no end
    /// padding, Debian's compressors (zlib, rtime; [`Compressors::mkfs_default`]), no summaries,
    /// no clamping, no `-i`, no listing, one thread per core.
    ///
    /// ```
    /// use jffs2::mkfs::MkfsConfig;
    ///
    /// let cfg = MkfsConfig { erase_size: 128 * 1024, ..MkfsConfig::default() };
    /// assert_eq!((cfg.page_size, cfg.cleanmarker), (4096, Some(12)));
    /// ```
    fn default() -> Self {
        MkfsConfig {
            endian: Endian::host(),
            erase_size: 64 * 1024,
            page_size: 4096,
            cleanmarker: Some(12),
            pad: EndPad::None,
            compressors: Compressors::mkfs_default(),
            summary: false,
            clamp_time: None,
            first_ino: 0,
            verbose: false,
            threads: 0,
        }
    }
}

/// Kind of a message the builder reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgKind {
    /// mkfs.jffs2 prints this with `errmsg` ("error!:") but carries on.
    Error,
    /// A warning (mkfs.jffs2's own, or one it never gives).
    Warning,
}

/// Where the builder reports what a user should see. The core never prints.
pub trait Sink {
    /// One line of the `-v` listing (without the newline).
    fn listing(&mut self, _line: &str) {
        // Dropped unless the sink wants it: a sink implements only what it shows.
    }
    /// A non-fatal message.
    fn message(&mut self, _kind: MsgKind, _text: &str) {
        // Dropped unless the sink wants it.
    }
    /// Progress: file bytes read so far and in total.
    fn progress(&mut self, _done: u64, _total: u64) {
        // Dropped unless the sink wants it.
    }
}

/// A sink that drops everything.
pub struct NullSink;
impl Sink for NullSink {}

/// What a build produced.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuildReport {
    /// Size of the image in bytes.
    pub image_size: u64,
    /// Compression statistics (for `-v`) and `-t` errors.
    pub stats: Stats,
    /// Number of inodes written (the highest inode number).
    pub last_ino: u32,
}

/// A fatal error while building.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MkfsError {
    /// A host file could not be opened or read.
    #[error("{path}: {source}")]
    Read {
        /// The host path.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The image could not be written.
    #[error("writing the image: {0}")]
    Write(#[from] io::Error),
    /// An xattr value could not be converted.
    #[error("{path}: {message}")]
    Xattr {
        /// The host path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A worker thread failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
    /// The system refused the threads asked for.
    #[error("cannot start {threads} threads: {source}")]
    Threads {
        /// How many were asked for.
        threads: usize,
        /// Why not.
        source: std::io::Error,
    },
}

pub use crate::layout::MAX_THREADS;

/// One page of a file, with its speculative compression.
/// A regular file's data nodes as they are written.
struct FileNodes {
    /// The fields every node of the file shares.
    tmpl: InodeNode,
    /// The last version written (0: none yet).
    version: u32,
    /// The file offset of the next data.
    offset: u32,
    /// Header and stored data bytes written, which `-v` prints.
    wrote: u64,
    /// The node encoding buffer (the builder's, lent for the file).
    buf: Vec<u8>,
}

/// Builds the image of `tree` into `out`: mkfs.jffs2's image, byte for byte, for the same tree
/// and options. Regular files are read from their [`SourceEntry::host_path`] while the image is
/// written; `sink` receives the `-v` listing, the non-fatal messages and the progress.
///
/// Compression runs on a pool of [`MkfsConfig::threads`] threads created for the call (one
/// per core when 0); the output is the same whatever their number:
///
/// ```
/// use jffs2::mkfs::{build, MkfsConfig, NullSink};
/// use jffs2::source::{scan_host, SourceOptions};
///
/// let dir = tempfile::tempdir()?;
/// let text: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
/// std::fs::write(dir.path().join("data"), &text)?;
/// let (tree, _) = scan_host(dir.path(), &SourceOptions { faketime: true, ..Default::default() })?;
///
/// let mut images = Vec::new();
/// for threads in [1, 3] {
///     let mut out = Vec::new();
///     build(&tree, &MkfsConfig { threads, ..MkfsConfig::default() }, &mut out, &mut NullSink)?;
///     images.push(out);
/// }
/// assert_eq!(images[0], images[1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Errors: a host file that cannot be read ([`MkfsError::Read`], with its path), a failed
/// write ([`MkfsError::Write`]), an xattr that cannot be converted. Nothing is printed.
pub fn build<W: Write>(
    tree: &SourceTree,
    cfg: &MkfsConfig,
    out: W,
    sink: &mut dyn Sink,
) -> Result<BuildReport, MkfsError> {
    let plan = plan::make(tree, cfg.first_ino);
    let compressors = Arc::new(cfg.compressors.clone());
    let threads = if cfg.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.threads
    }
    .min(MAX_THREADS);
    let refused = |source: std::io::Error| MkfsError::Threads { threads, source };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("jffs2-compress-{i}"))
        .build()
        .map_err(|e| refused(std::io::Error::other(e.to_string())))?;
    let total: u64 = plan
        .files
        .iter()
        .map(|&id| tree.entries[id].size.min(MAX_FILE_SIZE))
        .sum();

    // Enough batches in flight to keep every core busy, few enough to bound memory.
    let files: Vec<(PathBuf, u64)> = plan
        .files
        .iter()
        .map(|&id| (tree.entries[id].host_path.clone(), tree.entries[id].size))
        .collect();
    let depth = (threads * 4).max(8);
    let feed = Feed::new(files, cfg.page_size as usize, &pool, compressors, depth);
    let mut b = Builder {
        tree,
        cfg,
        w: Layout::new(
            out,
            LayoutConfig {
                endian: cfg.endian,
                erase_size: cfg.erase_size,
                cleanmarker: cfg.cleanmarker,
                summary: cfg.summary,
            },
        ),
        sink,
        feed,
        stats: Stats::default(),
        xattrs: HashMap::new(),
        highest_xid: 0,
        highest_xseqno: 0,
        dirent_version: 0,
        buf: Vec::with_capacity(8192),
        done: 0,
        total,
    };
    b.run(&plan)?;
    let (_, image_size) = b.w.finish(cfg.pad)?;
    Ok(BuildReport {
        image_size,
        stats: b.stats,
        last_ino: plan.last_ino,
    })
}

/// Where the nodes go: the plain layout, or (`--summary`) the plain layout re-laid into
/// summarised blocks exactly as `jffs2-sumtool` does, so that `jffs2-mkfs --summary` equals
/// `jffs2-mkfs` followed by `jffs2-sumtool` (see [`crate::sumtool`]).
enum Layout<W: Write> {
    Plain(BlockWriter<W>),
    Summarized(SummarizingWriter<W>),
}

impl<W: Write> Layout<W> {
    fn new(out: W, cfg: LayoutConfig) -> Self {
        if cfg.summary {
            Layout::Summarized(SummarizingWriter::new(out, cfg))
        } else {
            Layout::Plain(BlockWriter::new(out, cfg))
        }
    }

    fn prepare(&mut self, req: u32, rec_size: u32) -> io::Result<()> {
        match self {
            Layout::Plain(w) => w.prepare(req, rec_size),
            Layout::Summarized(w) => w.prepare(req, rec_size),
        }
    }

    fn room(&self, rec_size: u32) -> u32 {
        match self {
            Layout::Plain(w) => w.room(rec_size),
            Layout::Summarized(w) => w.room(rec_size),
        }
    }

    fn write_node(&mut self, node: &[u8]) -> io::Result<()> {
        match self {
            Layout::Plain(w) => w.write_node(node),
            Layout::Summarized(w) => w.write_node(node),
        }
    }

    fn finish(self, pad: EndPad) -> io::Result<(W, u64)> {
        match self {
            Layout::Plain(w) => w.finish(pad),
            Layout::Summarized(w) => w.finish(pad),
        }
    }
}

struct Builder<'a, W: Write> {
    tree: &'a SourceTree,
    cfg: &'a MkfsConfig,
    w: Layout<W>,
    sink: &'a mut dyn Sink,
    feed: Feed<'a>,
    stats: Stats,
    /// xattr datums already written: (prefix, name, value) -> xid.
    xattrs: HashMap<(u8, Vec<u8>, Vec<u8>), u32>,
    highest_xid: u32,
    highest_xseqno: u32,
    dirent_version: u32,
    buf: Vec<u8>,
    done: u64,
    total: u64,
}

/// The mode bits without the file type, as mkfs.jffs2's listing prints them.
fn perm(mode: u32) -> u32 {
    mode & !S_IFMT
}

impl<'a, W: Write> Builder<'a, W> {
    fn e(&self, id: usize) -> &'a SourceEntry {
        &self.tree.entries[id]
    }

    fn time(&self, t: u32) -> u32 {
        match self.cfg.clamp_time {
            Some(c) => t.min(c),
            None => t,
        }
    }

    /// Writes the plan's steps in order.
    fn run(&mut self, plan: &Plan) -> Result<(), MkfsError> {
        for step in &plan.steps {
            match *step {
                Step::DirStart { dir, ino } => {
                    self.list_dir(dir);
                    self.write_xattrs(dir, ino)?;
                }
                Step::DirEmpty { dir } => self.list_dir(dir),
                Step::Hardlink { e, ino, pino } => self.hardlink(e, ino, pino)?,
                Step::Pipe { e, ino, pino } => {
                    self.list_simple(e);
                    self.write_dirent(e, ino, pino)?;
                    self.write_meta_inode(e, ino, 0, &[])?;
                    self.write_xattrs(e, ino)?;
                }
                Step::Special { e, ino, pino } => {
                    self.list_simple(e);
                    self.write_dirent(e, ino, pino)?;
                    let data = self.device_payload(e);
                    let isize = self.e(e).size as u32;
                    self.write_meta_inode(e, ino, isize, &data)?;
                    self.write_xattrs(e, ino)?;
                }
                Step::Symlink { e, ino, pino } => self.symlink(e, ino, pino)?,
                Step::Regular { e, ino, pino } => {
                    self.write_dirent(e, ino, pino)?;
                    let wrote = self.write_file_data(e, ino)?;
                    self.write_xattrs(e, ino)?;
                    self.list_file(e, wrote);
                }
                Step::TooLarge { e } => self.too_large(e),
                Step::Unknown { e } => {
                    let en = self.e(e);
                    let msg = format!(
                        "Unknown mode {:o} for {}",
                        en.mode,
                        crate::text::escape_if_needed(&en.full_name)
                    );
                    self.sink.message(MsgKind::Error, &msg);
                }
            }
        }
        Ok(())
    }

    /// The listing line of a directory (`-v`): its full name.
    fn list_dir(&mut self, dir: usize) {
        if self.cfg.verbose {
            let line = crate::text::escape_if_needed(&self.e(dir).full_name).into_owned();
            self.sink.listing(&line);
        }
    }

    /// A hard link: its dirent, then its listing line.
    fn hardlink(&mut self, e: usize, ino: u32, pino: u32) -> Result<(), MkfsError> {
        self.write_dirent(e, ino, pino)?;
        if self.cfg.verbose {
            let en = self.e(e);
            let line = format!(
                "\tL {:04o} {:9}             {:5}:{:<3} {}",
                perm(en.mode),
                ino,
                en.uid as i32,
                en.gid as i32,
                crate::text::escape_if_needed(&en.name)
            );
            self.sink.listing(&line);
        }
        Ok(())
    }

    /// A symbolic link, its target cut to [`MAX_SYMLINK_LEN`] bytes as mkfs.jffs2 cuts it.
    fn symlink(&mut self, e: usize, ino: u32, pino: u32) -> Result<(), MkfsError> {
        self.list_simple(e);
        self.write_dirent(e, ino, pino)?;
        let target = self.e(e).link_target.clone().unwrap_or_default();
        let mut len = target.len();
        if len > MAX_SYMLINK_LEN {
            self.sink.message(
                MsgKind::Error,
                &format!("symlink too large. Truncated to {MAX_SYMLINK_LEN} chars."),
            );
            len = MAX_SYMLINK_LEN;
        }
        // isize is the untruncated length (§8 B-12).
        let isize = self.e(e).size as u32;
        self.write_meta_inode(e, ino, isize, &target[..len])?;
        self.write_xattrs(e, ino)
    }

    /// A file over the 4 GiB limit: not stored; mkfs.jffs2's message and listing line.
    fn too_large(&mut self, e: usize) {
        // mkfs.jffs2 names the *directory* here (`e->path`, §3.5.3).
        let en = self.e(e);
        let dir = en
            .parent
            .map(|p| self.e(p).full_name.clone())
            .unwrap_or_default();
        let msg = format!(
            "Skipping file \"{}\" too large.",
            crate::text::escape_if_needed(&dir)
        );
        self.sink.message(MsgKind::Error, &msg);
        let msg = format!(
            "{}: {} bytes is over the 4 GiB JFFS2 file size limit; not stored",
            crate::text::escape_if_needed(&en.full_name),
            en.size
        );
        self.sink.message(MsgKind::Warning, &msg);
        // write_regular_file() returned -1, printed as %u.
        self.list_file(e, u64::from(u32::MAX));
    }

    /// The listing line of a regular file, printed after it is written with the bytes
    /// written (`-v`, §3.8). Names are mkfs.jffs2's, byte for byte, unless they are not
    /// UTF-8 or hold control or bidirectional characters: those are escaped
    /// ([`crate::text::escape_if_needed`]), deliberately unlike mkfs.jffs2, which prints them
    /// raw to the terminal.
    fn list_file(&mut self, id: usize, wrote: u64) {
        if !self.cfg.verbose {
            return;
        }
        let en = self.e(id);
        let line = format!(
            "\tf {:04o} {:9} ({:9}) {:5}:{:<3} {}",
            perm(en.mode),
            en.size,
            wrote,
            en.uid as i32,
            en.gid as i32,
            crate::text::escape_if_needed(&en.name)
        );
        self.sink.listing(&line);
    }

    /// The listing line of a dir, socket, fifo, device or symlink (printed before it is
    /// written, as mkfs.jffs2 does).
    fn list_simple(&mut self, id: usize) {
        if !self.cfg.verbose {
            return;
        }
        let en = self.e(id);
        let name = crate::text::escape_if_needed(&en.name);
        let (uid, gid) = (en.uid as i32, en.gid as i32);
        let line = match en.mode & S_IFMT {
            S_IFDIR | S_IFSOCK | S_IFIFO => {
                let c = match en.mode & S_IFMT {
                    S_IFDIR => 'd',
                    S_IFSOCK => 's',
                    _ => 'p',
                };
                format!(
                    "\t{c} {:04o} {:9}             {:5}:{:<3} {name}",
                    perm(en.mode),
                    en.size,
                    uid,
                    gid
                )
            }
            S_IFCHR | S_IFBLK => {
                let c = if en.mode & S_IFMT == S_IFCHR {
                    'c'
                } else {
                    'b'
                };
                format!(
                    "\t{c} {:04o} {:4},{:4}             {:5}:{:<3} {name}",
                    perm(en.mode),
                    en.rdev_major as i32,
                    en.rdev_minor as i32,
                    uid,
                    gid
                )
            }
            _ => format!(
                "\tl {:04o} {:9}             {:5}:{:<3} {name} -> {}",
                perm(en.mode),
                en.size,
                uid,
                gid,
                crate::text::escape_if_needed(en.link_target.as_deref().unwrap_or(b""))
            ),
        };
        self.sink.listing(&line);
    }

    /// Device payload: mkfs.jffs2's old 2-byte `(major << 8) + minor` encoding; when a
    /// number does not fit in 8 bits, the kernel's 4-byte `new_encode_dev` form instead of
    /// mkfs.jffs2's silent truncation (§8 B-8; kernel `fs.c` accepts both sizes).
    fn device_payload(&mut self, id: usize) -> Vec<u8> {
        let en = self.e(id);
        let (major, minor) = (en.rdev_major, en.rdev_minor);
        let e = self.cfg.endian;
        if !crate::format::dev::fits_old_encoding(major, minor) {
            let msg = format!(
                "{}: device {major}:{minor} does not fit mkfs.jffs2's 8:8 encoding; \
                 stored in the kernel's 4-byte form",
                crate::text::escape_if_needed(&en.full_name)
            );
            self.sink.message(MsgKind::Warning, &msg);
        }
        crate::format::dev::encode_dev(e, major, minor)
    }

    fn owner(&mut self, id: usize) -> (u16, u16) {
        let en = self.e(id);
        let (uid, gid) = (en.uid, en.gid);
        if uid > 0xFFFF || gid > 0xFFFF {
            let msg = format!(
                "{}: uid:gid {uid}:{gid} truncated to 16 bits ({}:{})",
                crate::text::escape_if_needed(&en.full_name),
                uid as u16,
                gid as u16
            );
            self.sink.message(MsgKind::Warning, &msg);
        }
        (uid as u16, gid as u16)
    }

    fn inode_template(&mut self, id: usize, ino: u32) -> InodeNode {
        let (uid, gid) = self.owner(id);
        let en = self.e(id);
        // atime = ctime = mtime = the host mtime (§3.3).
        let t = self.time(en.mtime);
        InodeNode {
            ino,
            mode: en.mode,
            uid,
            gid,
            atime: t,
            mtime: t,
            ctime: t,
            ..Default::default()
        }
    }

    fn write_dirent(&mut self, id: usize, ino: u32, pino: u32) -> Result<(), MkfsError> {
        let en = self.e(id);
        if en.name.len() > MAX_NAME_LEN {
            let msg = format!(
                "{}: name is {} bytes; the kernel rejects names over {MAX_NAME_LEN}",
                crate::text::escape_if_needed(&en.full_name),
                en.name.len()
            );
            self.sink.message(MsgKind::Warning, &msg);
        }
        let en = self.e(id);
        let d = DirentNode {
            pino,
            version: self.dirent_version,
            ino,
            mctime: self.time(en.mtime),
            dtype: mode_to_dt(en.mode),
            ..Default::default()
        };
        self.dirent_version = self.dirent_version.wrapping_add(1);
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        d.encode(self.cfg.endian, &self.tree.entries[id].name, &mut buf);
        // mkfs.jffs2 asks for 40 + (u8)nsize bytes (§3.6.2).
        let req = 40 + u32::from(en.name.len() as u8);
        let rec = record_size(NodeKind::Dirent, en.name.len());
        let r = self.emit(&buf, req, rec);
        self.buf = buf;
        r
    }

    fn emit(&mut self, node: &[u8], req: u32, rec: u32) -> Result<(), MkfsError> {
        self.w.prepare(req, rec)?;
        self.w.write_node(node)?;
        Ok(())
    }

    /// A dir / fifo / socket / device / symlink inode: one node, version 1.
    fn write_meta_inode(
        &mut self,
        id: usize,
        ino: u32,
        isize: u32,
        data: &[u8],
    ) -> Result<(), MkfsError> {
        let mut n = self.inode_template(id, ino);
        n.version = 1;
        n.isize = isize;
        n.dsize = data.len() as u32;
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        n.encode(self.cfg.endian, data, &mut buf);
        let r = self.emit(&buf, INODE_SIZE as u32 + data.len() as u32, 18);
        self.buf = buf;
        r
    }

    /// The data nodes of a regular file (§3.6.3). Returns the bytes written (headers and
    /// stored data, without padding), which `-v` prints.
    fn write_file_data(&mut self, id: usize, ino: u32) -> Result<u64, MkfsError> {
        let mut tmpl = self.inode_template(id, ino);
        tmpl.isize = self.e(id).size as u32;
        let mut f = FileNodes {
            tmpl,
            version: 0,
            offset: 0,
            wrote: 0,
            buf: std::mem::take(&mut self.buf),
        };
        while let Some(batch) = self.feed.next_batch()? {
            let mut start = 0;
            for spec in &batch.pages {
                let page = batch.data.get(start..start + spec.len).unwrap_or_default();
                self.write_page(&mut f, page, spec)?;
                start += spec.len;
            }
            self.feed.recycle(batch);
        }
        if let Some(read) = self.feed.end_file() {
            self.changed_size(id, &mut f, read)?;
        }
        let e = self.cfg.endian;
        if f.version == 0 {
            // An empty file: one node without data (§3.5.3).
            let node = InodeNode {
                version: 1,
                ..f.tmpl
            };
            f.buf.clear();
            node.encode(e, &[], &mut f.buf);
            self.w.prepare(INODE_SIZE as u32, 18)?;
            self.w.write_node(&f.buf)?;
            // mkfs.jffs2 counts only data nodes in the `-v` "bytes written" column, so an
            // empty file lists 0 (§3.8).
        }
        self.buf = f.buf;
        Ok(f.wrote)
    }

    /// The data nodes of one page: as many as the erase blocks' room asks for.
    fn write_page(&mut self, f: &mut FileNodes, page: &[u8], spec: &Spec) -> Result<(), MkfsError> {
        let e = self.cfg.endian;
        let len = page.len();
        let mut spec = Some(spec);
        let mut pos = 0usize;
        while pos < len {
            self.w.prepare(INODE_SIZE as u32 + MIN_DATA_LEN, 18)?;
            let remaining = len - pos;
            let room = (self.w.room(18) as usize).saturating_sub(INODE_SIZE);
            let space = room.min(remaining);
            let fresh;
            let (c, crc) = match spec.take() {
                // The speculative result is what mkfs.jffs2 computes whenever the
                // whole page is offered and room is not the limit.
                Some(s) if pos == 0 && space == len => (&s.c, Some(s.crc)),
                _ => {
                    fresh = self.cfg.compressors.compress(&page[pos..], space);
                    (&fresh, None)
                }
            };
            self.stats.add(&c.stats);
            for m in &c.stats.messages {
                self.sink.message(MsgKind::Error, m);
            }
            f.version += 1;
            let node = InodeNode {
                version: f.version,
                offset: f.offset,
                dsize: c.consumed as u32,
                compr: c.compr,
                ..f.tmpl.clone()
            };
            f.buf.clear();
            let data: &[u8] = if c.compr == COMPR_NONE {
                &page[pos..pos + c.consumed]
            } else {
                &c.data
            };
            let crc = crc.unwrap_or_else(|| crc32(data));
            node.encode_with_crc(e, data, crc, &mut f.buf);
            self.w.write_node(&f.buf)?;
            f.wrote += (INODE_SIZE + data.len()) as u64;
            pos += c.consumed;
            f.offset = f.offset.wrapping_add(c.consumed as u32);
        }
        self.done += len as u64;
        self.sink.progress(self.done, self.total);
        Ok(())
    }

    /// The file changed size while being read (`read` bytes instead of the size listed):
    /// a warning, and, when it shrank, one more node that says the size its data has.
    fn changed_size(&mut self, id: usize, f: &mut FileNodes, read: u64) -> Result<(), MkfsError> {
        let en = self.e(id);
        let listed = en.size;
        let what = if read < listed {
            format!("{read} bytes read of {listed}; the {read} stored")
        } else {
            format!("more than its {listed} bytes; the first {listed} stored")
        };
        let msg = format!(
            "{}: changed size while being read ({what})",
            String::from_utf8_lossy(en.host_path.as_os_str().as_encoded_bytes())
        );
        self.sink.message(MsgKind::Warning, &msg);
        if read < listed && f.version > 0 {
            // The data nodes carry the listed size; one more node without data says
            // the size the data has (the latest version's isize is the file's, §6.4),
            // as a truncation would.
            let node = InodeNode {
                version: f.version + 1,
                isize: read as u32,
                ..f.tmpl.clone()
            };
            f.buf.clear();
            node.encode(self.cfg.endian, &[], &mut f.buf);
            self.w.prepare(INODE_SIZE as u32, 18)?;
            self.w.write_node(&f.buf)?;
        }
        f.tmpl.isize = read as u32;
        Ok(())
    }

    /// The xattr datums (when new) and xrefs of an entry (§3.5.7).
    fn write_xattrs(&mut self, id: usize, ino: u32) -> Result<(), MkfsError> {
        let tree = self.tree;
        let en = &tree.entries[id];
        if en.xattrs.is_empty() {
            return Ok(());
        }
        let e = self.cfg.endian;
        let mut buf = Vec::new();
        for x in &en.xattrs {
            let value = if x.prefix == crate::format::xprefix::ACL_ACCESS
                || x.prefix == crate::format::xprefix::ACL_DEFAULT
            {
                acl_to_jffs2(&x.value, e == Endian::Big).map_err(|err| MkfsError::Xattr {
                    path: en.host_path.clone(),
                    message: err.to_string(),
                })?
            } else {
                x.value.clone()
            };
            let key = (x.prefix, x.name.clone(), value);
            let xid = match self.xattrs.get(&key) {
                Some(&xid) => xid,
                None => {
                    self.highest_xid += 1;
                    let xid = self.highest_xid;
                    let node = XattrNode {
                        xid,
                        version: 1,
                        xprefix: x.prefix,
                        ..Default::default()
                    };
                    buf.clear();
                    node.encode(e, &key.1, &key.2, &mut buf);
                    let req = (XATTR_SIZE + key.1.len() + 1 + key.2.len()) as u32;
                    self.emit(&buf, req, 18)?;
                    self.xattrs.insert(key, xid);
                    xid
                }
            };
            self.highest_xseqno += 2;
            let r = XrefNode {
                ino,
                xid,
                xseqno: self.highest_xseqno,
                ..Default::default()
            };
            buf.clear();
            r.encode(e, &mut buf);
            self.emit(&buf, XREF_SIZE as u32, 6)?;
        }
        Ok(())
    }
}
