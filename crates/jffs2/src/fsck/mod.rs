//! fsck for JFFS2: reads and checks everything Linux checks lazily, and
//! reports each problem as a [`Finding`] with a stable code, then a [`Report`] with the verdict,
//! the space accounting, summary coverage and the mount cost.
//!
//! # How an image is checked
//!
//! 1. **Geometry**: byte order and erase size from [`crate::scan::detect()`], unless given
//!    ([`Options::endian`], [`Options::erase_size`]); a given value the image contradicts is a
//!    finding naming the likely right one. The image is checked as flashed into the smallest
//!    partition Linux mounts ([`crate::scan::as_flashed`]): padded with 0xFF to whole erase
//!    blocks, at least 5.
//! 2. **The mount scan** ([`crate::scan::scan`]) and **the build** ([`crate::fs::Fs::from_scan`]), exactly
//!    as Linux 6.1 does them, with the kernel's messages.
//! 3. **The flash walk** (`walk.rs`): every erase block, in parallel, node by node — every node
//!    on flash, live, superseded or obsolete, has its header, node, name and data CRCs checked,
//!    and every data node of a live inode is decompressed to its `dsize` through the same code
//!    that reads files ([`crate::fs::Fs::node_data`]); data no live inode shows (superseded,
//!    deleted) within a budget per erase block, past which a `decompression-budget` note
//!    counts it (blocks whose data stays within the budget even counted all dead are walked
//!    while the model is read; the others once it is, knowing which is which). Bytes that are neither nodes nor erased
//!    flash, nodes crossing a block end, padding, cleanmarkers and summaries are recorded.
//! 4. **The model** ([`crate::fs::Fs::tree`] and [`crate::fs::Fs::read_inode`] of every inode, in
//!    parallel): dirents to missing inodes, orphans, directory hard links and cycles, link
//!    counts, sizes against data, unreadable inodes, xattrs.
//! 5. **Cross-checks**: summaries against the nodes actually in their blocks, free space that
//!    Linux will write into without erasing, obsolete nodes that nothing supersedes (a flipped
//!    ACCURATE bit — the one bit of a node no CRC covers), torn nodes at the end of the written
//!    space (an interrupted write), and every message the kernel would log.
//!
//! Findings come out in a deterministic order (image-level first, then by offset, then those
//! without an offset by inode) whatever the number of threads.
//!
//! OpenWrt images are checked as OpenWrt's kernel reads them: LZMA data nodes are decompressed
//! and verified (one `lzma-compression` note says that stock Linux cannot read them), and the
//! scan ends at OpenWrt's end-of-filesystem marker (an `end-marker` note; the blocks from it on
//! are checked as the erased flash OpenWrt makes of them at mount). See `docs/FSCK.md`.
//!
//! # Severities
//!
//! * [`Severity::Error`]: Linux would refuse to mount, lose or misread data, or the image is not
//!   what any JFFS2 writer produces (corruption). Any error makes the verdict "errors found"
//!   (exit code 4).
//! * [`Severity::Warning`]: something Linux tolerates but that deserves a look (a bad node that
//!   newer data already replaces, a misplaced cleanmarker, a read-only-compatible node).
//! * [`Severity::Info`]: normal on an image Linux has written to (obsolete nodes with bad CRCs,
//!   deleted files whose nodes are still on flash), or facts about the check itself.
//!
//! Kernel log levels map to severities where a message has no finding of its own: `pr_err` →
//! Error, `pr_warn` → Warning (notices and info are not findings; see [`Code::KernelMessage`]).
//!
//! # Finding codes
//!
//! Each code is a [`Code`], defined once with its severities and meaning;
//! `docs/FSCK.md` has the same table ([`Code::table()`]) with examples.

mod check;
pub mod compare;
mod walk;

#[cfg(test)]
mod tests;

use std::fmt;

use crate::format::Endian;
use crate::image::ImageBytes;
use crate::progress::Progress;
use crate::scan::{self, BlockClass, BlockList, Detection, Geometry, KernelMsg, SpaceTotals};

pub use crate::code::{Code, Severity};
pub use compare::{CompareOptions, Difference};

/// One problem (or fact) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// What it is about: a stable kebab-case code ([`Code::as_str`]).
    pub code: Code,
    /// Byte offset of the node (or range) in the image, when there is one.
    pub offset: Option<u32>,
    /// Inode, when known.
    pub ino: Option<u32>,
    /// Path relative to the root, when known.
    pub path: Option<String>,
    /// One sentence.
    pub message: String,
}

impl Finding {
    /// A finding of `code`'s usual severity.
    pub(crate) fn new(code: Code, message: String) -> Finding {
        Finding {
            severity: code.severity(),
            code,
            offset: None,
            ino: None,
            path: None,
            message,
        }
    }

    /// Another of the severities `code` is reported with ([`Code::severities`]).
    pub(crate) fn with_severity(mut self, severity: Severity) -> Finding {
        debug_assert!(
            self.code.severities().contains(&severity),
            "{} is never {severity}",
            self.code
        );
        self.severity = severity;
        self
    }

    pub(crate) fn at(mut self, offset: u32) -> Finding {
        self.offset = Some(offset);
        self
    }

    pub(crate) fn ino(mut self, ino: Option<u32>) -> Finding {
        self.ino = ino;
        self
    }

    pub(crate) fn path(mut self, path: Option<String>) -> Finding {
        self.path = path;
        self
    }
}

impl fmt::Display for Finding {
    /// `SEVERITY code 0x%08x [ino N] [path]: sentence` (`-` when there is no offset).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.severity, self.code)?;
        match self.offset {
            Some(o) => write!(f, "0x{o:08x}")?,
            None => f.write_str("-")?,
        }
        if let Some(i) = self.ino {
            write!(f, " ino {i}")?;
        }
        // A path (and a name quoted in the sentence) may come from the image: shown escaped.
        if let Some(p) = &self.path {
            write!(f, " {}", crate::text::escape_if_needed(p.as_bytes()))?;
        }
        write!(f, ": {}", crate::text::message(&self.message))
    }
}

/// What to check and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Erase size given by the user (`-e`); detected when `None`.
    pub erase_size: Option<u32>,
    /// Byte order given by the user (`-l`/`-b`); detected when `None`.
    pub endian: Option<Endian>,
    /// Compare the image's tree with a host directory (factory verification).
    pub compare: Option<CompareOptions>,
    /// Told `(done, total)` in bytes of flash walked; called from worker threads.
    pub progress: Option<Progress>,
}

/// Why an image could not be checked at all (exit code 8).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsckError {
    /// The file is empty.
    #[error("the image is empty (0 bytes)")]
    Empty,
    /// No JFFS2 node in either byte order and not erased flash.
    #[error("not a JFFS2 image: {0}")]
    NotJffs2(String),
    /// The image is larger than JFFS2's 32-bit offsets allow.
    #[error("the image is {0} bytes; JFFS2 offsets are 32-bit (4 GiB at most)")]
    TooLarge(u64),
    /// The host directory of `--compare` could not be read.
    #[error("{0}")]
    Compare(#[from] crate::source::SourceError),
}

/// Where the geometry came from.
#[derive(Debug, Clone, PartialEq)]
pub struct GeometryInfo {
    /// What was used.
    pub geometry: Geometry,
    /// What autodetection said (always run; its evidence is what `-v` shows).
    pub detection: Detection,
    /// The erase size was given.
    pub erase_size_given: bool,
    /// The byte order was given.
    pub endian_given: bool,
}

/// Blocks by how the kernel classifies them (§3.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCounts {
    /// All erase blocks.
    pub total: u32,
    /// Erased (first 256 bytes 0xFF).
    pub empty: u32,
    /// Only a cleanmarker (free).
    pub cleanmarker: u32,
    /// Full of valid nodes.
    pub clean: u32,
    /// Valid nodes and dirty space.
    pub partly_dirty: u32,
    /// No valid node.
    pub all_dirty: u32,
}

/// The mount cost (bytes Linux reads from flash while mounting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MountCost {
    /// With the summaries as they are.
    pub with_summaries: u64,
    /// If every block were fully scanned (no summaries).
    pub full_scan: u64,
}

/// One erase block, for `-v`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDetail {
    /// Index.
    pub index: u32,
    /// Offset.
    pub offset: u32,
    /// The kernel's classification.
    pub class: BlockClass,
    /// The list the kernel files it on.
    pub list: BlockList,
    /// Bytes used.
    pub used: u32,
    /// Bytes unchecked.
    pub unchecked: u32,
    /// Bytes dirty.
    pub dirty: u32,
    /// Bytes wasted.
    pub wasted: u32,
    /// Bytes free.
    pub free: u32,
    /// `used`, `rejected: why`, or `none`.
    pub summary: String,
    /// Bytes read at mount.
    pub bytes_read: u32,
    /// Nodes on flash (any state).
    pub nodes: u32,
    /// Of which obsolete on flash.
    pub obsolete: u32,
}

/// What the tree holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeCounts {
    /// Directories (the root included).
    pub dirs: u32,
    /// Regular files.
    pub files: u32,
    /// Symbolic links.
    pub symlinks: u32,
    /// Devices, FIFOs, sockets.
    pub special: u32,
    /// Bytes of file data (sizes as Linux shows them).
    pub bytes: u64,
}

/// Node statistics of the flash walk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCounts {
    /// Nodes on flash (valid headers).
    pub nodes: u64,
    /// Of which obsolete on flash.
    pub obsolete: u64,
    /// Data nodes decompressed and verified.
    pub data_checked: u64,
    /// Bytes they decompressed to.
    pub data_bytes: u64,
}

/// The overall result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No error (warnings and notes allowed): exit 0.
    Consistent,
    /// At least one error, or a difference from `--compare`: exit 4.
    ErrorsFound,
}

impl Verdict {
    /// fsck(8) exit code: 0 or 4.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Consistent => 0,
            Verdict::ErrorsFound => 4,
        }
    }

    /// `consistent` / `errors found`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Consistent => "consistent",
            Verdict::ErrorsFound => "errors found",
        }
    }
}

/// Everything fsck found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report {
    /// The image's length as given.
    pub image_len: u64,
    /// The length checked (as flashed).
    pub flash_len: u64,
    /// Geometry and detection.
    pub geometry: GeometryInfo,
    /// The findings, in output order.
    pub findings: Vec<Finding>,
    /// Space accounting after the mount scan (`used`, `unchecked`, `dirty`, `wasted`, `free`,
    /// `bytes_read`).
    pub space: SpaceTotals,
    /// Blocks by class.
    pub blocks: BlockCounts,
    /// Blocks whose summary Linux uses.
    pub summary_blocks: u32,
    /// Blocks holding nodes (other than a cleanmarker).
    pub node_blocks: u32,
    /// Bytes read at mount with and without the summaries.
    pub mount_cost: MountCost,
    /// Whether Linux would mount it (`false`: the kernel's reason is among the findings).
    pub mount_ok: bool,
    /// Linux mounts it read-only only (a ROCOMPAT node).
    pub read_only: bool,
    /// What Linux prints mounting the image (scan, build, root inode), then reading every
    /// inode as a full listing does, in `dmesg` form after the `jffs2: ` prefix.
    pub kernel_log: Vec<KernelMsg>,
    /// Per-block details.
    pub block_details: Vec<BlockDetail>,
    /// What the tree holds.
    pub tree: TreeCounts,
    /// Node statistics.
    pub nodes: NodeCounts,
    /// Differences from the host directory (`--compare`), one per line.
    pub differences: Option<Vec<Difference>>,
    /// When every difference is what a mkfs.jffs2 option does (`-f`, `-U`, `-P`, `-q`), the
    /// `--compare` options missing, as a sentence.
    pub compare_hint: Option<String>,
}

impl Report {
    /// Findings of one severity.
    pub fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }

    /// Consistent unless there is an error or a `--compare` difference.
    pub fn verdict(&self) -> Verdict {
        let diffs = self.differences.as_ref().is_some_and(|d| !d.is_empty());
        if diffs || self.count(Severity::Error) > 0 {
            Verdict::ErrorsFound
        } else {
            Verdict::Consistent
        }
    }
}

/// The progress callback as the walk calls it (see [`Options::progress`]).
pub(crate) type ProgressFn<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Checks an image (see the module documentation): `image` is the file as given (`&[u8]`,
/// `&Vec<u8>`), or a buffer it may be padded in, as flashed, without a copy (`&mut Vec<u8>`,
/// [`ImageBytes::InPlace`]). Bytes of the image as given are never written.
///
/// A clean image, then the same image with one bit of file data flipped:
///
/// ```
/// use jffs2::fsck::{check, Options, Severity, Verdict};
///
/// let dir = tempfile::tempdir()?;
/// let mut x = 0x2545_f491_u32; // incompressible bytes: stored as they are
/// let mut next = || {
///     x ^= x << 13;
///     x ^= x >> 17;
///     x ^= x << 5;
///     x as u8
/// };
/// let noise: Vec<u8> = (0..3000).map(|_| next()).collect();
/// std::fs::write(dir.path().join("noise"), &noise)?;
/// std::fs::write(dir.path().join("readme"), b"read me\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let mut image = Vec::new();
/// let cfg = jffs2::mkfs::MkfsConfig {
///     pad: jffs2::layout::EndPad::Size(5 * 65536), // a whole 5-block partition
///     ..Default::default()
/// };
/// jffs2::mkfs::build(&tree, &cfg, &mut image, &mut jffs2::mkfs::NullSink)?;
///
/// let report = check(&image, &Options::default())?;
/// assert_eq!(report.verdict(), Verdict::Consistent);
/// assert!(report.findings.is_empty());
///
/// let data = image.windows(noise.len()).position(|w| w == noise).unwrap();
/// image[data + 100] ^= 1;
/// let report = check(&image, &Options::default())?;
/// assert_eq!((report.verdict(), report.verdict().exit_code()), (Verdict::ErrorsFound, 4));
/// let f = &report.findings[0];
/// let node = data as u32 - 68; // the data follows the 68-byte inode node header
/// assert_eq!((f.severity, f.code.as_str(), f.offset), (Severity::Error, "data-crc", Some(node)));
/// assert_eq!((f.ino, f.path.as_deref()), (Some(2), Some("noise")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check<'a>(image: impl Into<ImageBytes<'a>>, opts: &Options) -> Result<Report, FsckError> {
    let image = image.into();
    let (info, all_ff, want, hints) = prepare(image.bytes(), opts)?;
    let image_len = image.bytes().len() as u64;
    let (padded, _) = image.pad(want);
    let progress = opts.progress.as_ref().map(|p| p.as_fn() as ProgressFn<'_>);
    let flash = check::Flash {
        img: &padded,
        image_len,
        hints: &hints,
    };
    check::run(flash, info, all_ff, opts, progress)
}

/// The checks before the run: an image, of a size JFFS2 can address, that is JFFS2 or
/// erased; its geometry; whether it is all 0xFF; its length as flashed; the offsets of the
/// nodes the detection found (the scan's prefetch hints).
fn prepare(
    image: &[u8],
    opts: &Options,
) -> Result<(GeometryInfo, bool, usize, Vec<u32>), FsckError> {
    if image.is_empty() {
        return Err(FsckError::Empty);
    }
    let image_len = image.len() as u64;
    if image_len > u64::from(u32::MAX) {
        return Err(FsckError::TooLarge(image_len));
    }
    // The geometry as every reader opens an image (crate::image): detected, then what the
    // options give; an input with no node that is not erased flash is not JFFS2.
    let image_opts = crate::ImageOptions {
        erase_size: opts.erase_size,
        endian: opts.endian,
        ..Default::default()
    };
    let crate::image::Recognised {
        detection,
        geometry,
        hints,
    } = crate::image::recognise(image, &image_opts, true).map_err(|e| match e {
        crate::ImageError::Empty => FsckError::Empty,
        e => FsckError::NotJffs2(e.why().unwrap_or_else(|| e.to_string())),
    })?;
    let all_ff = image.iter().all(|&b| b == 0xFF);
    let info = GeometryInfo {
        geometry,
        detection,
        erase_size_given: opts.erase_size.is_some(),
        endian_given: opts.endian.is_some(),
    };
    // As flashed: whole erase blocks, at least 5 (the smallest partition Linux mounts).
    let want = scan::flashed_len(image.len(), geometry.erase_size.max(1));
    Ok((info, all_ff, want, hints))
}
