//! Offline garbage collection and re-layout: `jffs2-convert` and `jffs2-fsck --repair`.
//!
//! The input is read exactly as Linux would mount it (the [`crate::scan`] and
//! [`crate::fs`] models); the output holds only what Linux shows — every reachable inode
//! with its data, metadata, directory entries and extended attributes — and nothing dead:
//! no obsolete, superseded or deleted node, no deletion dirent, no orphan. It is written
//! through the one [`BlockWriter`] in any geometry (erase size, cleanmarkers, summaries,
//! byte order, page size, compression).
//!
//! # Policy (`docs/spec/kernel-jffs2-spec.md` §8.3, §8.5)
//!
//! * A live node is **copied** ("pristine", the same version) when nothing forbids it: a
//!   data node whose whole range is still visible, that does not cross a page boundary of
//!   the output (the kernel's GC would turn such a node into a hole, §8.3 "Hazard") — holes
//!   (ZERO nodes) excepted, as the kernel writes them across pages itself — that fits an
//!   output erase block, when no recompression is asked for. In the other byte order the
//!   copy is converted field by field ([`crate::format::swap_node`]); the payload is kept.
//! * Anything else is **rewritten**: the visible ranges of a partly overwritten or
//!   truncated data node are decompressed, split at the output page size and compressed
//!   anew (in parallel, with the configured compressors), with versions above the inode's
//!   highest, carrying the inode's current attributes. Versions never go down (§8.3).
//! * A directory always gets a fresh inode node above every dirent version, so its times
//!   stay those Linux showed whatever the copied dirents' `mctime` (§6.4); rewritten dirents
//!   carry `mctime` 0. The faked root of an mkfs image (no node) stays without one (unless
//!   it has xattrs, which Linux attaches only to an inode its scan met); another
//!   faked directory (children but no node) gets a node, which silences the kernel's
//!   "no data nodes found" without changing what it shows.
//! * If the node with an inode's current metadata is not copied, a metadata node (no data)
//!   with those attributes is written last, with the highest version.
//! * Extended attributes are written anew from the datums Linux lists (new ids, one datum
//!   per distinct value, as mkfs.jffs2 does); POSIX ACL values are converted when the byte
//!   order changes.
//!
//! Inodes Linux cannot read, the entries naming them, and inodes no directory reaches are
//! left out and reported ([`Dropped`]). Output bytes never depend on the number of threads.
//!
//! Inodes are written as soon as they are read and known to be shown, while later ones are
//! still being read: the files in inode order, those of many nodes halfway through the others
//! (read first, so that their long reading overlaps writing), then the directories (whose
//! entries depend on every child being readable). The bytes of copied nodes go to the output
//! straight from the image, on a writing thread of their own.
//!
//! OpenWrt: LZMA data nodes (compressor 8) are read like any other and copied, or rewritten
//! with the configured compressors when recompressing (`-x lzma` turns an OpenWrt image
//! into one stock Linux reads; `-X lzma` the other way). An input that ends with OpenWrt's
//! end-of-filesystem marker ([`crate::scan::END_MARKER`]; the scan stops there) gets one in
//! the output too: at the start of the erase block after the padded output, as OpenWrt
//! appends it to its images, so that OpenWrt's kernel still erases the rest of the
//! partition at the first mount (stock Linux sees 4 bytes of dirt in an erased block).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::sync::Arc;

use crate::compress::{Compressors, COMPR_NONE, COMPR_ZERO};
use crate::format::dev::encode_dev;
use crate::format::hdr;
use crate::format::ROOT_INO;
use crate::format::{acl::swap_acl, swap_node};
use crate::format::{
    xprefix, Endian, InodeNode, NodeHeader, NodeKind, XattrNode, XrefNode, NODE_ACCURATE,
    XATTR_SIZE, XREF_SIZE,
};
use crate::fs::{DataNode, Fs, FsError, Inode, InodeKind, NodeData};
use crate::layout::{record_for, record_size, BlockWriter, EndPad, LayoutConfig};
use crate::progress::Progress;
use crate::scan::{Detection, Geometry, NodeRef, Scan, ScanOptions};

mod losses;
mod stream;
#[cfg(test)]
mod tests;
mod write;

use write::Chunk;

/// What the output looks like.
#[derive(Debug, Clone)]
pub struct ConvertConfig {
    /// Byte order, erase size, cleanmarkers, summaries of the output.
    pub layout: LayoutConfig,
    /// Page size of the target (no rewritten data node crosses a multiple of it).
    pub page_size: u32,
    /// Decompress and compress every data node anew (a compression option was given),
    /// rather than copying payloads.
    pub recompress: bool,
    /// The compressors of rewritten data nodes.
    pub compressors: Compressors,
    /// End padding.
    pub pad: EndPad,
    /// Compression threads (0: one per core).
    pub threads: usize,
    /// Told `(done, total)` in inodes written; called from the writing thread.
    pub progress: Option<Progress>,
}

/// Something of the input the output does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The inode concerned.
    pub ino: u32,
    /// Its path, when a directory names it.
    pub path: Option<Vec<u8>>,
    /// What was left out and why.
    pub what: String,
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConvertReport {
    /// Bytes of the output image.
    pub image_size: u64,
    /// Inodes written.
    pub inodes: u64,
    /// Directory entries written.
    pub dirents: u64,
    /// Nodes copied (pristine, possibly byte-swapped).
    pub copied: u64,
    /// Nodes written anew.
    pub rewritten: u64,
    /// xattr datums and references written.
    pub xattrs: u64,
    /// Bytes of the nodes written (headers and payloads, without padding).
    pub node_bytes: u64,
    /// What was left out.
    pub dropped: Vec<Dropped>,
    /// Nodes kept as they were because their data could not be decompressed (Linux fails
    /// reading that range too).
    pub kept_undecodable: u64,
    /// Why Linux would not mount the input, when the model converted is a salvage
    /// ([`Source::salvage`]): the output holds what can be read of an unmountable input.
    pub unmountable: Option<String>,
}

/// A conversion that could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The root directory cannot be read: Linux would not mount the input.
    #[error("the root directory cannot be read ({0}): Linux would not mount this image")]
    RootUnreadable(FsError),
    /// The input cannot be read as JFFS2.
    #[error("{0}")]
    Input(String),
    /// Linux would not mount the input.
    #[error("Linux would not mount the input: {0}")]
    Unmountable(String),
    /// The output could not be written.
    #[error("writing the image: {0}")]
    Write(#[from] io::Error),
    /// The output geometry cannot hold a node (erase size too small).
    #[error("{0}")]
    Geometry(String),
    /// A worker thread failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
    /// The system refused the threads asked for.
    #[error("cannot start {threads} threads: {source}")]
    Threads {
        /// How many were asked for.
        threads: usize,
        /// Why not.
        source: io::Error,
    },
}

/// The summary record an inode node adds (data nodes, copied or written anew).
const INODE_REC: u32 = crate::format::SUM_INODE_SIZE as u32;

/// The smallest erase size the output may have (the scan's own minimum).
const MIN_ERASE: u32 = 8192;
/// Work items compressed per parallel round, at most.
const ROUND: usize = 2048;
/// Inodes planned per batch sent to the writing side.
const PLAN_CHUNK: usize = 64;
/// Nodes (plus one per inode) a chunk of small files read at once holds, about.
const CHUNK_NODES: usize = 1024;
/// Chunks read ahead of the one being planned.
const AHEAD: usize = 4;
/// Files of this many nodes or more, and an eighth of all nodes or more, are read and written
/// before the others.
const BIG: usize = 1024;
/// Bytes of file data (decompressed) a round may hold: with the round being written and the
/// next one prepared, memory stays bounded whatever the nodes claim (a round of hostile
/// 4 MiB nodes would otherwise hold gigabytes; `tests/hostile_cli.rs`).
const ROUND_BYTES: u64 = 8 << 20;

/// One unit of output, in write order. Kept small (planned items are held for a whole file,
/// one per data node): a node template is shared by the items of its inode.
enum Item {
    /// A node copied from the input (byte-swapped when the byte order changes); data
    /// nodes carry their description and the inode's current attributes, for a split at a
    /// block end.
    Copy {
        offset: u32,
        data: Option<(DataNode, Arc<InodeNode>)>,
    },
    /// A data node's visible ranges, rewritten.
    Data {
        tmpl: Arc<InodeNode>,
        dn: DataNode,
        ranges: Vec<(u64, u64)>,
    },
    /// An inode node without data (or with a raw payload: symlink target).
    Meta {
        node: Arc<InodeNode>,
        payload: Vec<u8>,
    },
    /// A regular file's closing metadata node: the copy at `copy` if nothing of the inode
    /// got a fresh version before it, else `node` with the next version.
    LastMeta {
        copy: Option<u32>,
        node: Arc<InodeNode>,
    },
    /// A directory entry written anew.
    Dirent {
        pino: u32,
        ino: u32,
        dtype: u8,
        name: crate::name::Name,
    },
    /// An xattr datum.
    Datum {
        xid: u32,
        prefix: u8,
        name: Vec<u8>,
        value: Vec<u8>,
    },
    /// An xattr reference.
    Xref { ino: u32, xid: u32, xseqno: u32 },
}

/// An item made ready by a worker; copies in the input's byte order borrow the image.
enum Ready<'a> {
    /// Finished node bytes and their summary record size.
    Node(Cow<'a, [u8]>, u32),
    /// A copied data node (output byte order), split at write time if it would leave
    /// a dirty block tail.
    DataCopy(Cow<'a, [u8]>, DataNode, InodeNode),
    /// Rewritten data: the template, then the chunks in file order.
    Pieces(InodeNode, Vec<Chunk>),
    /// A node with a version still to assign (inode or dirent, by owner inode).
    Versioned(Item),
    /// The closing metadata node: its copy (when copyable) and the fresh alternative.
    LastMeta(Option<Cow<'a, [u8]>>, InodeNode),
}

/// An input image made ready for conversion: padded as flashed, its geometry known.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    /// The image in whole erase blocks, at least 5 (padded with 0xFF).
    pub image: Cow<'a, [u8]>,
    /// Length of the image as given.
    pub input_len: u64,
    /// The geometry it is read with (detected unless given).
    pub geometry: Geometry,
    /// What the detection said.
    pub detection: Detection,
    /// Where the detection found nodes: prefetch hints for the scan.
    hints: Vec<u32>,
}

/// The input opened as every reader opens an image ([`crate::Image`]): its geometry detected
/// unless given (an input with no node that is not erased flash is not JFFS2), padded as
/// flashed. Both constructors open images in memory, which [`crate::Image::into_parts`]
/// always takes apart.
fn open<'a>(
    opened: Result<crate::Image<'a>, crate::ImageError>,
) -> Result<Source<'a>, ConvertError> {
    let image = opened.map_err(|e| match e {
        crate::ImageError::Empty => ConvertError::Input("the input is empty".into()),
        crate::ImageError::TooLarge(len) => ConvertError::Input(format!(
            "the input is {len} bytes; JFFS2 addresses at most 4 GiB"
        )),
        e => ConvertError::Input(match e.why() {
            Some(why) => format!("not a JFFS2 image: {why}"),
            None => e.to_string(),
        }),
    })?;
    let (image, input_len, r) = image
        .into_parts()
        .ok_or_else(|| ConvertError::Internal("a mapped input".into()))?;
    Ok(Source {
        image,
        input_len: input_len as u64,
        geometry: r.geometry,
        detection: r.detection,
        hints: r.hints,
    })
}

/// What [`crate::Image`] is opened with for `erase_size` and `endian`.
fn image_options(erase_size: Option<u32>, endian: Option<Endian>) -> crate::ImageOptions {
    crate::ImageOptions {
        erase_size,
        endian,
        ..Default::default()
    }
}

impl Source<'static> {
    /// Detects the geometry of `image` (unless `erase_size` / `endian` are given) and pads
    /// it to whole erase blocks as a partition would be.
    pub fn new(
        image: Vec<u8>,
        erase_size: Option<u32>,
        endian: Option<Endian>,
    ) -> Result<Source<'static>, ConvertError> {
        too_large(image.len())?;
        open(crate::Image::from_vec_with(
            image,
            &image_options(erase_size, endian),
        ))
    }
}

/// JFFS2's offsets are 32-bit: an input beyond them is refused before it is read.
fn too_large(len: usize) -> Result<(), ConvertError> {
    let len = len as u64;
    if len > u64::from(u32::MAX) {
        return Err(ConvertError::Input(format!(
            "the input is {len} bytes; JFFS2 addresses at most 4 GiB"
        )));
    }
    Ok(())
}

impl<'a> Source<'a> {
    /// [`Source::new`] without a copy: the image is the first `len` bytes of `buf`, whose
    /// room after them receives the 0xFF padding (an error if it is too small).
    pub fn in_place(
        buf: &'a mut [u8],
        len: usize,
        erase_size: Option<u32>,
        endian: Option<Endian>,
    ) -> Result<Source<'a>, ConvertError> {
        if len > buf.len() {
            return Err(ConvertError::Internal(
                "input length beyond its buffer".into(),
            ));
        }
        too_large(len)?;
        let source = open(crate::Image::in_place(
            buf,
            len,
            &image_options(erase_size, endian),
        ))?;
        // The image copies what it has no room to pad; a conversion never copies its input.
        if matches!(source.image, Cow::Owned(_)) {
            let want = source.image.len();
            return Err(ConvertError::Input(format!(
                "no room to pad the input to {want} bytes (erase size 0x{:x})",
                source.geometry.erase_size
            )));
        }
        Ok(source)
    }

    /// Scans the image as Linux mounts it; an error if the mount would fail.
    pub fn scan(&self) -> Result<Scan, ConvertError> {
        let s = self.scan_on();
        if let Some(f) = &s.failure {
            return Err(ConvertError::Unmountable(f.to_string()));
        }
        Ok(s)
    }

    /// The mount scan, carried on past a failure ([`Scan::failure`]).
    fn scan_on(&self) -> Scan {
        // Read as a read-only mount shows it (a ROCOMPAT node does not stop a conversion).
        let opts = ScanOptions {
            read_only: true,
            ..ScanOptions::default()
        };
        crate::scan::engine::scan_hinted(&self.image, &self.geometry, &opts, &self.hints, true)
    }

    /// [`Source::scan`], then the filesystem model, which owns the scan (as
    /// [`crate::Image::mount`] builds it): what [`convert()`] converts.
    pub fn mount(&self) -> Result<Fs<'_>, ConvertError> {
        let scan = self.scan()?;
        Ok(crate::fs::Fs::from_scan(
            &self.image,
            scan,
            crate::fs::FsOptions::default(),
        ))
    }

    /// The model even where Linux would refuse the mount, as [`crate::Image::salvage`]
    /// builds it for `jffs2-dump --extract`: the scan carries on past the point the kernel
    /// stops, and a block whose summary the kernel chokes on (a BUG in `jffs2_link_node_ref`,
    /// `docs/spec/kernel-jffs2-spec.md` §3.5, §4.4) is read by a full scan. The reason Linux
    /// would refuse stays in the model's [`Scan::failure`], and [`convert()`] reports it
    /// ([`ConvertReport::unmountable`]). An error, as for [`Source::mount`], when the scan
    /// finds no inode at all: nothing can be read of it.
    pub fn salvage(&self) -> Result<Fs<'_>, ConvertError> {
        let scan = self.scan_on();
        if let Some(f) = &scan.failure {
            if scan.inodes.is_empty() {
                return Err(ConvertError::Unmountable(format!(
                    "{f}; nothing of the filesystem can be read"
                )));
            }
        }
        Ok(crate::fs::Fs::from_scan(
            &self.image,
            scan,
            crate::fs::FsOptions::default(),
        ))
    }
}

/// What the input's own layout was, for output defaults ("keep what it had").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLayout {
    /// Cleanmarker size found in the input (`None`: no block has one).
    pub cleanmarker: Option<u32>,
    /// Some block carried a summary Linux uses.
    pub summary: bool,
    /// Bytes the input's live and dirty nodes took (the kernel's used + dirty + wasted +
    /// unchecked space: what a full partition would be).
    pub used: u64,
}

/// The cleanmarkers, summaries and space of a scanned input.
pub fn input_layout(scan: &Scan) -> InputLayout {
    let cleanmarker = scan
        .refs
        .iter()
        .find(|r| r.kind == NodeKind::Cleanmarker)
        .map(|r| r.len);
    let summary = scan
        .blocks
        .iter()
        .any(|b| b.summary == crate::scan::SummaryUse::Used);
    let t = scan.totals();
    InputLayout {
        cleanmarker,
        summary,
        used: t.used + t.dirty + t.wasted + t.unchecked,
    }
}

/// The progress callback as the writer calls it (see [`ConvertConfig::progress`]).
pub(crate) type ProgressFn<'a> = &'a dyn Fn(u64, u64);

/// Converts the filesystem `fs` into `out`. See the module documentation.
///
/// Re-blocking a 64 KiB image into 128 KiB erase blocks with summaries
/// (`jffs2-convert -i IN -o OUT -e 128KiB --summary`):
///
/// ```
/// use jffs2::compress::Compressors;
/// use jffs2::convert::{convert, ConvertConfig, Source};
/// use jffs2::format::Endian;
/// use jffs2::layout::{EndPad, LayoutConfig};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let mut image = Vec::new();
/// let cfg = jffs2::mkfs::MkfsConfig { endian: Endian::Little, ..Default::default() };
/// jffs2::mkfs::build(&tree, &cfg, &mut image, &mut jffs2::mkfs::NullSink)?;
///
/// let source = Source::new(image, None, None)?; // geometry detected, padded as flashed
/// assert_eq!(source.geometry.erase_size, 64 * 1024);
/// let fs = source.mount()?; // scanned as Linux mounts it, the model built
///
/// let cfg = ConvertConfig {
///     layout: LayoutConfig {
///         endian: Endian::Little,
///         erase_size: 128 * 1024,
///         cleanmarker: Some(12),
///         summary: true,
///     },
///     page_size: 4096,
///     recompress: false,
///     compressors: Compressors::mkfs_default(),
///     pad: EndPad::None,
///     threads: 0,
///     progress: None,
/// };
/// let (out, report) = convert(&fs, &cfg, Vec::new())?;
/// assert!(report.dropped.is_empty());
/// assert_eq!((report.inodes, report.dirents), (2, 1)); // the root and motd; its entry
///
/// let again = Source::new(out, None, None)?;
/// assert_eq!(again.geometry.erase_size, 128 * 1024);
/// let fs = again.mount()?;
/// assert_eq!(fs.read_data(2, 0, 100)?, b"Welcome\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn convert<W: Write + Send>(
    fs: &Fs,
    cfg: &ConvertConfig,
    out: W,
) -> Result<(W, ConvertReport), ConvertError> {
    let progress = cfg.progress.as_ref().map(|p| p.as_fn() as ProgressFn<'_>);
    check_geometry(cfg)?;
    let threads = thread_count(cfg);
    let refused = |source: io::Error| ConvertError::Threads { threads, source };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("jffs2-convert-{i}"))
        .build()
        .map_err(|e| refused(io::Error::other(e.to_string())))?;
    let planner = Planner::new(fs, cfg);

    // Bytes go to `out` on a thread of their own; copied nodes straight from the image.
    std::thread::scope(|pipes| -> Result<(W, ConvertReport), ConvertError> {
        let w = BlockWriter::new(
            crate::pipe::Pipe::start(pipes, "jffs2-convert-write", fs.image(), out)
                .map_err(refused)?,
            cfg.layout,
        );
        let mut writer = write::Writer::new(fs, cfg, w);
        // Progress in inodes (those Linux shows, at most the live ones).
        let total = fs.live_inodes().count() as u64 + 1;
        write::write_rounds(&planner, &pool, &mut writer, progress, total, threads)?;
        if let Some(p) = progress {
            p(total, total);
        }
        let (out, mut report) = writer.finish()?;
        report.unmountable = fs.scan().failure.as_ref().map(ToString::to_string);
        Ok((out.finish()?, report))
    })
}

/// The output geometry [`convert`] accepts: an erase size of at least
/// [`MIN_ERASE`] and a multiple of 4, a page size of at least 512 and at most half of it.
fn check_geometry(cfg: &ConvertConfig) -> Result<(), ConvertError> {
    let lc = cfg.layout;
    if lc.erase_size < MIN_ERASE || lc.erase_size % 4 != 0 {
        return Err(ConvertError::Geometry(format!(
            "erase size 0x{:x}: the output needs a multiple of 4 of at least 0x{MIN_ERASE:x}",
            lc.erase_size
        )));
    }
    if cfg.page_size < 512 || cfg.page_size > lc.erase_size / 2 {
        return Err(ConvertError::Geometry(format!(
            "page size {} must be at least 512 and at most half the erase size",
            cfg.page_size
        )));
    }
    Ok(())
}

/// The compression threads of `cfg`: one per core for 0, at most the layout's maximum.
fn thread_count(cfg: &ConvertConfig) -> usize {
    if cfg.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.threads
    }
    .min(crate::layout::MAX_THREADS)
}

/// What the planning side hands the writing side: items in write order.
#[derive(Default)]
struct Batch {
    /// The first free version of each inode whose items are in `items` (given before them).
    versions: Vec<(u32, u32)>,
    items: Vec<Item>,
    /// Inodes whose items are complete with these (for the progress).
    inodes: u64,
}

/// The xattr datums planned so far (one per distinct value, new ids) and the last xref
/// sequence number.
#[derive(Default)]
struct Xattrs {
    datums: HashMap<(u8, Vec<u8>, Vec<u8>), u32>,
    xseqno: u32,
}

struct Planner<'f, 'a> {
    fs: &'f Fs<'a>,
    cfg: &'f ConvertConfig,
    max_node: u32,
}

impl<'f, 'a> Planner<'f, 'a> {
    fn new(fs: &'f Fs<'a>, cfg: &'f ConvertConfig) -> Self {
        let lc = cfg.layout;
        // Room in an empty output block, less a summary's frame and one record.
        let mut max_node = lc.erase_size - lc.cleanmarker.unwrap_or(0);
        if lc.summary {
            max_node = max_node.saturating_sub(64);
        }
        Planner { fs, cfg, max_node }
    }

    /// Adds an inode's items, then its xattrs, to `batch`.
    fn add(
        &self,
        batch: &mut Batch,
        inode: &Inode,
        items: Vec<Item>,
        x: &mut Xattrs,
        report: &mut ConvertReport,
    ) {
        batch
            .versions
            .push((inode.ino, inode.highest_version.saturating_add(1)));
        // Moved when the batch is empty: a directory of a million entries is not copied.
        if batch.items.is_empty() {
            batch.items = items;
        } else {
            batch.items.extend(items);
        }
        self.plan_xattrs(inode, &mut batch.items, x, report);
        report.dropped.extend(self.data_crc_losses(inode));
        batch.inodes += 1;
    }

    /// The items of one inode (its xattrs apart), in write order.
    fn items(&self, inode: &Inode, dents: &BTreeMap<u32, Vec<crate::fs::Dirent>>) -> Vec<Item> {
        let mut v = Vec::new();
        match inode.kind {
            InodeKind::Dir => self.plan_dir(inode, dents, &mut v),
            InodeKind::File => self.plan_file(inode, &mut v),
            _ => self.plan_special(inode, &mut v),
        }
        v
    }

    /// The attributes of `inode` in a node template (version set later).
    fn template(&self, inode: &Inode) -> InodeNode {
        InodeNode {
            ino: inode.ino,
            mode: inode.mode,
            uid: inode.uid as u16,
            gid: inode.gid as u16,
            isize: u32::try_from(inode.size).unwrap_or(u32::MAX),
            atime: inode.atime,
            mtime: inode.mtime,
            ctime: inode.ctime,
            ..Default::default()
        }
    }

    fn plan_dir(
        &self,
        inode: &Inode,
        dents: &BTreeMap<u32, Vec<crate::fs::Dirent>>,
        items: &mut Vec<Item>,
    ) {
        let kept = dents.get(&inode.ino).map(Vec::as_slice).unwrap_or(&[]);
        items.reserve_exact(kept.len() + 1);
        let newest_dent = kept.iter().map(|d| d.version).max().unwrap_or(0);
        let latest = inode.latest.and_then(|l| self.fs.scan().refs.get(l));
        match latest {
            // The directory's own node is newer than every entry kept: copied, its times
            // stay in force (§6.4).
            Some(r) if inode.version > newest_dent && self.copyable(r) => items.push(Item::Copy {
                offset: r.offset,
                data: None,
            }),
            // A faked root keeps no node, unless it has xattrs: Linux attaches an xref only
            // to an inode the scan met on flash (a node of it, or an entry in it), and an
            // empty root would have neither.
            None if inode.faked
                && inode.ino == ROOT_INO
                && self.fs.raw_xattrs(inode).is_empty() => {}
            _ => items.push(Item::Meta {
                node: Arc::new(self.template(inode)),
                payload: Vec::new(),
            }),
        }
        for de in kept {
            if self
                .fs
                .scan()
                .refs
                .get(de.node)
                .is_some_and(|r| self.copyable(r))
            {
                items.push(Item::Copy {
                    offset: de.offset,
                    data: None,
                });
            } else {
                items.push(Item::Dirent {
                    pino: inode.ino,
                    ino: de.ino,
                    dtype: de.dtype,
                    name: de.name.clone(),
                });
            }
        }
    }

    fn plan_file(&self, inode: &Inode, items: &mut Vec<Item>) {
        let page = u64::from(self.cfg.page_size);
        // The visible ranges of each node, in file order: the fragments grouped by node (a
        // stable sort keeps each node's in file order), adjacent ones merged. One flat
        // vector, not a list per node: a file of 290 000 one-byte nodes held tens of MiB of
        // small lists.
        let mut runs: Vec<(usize, u64, u64)> = inode
            .frags
            .iter()
            .map(|f| (f.node, f.start, f.end))
            .collect();
        runs.sort_by_key(|r| r.0);
        runs.dedup_by(|cur, prev| {
            let merge = cur.0 == prev.0 && prev.2 == cur.1;
            if merge {
                prev.2 = cur.2;
            }
            merge
        });
        // Each node's runs, `runs[begin..end]`, in the order of their first byte.
        let mut order: Vec<(u64, usize)> = Vec::new();
        for (k, r) in runs.iter().enumerate() {
            if k == 0 || runs.get(k - 1).is_some_and(|p| p.0 != r.0) {
                order.push((r.1, k));
            }
        }
        order.sort_unstable();
        // A file of many nodes is held planned until written: no growth slack, and no
        // doubling (the old and new buffers alive at once).
        items.reserve_exact(order.len() + 1);
        let latest = inode.latest;
        let mut latest_copied = false;
        let tmpl = Arc::new(self.template(inode));
        for (_, begin) in order {
            let Some(&(n, _, _)) = runs.get(begin) else {
                continue;
            };
            let end = runs
                .get(begin..)
                .unwrap_or(&[])
                .iter()
                .position(|r| r.0 != n)
                .map_or(runs.len(), |l| begin + l);
            let Some(dn) = inode.nodes.get(n) else {
                continue;
            };
            let r = runs.get(begin..end).unwrap_or(&[]);
            let whole = r.len() == 1 && (r[0].1, r[0].2) == (u64::from(dn.ofs), dn.end());
            let crosses = dn.size > 0 && u64::from(dn.ofs) / page != (dn.end() - 1) / page;
            let copy = whole
                && !self.cfg.recompress
                && (!crosses || dn.compr == COMPR_ZERO)
                && self
                    .fs
                    .scan()
                    .refs
                    .get(dn.node)
                    .is_some_and(|r| self.copyable(r));
            if copy {
                latest_copied |= latest == Some(dn.node);
                items.push(Item::Copy {
                    offset: dn.offset,
                    data: Some((dn.clone(), tmpl.clone())),
                });
            } else {
                items.push(Item::Data {
                    tmpl: tmpl.clone(),
                    dn: dn.clone(),
                    ranges: r.iter().map(|&(_, s, e)| (s, e)).collect(),
                });
            }
        }
        drop(runs);
        if !latest_copied {
            // The current attributes must be on the node with the highest version: the
            // metadata node is copied when it is the latest and nothing of the inode got a
            // fresh version on the way (a split or rewritten data node); otherwise a fresh
            // metadata node goes last, or Linux would drop the copy as superseded (§6.4).
            // Decided when written, so that converting a clean image again copies it.
            let meta = latest.filter(|l| !inode.nodes.iter().any(|d| d.node == *l));
            let copy = meta
                .and_then(|l| self.fs.scan().refs.get(l))
                .filter(|r| self.copyable(r))
                .map(|r| r.offset);
            items.push(Item::LastMeta { copy, node: tmpl });
        }
    }

    /// Symlinks, devices, FIFOs, sockets: the latest node, copied when it can be.
    fn plan_special(&self, inode: &Inode, items: &mut Vec<Item>) {
        let latest = inode.latest.and_then(|l| self.fs.scan().refs.get(l));
        if let Some(r) = latest {
            if self.copyable(r) {
                items.push(Item::Copy {
                    offset: r.offset,
                    data: None,
                });
                return;
            }
        }
        let mut node = self.template(inode);
        let payload = match inode.kind {
            InodeKind::Symlink => inode.target.clone().unwrap_or_default(),
            InodeKind::Char | InodeKind::Block => {
                let (major, minor) = inode.rdev.unwrap_or((0, 0));
                encode_dev(self.cfg.layout.endian, major, minor)
            }
            _ => Vec::new(),
        };
        node.dsize = payload.len() as u32;
        node.compr = COMPR_NONE;
        if inode.kind == InodeKind::Symlink {
            node.isize = payload.len() as u32;
        }
        items.push(Item::Meta {
            node: Arc::new(node),
            payload,
        });
    }

    fn plan_xattrs(
        &self,
        inode: &Inode,
        items: &mut Vec<Item>,
        x: &mut Xattrs,
        report: &mut ConvertReport,
    ) {
        let Xattrs { datums, xseqno } = x;
        let from = self.fs.scan().geometry.endian;
        let to = self.cfg.layout.endian;
        for x in self.fs.raw_xattrs(inode) {
            let value =
                if from != to && matches!(x.xprefix, xprefix::ACL_ACCESS | xprefix::ACL_DEFAULT) {
                    swap_acl(&x.value, from)
                } else {
                    x.value
                };
            let key = (x.xprefix, x.name, value);
            let xid = match datums.get(&key) {
                Some(&xid) => xid,
                None => {
                    let xid = datums.len() as u32 + 1;
                    datums.insert(key.clone(), xid);
                    items.push(Item::Datum {
                        xid,
                        prefix: key.0,
                        name: key.1,
                        value: key.2,
                    });
                    report.xattrs += 1;
                    xid
                }
            };
            *xseqno = xseqno.saturating_add(2);
            items.push(Item::Xref {
                ino: inode.ino,
                xid,
                xseqno: *xseqno,
            });
            report.xattrs += 1;
        }
    }

    /// Whether the node of `r` can be copied: whole in the image, ACCURATE, header CRC
    /// right, small enough for an output block. The scan checked the first three of every
    /// node it read (§2: a node without ACCURATE is obsolete, never live); a node known from
    /// a summary record only is checked here.
    fn copyable(&self, r: &NodeRef) -> bool {
        if !r.from_summary {
            return r.len <= self.max_node;
        }
        let img = self.fs.image();
        let e = self.fs.scan().geometry.endian;
        let Some(b) = img.get(r.offset as usize..) else {
            return false;
        };
        let Ok(h) = NodeHeader::decode(b, e, u64::from(r.offset)) else {
            return false;
        };
        h.crc_ok(e)
            && h.nodetype & NODE_ACCURATE != 0
            && h.totlen <= self.max_node
            && (h.totlen as usize) <= b.len()
    }
}

struct Worker<'f, 'a> {
    fs: &'f Fs<'a>,
    cfg: &'f ConvertConfig,
}

impl<'a> Worker<'_, 'a> {
    fn ready(&self, it: &Item) -> Ready<'a> {
        let to = self.cfg.layout.endian;
        match it {
            Item::Copy {
                offset, data: None, ..
            } => {
                // The record the writer will make of these very bytes (a dirent's name may
                // hold NULs the model truncates, or start with one: no record at all).
                let bytes = self.copy(*offset);
                let rec = record_for(&bytes, to, 0).map_or(0, |r| r.size() as u32);
                Ready::Node(bytes, rec)
            }
            Item::Copy {
                offset,
                data: Some((dn, tmpl)),
                ..
            } => Ready::DataCopy(self.copy(*offset), dn.clone(), InodeNode::clone(tmpl)),
            Item::Data { tmpl, dn, ranges } => self.data(tmpl, dn, ranges),
            Item::Meta { node, payload } => Ready::Versioned(Item::Meta {
                node: node.clone(),
                payload: payload.clone(),
            }),
            Item::LastMeta { copy, node } => {
                Ready::LastMeta(copy.map(|o| self.copy(o)), InodeNode::clone(node))
            }
            Item::Dirent {
                pino,
                ino,
                dtype,
                name,
            } => Ready::Versioned(Item::Dirent {
                pino: *pino,
                ino: *ino,
                dtype: *dtype,
                name: name.clone(),
            }),
            Item::Datum {
                xid,
                prefix,
                name,
                value,
            } => {
                let mut b = Vec::with_capacity(XATTR_SIZE + name.len() + 1 + value.len());
                XattrNode {
                    xid: *xid,
                    version: 1,
                    xprefix: *prefix,
                    ..Default::default()
                }
                .encode(to, name, value, &mut b);
                Ready::Node(Cow::Owned(b), record_size(NodeKind::Xattr, 0))
            }
            Item::Xref { ino, xid, xseqno } => {
                let mut b = Vec::with_capacity(XREF_SIZE);
                XrefNode {
                    ino: *ino,
                    xid: *xid,
                    xseqno: *xseqno,
                    ..Default::default()
                }
                .encode(to, &mut b);
                Ready::Node(Cow::Owned(b), record_size(NodeKind::Xref, 0))
            }
        }
    }

    /// Whether making `it` ready is work (a byte swap, decompression, compression) worth
    /// a thread: everything but copies in the input's byte order and small fresh nodes.
    fn heavy(&self, it: &Item) -> bool {
        match it {
            Item::Copy { .. } | Item::LastMeta { .. } => {
                self.fs.scan().geometry.endian != self.cfg.layout.endian
            }
            Item::Data { .. } => true,
            Item::Meta { .. } | Item::Datum { .. } | Item::Dirent { .. } | Item::Xref { .. } => {
                false
            }
        }
    }

    /// The node at `offset`, in the output byte order (the planner checked it is whole):
    /// borrowed from the image when the byte order stays.
    fn copy(&self, offset: u32) -> Cow<'a, [u8]> {
        let img: &'a [u8] = self.fs.image();
        let from = self.fs.scan().geometry.endian;
        let to = self.cfg.layout.endian;
        // Offsets come from nodes the scan and readinode read whole; an empty copy (nothing
        // written) is the defensive answer to anything else.
        let b = img.get(offset as usize..).unwrap_or(&[]);
        let totlen = from.get_u32(b, hdr::TOTLEN).unwrap_or(0) as usize;
        let node = &b[..totlen.min(b.len())];
        if from == to {
            Cow::Borrowed(node)
        } else {
            Cow::Owned(swap_node(node, from).unwrap_or_else(|| node.to_vec()))
        }
    }

    /// The visible ranges of a data node, split at page boundaries and compressed (the
    /// writer splits further at block ends).
    fn data(&self, tmpl: &InodeNode, dn: &DataNode, ranges: &[(u64, u64)]) -> Ready<'a> {
        let page = u64::from(self.cfg.page_size);
        let mut chunks = Vec::new();
        if dn.compr == COMPR_ZERO {
            // A hole stays a hole: one ZERO node per visible range.
            for &(s, e) in ranges {
                chunks.push(Chunk {
                    ofs: s as u32,
                    len: (e - s) as u32,
                    data: None,
                    spec: None,
                    spec_crc: 0,
                });
            }
            return Ready::Pieces(tmpl.clone(), chunks);
        }
        let data = match self.fs.node_data(dn) {
            Ok(NodeData::Bytes(b)) => b,
            Ok(NodeData::Zeros(n)) => vec![0; n as usize],
            // Linux cannot read this node's data either: keep it as it is.
            Err(_) => return Ready::Node(self.copy(dn.offset), INODE_REC),
        };
        for &(s, e) in ranges {
            let mut at = s;
            while at < e {
                let end = ((at / page + 1) * page).min(e);
                let lo = (at - u64::from(dn.ofs)) as usize;
                let hi = (end - u64::from(dn.ofs)) as usize;
                let Some(bytes) = data.get(lo..hi) else { break };
                let spec = self.cfg.compressors.compress(bytes, bytes.len());
                // Its data CRC too, here on the pool rather than on the writing thread.
                let spec_crc = crate::crc::crc32(&spec.data);
                chunks.push(Chunk {
                    ofs: at as u32,
                    len: bytes.len() as u32,
                    data: Some(bytes.to_vec()),
                    spec: Some(spec),
                    spec_crc,
                });
                at = end;
            }
        }
        Ready::Pieces(tmpl.clone(), chunks)
    }
}
