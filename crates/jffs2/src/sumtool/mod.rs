//! `jffs2-sumtool`: adds erase-block summaries to an image without changing its filesystem
//! (`docs/spec/mtd-utils-spec.md` §5, `docs/spec/kernel-jffs2-spec.md` §4).
//!
//! # What is carried over
//!
//! The input is read the way Linux reads it at mount — with the core mount scan
//! ([`crate::scan::scan`]), in the geometry [`crate::scan::detect()`] finds — and the nodes
//! carried over are exactly those the kernel's scan links: every inode, dirent, xattr and xref
//! node (and unknown RWCOMPAT_COPY node) that is not marked obsolete on flash and whose CRCs
//! are valid, in the order the kernel meets them. Superseded but valid nodes are kept
//! (dropping them is garbage collection, not summarising; the kernel will make the same
//! choices on the output as on the input, since the order is kept). Dirt, padding, old
//! summaries, cleanmarkers, nodes with the ACCURATE bit cleared (mtd-utils' sumtool
//! "resurrects" those), nodes failing a CRC (the kernel discards them when it meets them) and
//! nodes a valid summary does not list (the kernel never sees those) are not carried over.
//! Each node is copied byte for byte: a node's bytes do not depend on where it lies.
//!
//! # How it is laid out
//!
//! With the one erase-block writer ([`crate::layout::BlockWriter`], in summary mode, through
//! [`Summarizer`]): a cleanmarker per block as the options say, then nodes while the node and
//! the summary grown by its record fit, then the summary, which runs to the block end. Every
//! block that holds nodes is summarised, the last one included; a node too large to leave room
//! for a summary (mtd-utils aborts with "out of memory" there, B-13) gets a block without one.
//! The output is then padded to at least the input's size (whole blocks of cleanmarker + 0xFF
//! with cleanmarkers, 0xFF without), so padded empty blocks are not lost (B-14) and the output
//! fits the same partition. `jffs2-mkfs --summary` writes through the same [`Summarizer`]
//! ([`SummarizingWriter`]), so it equals `jffs2-mkfs` followed by `jffs2-sumtool`.
//!
//! # OpenWrt's end-of-filesystem marker
//!
//! An input with OpenWrt's marker (`de ad c0 de` at a block start, [`crate::scan`]) is read
//! up to it, as OpenWrt's kernel reads it; what follows is not part of the filesystem and
//! is not carried over. The marker is kept: the output is padded to at least the input's
//! filesystem (the blocks before the marker), and the marker is written at the start of the
//! next erase block, where OpenWrt's kernel will erase everything from at its first mount
//! (stock Linux sees 4 bytes of dirt in an erased block, as in the input); then 0xFF up to
//! the input's size if that is larger.
//!
//! # Geometry safety
//!
//! mtd-utils' sumtool trusts `-e` (default 64 KiB): given the wrong size it drops nodes that
//! straddle its read chunks and writes summaries the kernel rejects (B-14; Yocto's
//! `sum.jffs2` calls it without `-e` on 256 KiB images). Here the erase size and byte order
//! the image was built with are detected; when the requested ones disagree, [`analyse`]
//! stops with [`SumtoolError::EraseSizeMismatch`] / [`SumtoolError::EndianMismatch`] naming
//! what was detected. With [`SumtoolConfig::force_erase_size`] the input is read in its own
//! geometry and re-blocked into the requested one (nodes are position independent), never
//! scanned in the wrong one.

mod listing;
#[cfg(test)]
mod tests;

use crate::format::pad4_64;
use crate::image::ImageBytes;
pub use crate::layout::{RelayoutStats, Summarizer, SummarizingWriter};
pub use listing::listing;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

use crate::format::{
    pad4, DirentNode, Endian, InodeNode, NodeHeader, NodeKind, XattrNode, XrefNode, DIRENT_SIZE,
    HEADER_SIZE, INODE_SIZE, MAGIC, XATTR_SIZE, XREF_SIZE,
};
use crate::scan::{
    self, as_flashed, BlockClass, Detection, DirtCause, Geometry, MountFailure, NodeRef, Scan,
    ScanOptions,
};

/// Cleanmarkers in the output (`-c`, `-n`; `docs/spec/mtd-utils-spec.md` §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanmarkers {
    /// As in the input: cleanmarkers of the input's size if it has any, none otherwise
    /// (sumtool's default).
    FromInput,
    /// Cleanmarkers of this size in every block, whatever the input has (`-c SIZE`).
    Size(u32),
    /// No cleanmarkers (`-n`).
    Off,
}

/// The options of a summarising run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumtoolConfig {
    /// Byte order of input and output (`-l` / `-b`; sumtool converts nothing).
    pub endian: Endian,
    /// Erase-block size of the output (`-e`, default 64 KiB).
    pub erase_size: u32,
    /// Cleanmarkers in the output.
    pub cleanmarkers: Cleanmarkers,
    /// Pad the output to a whole erase block (`-p`). The output always ends on a block
    /// boundary when its last block holds nodes; this matters only for the end padding of
    /// an input that does not end on one.
    pub pad: bool,
    /// Proceed when the requested erase size differs from the detected one: the input is
    /// read in its detected geometry and re-blocked (`--force-eraseblock`).
    pub force_erase_size: bool,
}

impl SumtoolConfig {
    /// sumtool's defaults: host byte order, 64 KiB, cleanmarkers as in the input, no `-p`.
    pub fn new() -> Self {
        SumtoolConfig {
            endian: Endian::host(),
            erase_size: 65536,
            cleanmarkers: Cleanmarkers::FromInput,
            pad: false,
            force_erase_size: false,
        }
    }
}

impl Default for SumtoolConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// "64 KiB" or "0x2100 bytes".
pub fn size_text(v: u32) -> String {
    if v % (1024 * 1024) == 0 && v > 0 {
        format!("{} MiB", v / (1024 * 1024))
    } else if v % 1024 == 0 {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v:#x} bytes")
    }
}

/// "high" / "fair" / "low" for a detection confidence.
fn confidence_word(c: f32) -> &'static str {
    if c >= 0.9 {
        "high"
    } else if c >= 0.5 {
        "fair"
    } else {
        "low"
    }
}

/// A fatal error: nothing is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SumtoolError {
    /// The requested erase size is not the one the image was built with.
    #[error(
        "input was built with {} erase blocks (detected with {} confidence); -e {} would \
         re-block it: pass -e {:#x}, or --force-eraseblock to proceed",
        size_text(*.detected),
        confidence_word(*.confidence),
        size_text(*.requested),
        .detected
    )]
    EraseSizeMismatch {
        /// The detected erase size.
        detected: u32,
        /// The requested one.
        requested: u32,
        /// Detection confidence (0..1).
        confidence: f32,
    },
    /// The detection could not tell the erase size, and nodes cross the requested blocks'
    /// boundaries: scanning in that geometry would lose them.
    #[error(
        "{count} node(s) or cleanmarker(s) of the input do not fit {} erase blocks (the first \
         at {first:#010x}): the input was not built with -e {}; pass the erase size it was \
         built with, or --force-eraseblock to proceed (the nodes concerned are lost)",
        size_text(*.erase_size),
        size_text(*.erase_size)
    )]
    NodesCrossBlocks {
        /// The requested erase size.
        erase_size: u32,
        /// How many nodes.
        count: usize,
        /// Offset of the first.
        first: u32,
    },
    /// The input's byte order is not the requested one.
    #[error(
        "input is {}-endian ({} nodes read {}-endian, {} {}-endian) but {}-endian was asked \
         for; sumtool does not convert byte order: pass {}",
        .detected.name(),
        .nodes_detected,
        .detected.name(),
        .nodes_requested,
        .requested.name(),
        .requested.name(),
        if *.detected == Endian::Big { "-b" } else { "-l" }
    )]
    EndianMismatch {
        /// The detected byte order.
        detected: Endian,
        /// The requested one.
        requested: Endian,
        /// Valid node headers in the detected order.
        nodes_detected: usize,
        /// Valid node headers in the requested order.
        nodes_requested: usize,
    },
    /// The input holds a node the kernel refuses (INCOMPAT) or mounts only read-only
    /// (ROCOMPAT); no summary can list it, and it cannot be dropped without changing the
    /// filesystem.
    #[error(
        "input holds a node of unknown {} type {nodetype:#06x} at {offset:#010x}; \
         summaries cannot describe it",
        if *.incompat { "incompatible" } else { "read-only compatible" }
    )]
    UnknownNode {
        /// Offset of the node.
        offset: u32,
        /// Its type.
        nodetype: u16,
        /// INCOMPAT (mount fails) rather than ROCOMPAT.
        incompat: bool,
    },
    /// A node larger than an output erase block (only when re-blocking into smaller
    /// blocks).
    #[error(
        "the node at {offset:#010x} is {totlen} bytes long: it does not fit into an erase \
         block of {} (after the cleanmarker)",
        size_text(*.erase_size)
    )]
    NodeTooLarge {
        /// Offset in the input.
        offset: u32,
        /// Its totlen.
        totlen: u32,
        /// The output erase size.
        erase_size: u32,
    },
    /// An erase size the layout cannot use.
    #[error("erase size {0:#x} is not a multiple of 4")]
    BadEraseSize(u32),
    /// A cleanmarker size that does not fit the erase size.
    #[error("cleanmarker size {cleanmarker} does not fit erase blocks of {}", size_text(*.erase_size))]
    BadCleanmarker {
        /// The cleanmarker size.
        cleanmarker: u32,
        /// The erase size.
        erase_size: u32,
    },
    /// Writing the output failed.
    #[error("write: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a node the scan linked is not carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The header is unreadable, has a bad magic or header CRC, or runs past the image.
    Header,
    /// The ACCURATE bit is cleared: obsoleted on flash (listed by a stale summary).
    Obsolete,
    /// The node CRC is wrong.
    NodeCrc,
    /// The data CRC (inode, xattr) or name CRC (dirent) is wrong.
    DataCrc,
    /// `totlen` disagrees with the node's own lengths.
    Length,
    /// A summary record's type disagrees with the node at its offset.
    WrongType,
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RejectReason::Header => "unreadable or corrupt node header",
            RejectReason::Obsolete => "node marked obsolete on flash",
            RejectReason::NodeCrc => "wrong node CRC",
            RejectReason::DataCrc => "wrong data or name CRC",
            RejectReason::Length => "node length inconsistent with its contents",
            RejectReason::WrongType => "summary record does not match the node",
        })
    }
}

/// A node the kernel's scan linked that is not carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejected {
    /// Offset in the input.
    pub offset: u32,
    /// Index in the scan's refs.
    pub node: usize,
    /// Why.
    pub reason: RejectReason,
}

/// A node carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    /// Offset in the input.
    pub offset: u32,
    /// Its totlen (the bytes copied).
    pub totlen: u32,
    /// Index in the scan's refs.
    pub node: usize,
}

/// Something the user should know; the run goes on.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The input's erase size could not be told from its contents (its data lies within
    /// one block, or there is too little of it); the requested size is assumed.
    GeometryUncertain {
        /// The size used.
        assumed: u32,
        /// What the detection guessed, with its confidence.
        guess: u32,
        /// Confidence of the guess.
        confidence: f32,
    },
    /// `--force-eraseblock`: the input is read with its own erase size and re-blocked.
    Reblocking {
        /// The input's erase size.
        from: u32,
        /// The output's.
        to: u32,
    },
    /// Corrupt or unreadable ranges the kernel also skips, by cause.
    Corrupt {
        /// Why.
        cause: DirtCause,
        /// Number of ranges.
        ranges: usize,
        /// Total bytes.
        bytes: u64,
        /// Offset of the first.
        first: u32,
    },
    /// Linked nodes failing a check the kernel makes only when reading the inode.
    Rejected {
        /// Number of nodes.
        count: usize,
        /// The first.
        first: Rejected,
    },
    /// Blocks the kernel takes as free (an erased start, or a cleanmarker followed by 0xFF)
    /// although they hold data further in: the kernel never reads it and will write over
    /// it, so it is not carried over.
    UnreadData {
        /// Offsets of the blocks.
        blocks: Vec<u32>,
    },
    /// The kernel would report a problem mounting the input (a malformed summary, ...);
    /// the blocks concerned were read fully.
    MountProblem(String),
    /// The input holds data after OpenWrt's end-of-filesystem marker: OpenWrt's kernel
    /// erases it at mount, so it is not carried over (the marker is).
    AfterEndMarker {
        /// Offset of the marker.
        marker: u32,
        /// The first byte after it that is not 0xFF.
        data: u32,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::GeometryUncertain {
                assumed,
                guess,
                confidence,
            } => write!(
                f,
                "the input's erase size cannot be told from its contents (best guess {}, \
                 confidence {:.2}); assuming -e {} is the size it was built with",
                size_text(*guess),
                confidence,
                size_text(*assumed)
            ),
            Warning::Reblocking { from, to } => write!(
                f,
                "re-blocking: the input is read with its {} erase blocks and written with {} \
                 ones; the output is for a flash with {} blocks",
                size_text(*from),
                size_text(*to),
                size_text(*to)
            ),
            Warning::Corrupt {
                cause,
                ranges,
                bytes,
                first,
            } => write!(
                f,
                "{ranges} range(s), {bytes} bytes, of {} (the first at {first:#010x}): skipped, \
                 as the kernel skips them",
                cause_text(*cause)
            ),
            Warning::Rejected { count, first } => write!(
                f,
                "{count} node(s) not carried over because the kernel would discard them (the \
                 first at {:#010x}: {})",
                first.offset, first.reason
            ),
            Warning::UnreadData { blocks } => {
                let list: Vec<String> = blocks
                    .iter()
                    .take(8)
                    .map(|b| format!("{b:#010x}"))
                    .collect();
                write!(
                    f,
                    "{} block(s) look free to the kernel but hold data it never reads ({}{}); \
                     that data is not carried over",
                    blocks.len(),
                    list.join(", "),
                    if blocks.len() > 8 { ", ..." } else { "" }
                )
            }
            Warning::MountProblem(m) => write!(f, "the kernel would report: {m}"),
            Warning::AfterEndMarker { marker, data } => write!(
                f,
                "the input holds data after OpenWrt's end-of-filesystem marker at 0x{marker:08x} \
                 (from 0x{data:08x}): OpenWrt erases it at mount; it is not carried over"
            ),
        }
    }
}

/// Plain-words description of a dirt cause.
pub fn cause_text(c: DirtCause) -> &'static str {
    match c {
        DirtCause::Erased => "erased flash between nodes",
        DirtCause::ZeroWord => "zeroed words",
        DirtCause::BadMagic => "data that is not a node header",
        DirtCause::HeaderCrc => "node headers with a wrong CRC",
        DirtCause::CrossesBlockEnd => "nodes running over the end of their erase block",
        DirtCause::AlreadySeen => "zero-length nodes",
        DirtCause::BlockTail => "block tails too short for a node",
        DirtCause::Obsolete => "obsolete nodes",
        DirtCause::NodeCrc => "nodes with a wrong node CRC",
        DirtCause::NameCrc => "dirents with a wrong name CRC",
        DirtCause::Length => "nodes with an inconsistent length",
        DirtCause::Padding => "padding nodes",
        DirtCause::CleanmarkerSize => "cleanmarkers of another size",
        DirtCause::CleanmarkerNotFirst => "cleanmarkers not at a block start",
        DirtCause::Unknown => "unknown or old summary nodes",
        DirtCause::Incompat => "incompatible nodes",
        DirtCause::SummaryGap => "space a summary does not describe",
        DirtCause::SummaryCleanmarker => "summary cleanmarker mismatches",
        DirtCause::Mixed => "mixed dirt",
    }
}

/// Dirt that a healthy image (mkfs-made or kernel-written) never has: reported as a warning.
fn is_corruption(c: DirtCause) -> bool {
    matches!(
        c,
        DirtCause::BadMagic
            | DirtCause::HeaderCrc
            | DirtCause::CrossesBlockEnd
            | DirtCause::AlreadySeen
            | DirtCause::NodeCrc
            | DirtCause::NameCrc
            | DirtCause::Length
            | DirtCause::Incompat
            | DirtCause::CleanmarkerNotFirst
    )
}

/// The input as read: geometry, the kernel's view of it, and what is carried over.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The geometry detection.
    pub detection: Detection,
    /// The geometry the input was scanned with.
    pub input_geometry: Geometry,
    /// The mount scan of the input (as flashed into whole erase blocks).
    pub scan: Scan,
    /// Length of the input in bytes.
    pub input_len: u64,
    /// How much of the caller's buffer holds the image as analysed: the padded length when
    /// it was padded in place, else [`Analysis::input_len`].
    pub held_len: usize,
    /// The nodes carried over, in order.
    pub kept: Vec<Kept>,
    /// Nodes the scan linked but that are not carried over.
    pub rejected: Vec<Rejected>,
    /// Size of the input's cleanmarkers, if it has any.
    pub input_cleanmarker: Option<u32>,
    /// Dirt of the input by cause: (ranges, bytes).
    pub dirt: BTreeMap<String, (usize, u64)>,
    /// Things to tell the user.
    pub warnings: Vec<Warning>,
    /// [`analyse_unchecked`]: `kept` and `rejected` are filled (and the warning of the
    /// rejected nodes added) by [`write_piped_checking`].
    checks_pending: bool,
}

impl Analysis {
    /// Bytes of the nodes carried over (unpadded).
    pub fn kept_bytes(&self) -> u64 {
        self.kept.iter().map(|k| u64::from(k.totlen)).sum()
    }
}

/// What [`summarize`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SumtoolReport {
    /// The layout statistics.
    pub stats: RelayoutStats,
    /// The output's cleanmarker size, if it has cleanmarkers.
    pub cleanmarker: Option<u32>,
    /// The output erase size.
    pub erase_size: u32,
}

/// Reads `image` as Linux would and decides what to carry over (see the module
/// documentation). Fails when the geometry disagrees with `cfg` or when the input holds a
/// node that cannot be summarised or dropped.
///
/// The image is scanned padded with 0xFF to the whole erase blocks (at least 5) the kernel
/// would see: a borrowed image (`&[u8]`, `&Vec<u8>`) that needs padding is copied; a buffer
/// with room for it (`&mut Vec<u8>`, [`ImageBytes::InPlace`]) is padded in place. The
/// padding is not part of the input ([`Analysis::input_len`] is the length before it);
/// [`Analysis::held_len`] says how much of the buffer to pass to [`write()`] and
/// [`listing()`].
pub fn analyse<'a>(
    image: impl Into<ImageBytes<'a>>,
    cfg: &SumtoolConfig,
) -> Result<Analysis, SumtoolError> {
    analyse_checking(image.into(), cfg, true)
}

/// [`analyse`] without the node checks (header, node and data CRCs of each node to carry
/// over): [`write_piped_checking`] makes them as it lays the nodes out, while the writing
/// thread writes what is laid out, and then completes the analysis. Until then
/// [`Analysis::kept`] and [`Analysis::rejected`] are empty; the other fields, and every
/// refusal, are those of [`analyse`].
pub fn analyse_unchecked<'a>(
    image: impl Into<ImageBytes<'a>>,
    cfg: &SumtoolConfig,
) -> Result<Analysis, SumtoolError> {
    analyse_checking(image.into(), cfg, false)
}

fn analyse_checking(
    image: ImageBytes<'_>,
    cfg: &SumtoolConfig,
    check: bool,
) -> Result<Analysis, SumtoolError> {
    let len = image.bytes().len();
    check_config(cfg)?;
    if len >= SPECULATE_FROM && cfg.erase_size <= SPECULATE_ERASE_MAX {
        analyse_speculating(image, len, cfg, check)
    } else {
        analyse_sequential(image, len, cfg, check)
    }
}

/// [`analyse`]: the detection, then the scan in the geometry decided.
fn analyse_sequential(
    image: ImageBytes<'_>,
    len: usize,
    cfg: &SumtoolConfig,
    check: bool,
) -> Result<Analysis, SumtoolError> {
    let g = input_geometry(image.bytes(), cfg)?;
    let want = crate::scan::flashed_len(len, g.geometry.erase_size);
    let (flashed, held) = image.pad(want);
    let read = read_nodes(&flashed, &g.geometry, cfg, check);
    let mut a = conclude(&flashed, len as u64, g, read, cfg)?;
    a.held_len = held;
    Ok(a)
}

/// Inputs from this size on are read with the detection on a thread of its own, beside a
/// scan in the requested geometry, which the detection nearly always confirms (the two cost
/// about the same; a smaller input is read sequentially).
const SPECULATE_FROM: usize = 4 << 20;
/// ... when the requested erase size is at most this (the largest the detection
/// considers): the padding made before the detection is then small.
const SPECULATE_ERASE_MAX: u32 = 16 << 20;

/// [`analyse`] with the detection and the scan in the requested geometry (cleanmarkers of
/// 12 bytes assumed) run side by side. When the detection settles on another geometry, that
/// scan is dropped and the input scanned again: the result is always that of the geometry
/// decided.
fn analyse_speculating(
    image: ImageBytes<'_>,
    len: usize,
    cfg: &SumtoolConfig,
    check: bool,
) -> Result<Analysis, SumtoolError> {
    use std::borrow::Cow;
    let guess = Geometry {
        endian: cfg.endian,
        erase_size: cfg.erase_size,
        cleanmarker_size: HEADER_SIZE as u32,
    };
    let (flashed, held) = image.pad(crate::scan::flashed_len(len, cfg.erase_size));
    // Padding never shortens: the input is the first `len` bytes.
    let input = flashed.get(..len).unwrap_or(&flashed);
    let (g, guessed) = scan::detect::join2(
        "sumtool-detect",
        || input_geometry(input, cfg),
        || read_nodes(&flashed, &guess, cfg, check),
    );
    let g = g?;
    let want = crate::scan::flashed_len(len, g.geometry.erase_size);
    let (view, held) = match (&flashed, flashed.get(..want)) {
        // In the caller's buffer, padded (at least) as far as wanted.
        (Cow::Borrowed(_), Some(v)) => (Cow::Borrowed(v), want),
        // A padded copy already.
        (Cow::Owned(_), Some(v)) => (Cow::Borrowed(v), held),
        (_, None) => {
            let mut v = Vec::with_capacity(want);
            v.extend_from_slice(input);
            v.resize(want, 0xFF);
            (Cow::Owned(v), len)
        }
    };
    let read = match guessed {
        read if g.geometry == guess => read,
        _ => read_nodes(&view, &g.geometry, cfg, check),
    };
    let mut a = conclude(&view, len as u64, g, read, cfg)?;
    a.held_len = held;
    Ok(a)
}

/// The geometry decision (see "Geometry safety" in the module documentation).
struct InputGeometry {
    detection: Detection,
    geometry: Geometry,
    warnings: Vec<Warning>,
}

fn input_geometry(image: &[u8], cfg: &SumtoolConfig) -> Result<InputGeometry, SumtoolError> {
    let detection = scan::detect(image);
    let mut warnings = Vec::new();
    let has_nodes = detection.confidence > 0.0;
    let dg = detection.geometry;
    if has_nodes && dg.endian != cfg.endian {
        return Err(SumtoolError::EndianMismatch {
            detected: dg.endian,
            requested: cfg.endian,
            nodes_detected: count_headers(image, dg.endian),
            nodes_requested: count_headers(image, cfg.endian),
        });
    }
    let cm_size = if dg.cleanmarker_size != 0 && has_nodes {
        dg.cleanmarker_size
    } else {
        12
    };
    let read_erase = if has_nodes && dg.erase_size != cfg.erase_size {
        erase_size_mismatch(image, cfg, &detection, cm_size, &mut warnings)?
    } else {
        cfg.erase_size
    };
    let geometry = Geometry {
        endian: cfg.endian,
        erase_size: read_erase,
        cleanmarker_size: cm_size,
    };
    Ok(InputGeometry {
        detection,
        geometry,
        warnings,
    })
}

/// Refuses an erase size or cleanmarker size no image can have.
fn check_config(cfg: &SumtoolConfig) -> Result<(), SumtoolError> {
    if cfg.erase_size % 4 != 0 || cfg.erase_size == 0 {
        return Err(SumtoolError::BadEraseSize(cfg.erase_size));
    }
    if let Cleanmarkers::Size(cm) = cfg.cleanmarkers {
        if cm < HEADER_SIZE as u32 || pad4_64(cm) >= u64::from(cfg.erase_size) {
            return Err(SumtoolError::BadCleanmarker {
                cleanmarker: cm,
                erase_size: cfg.erase_size,
            });
        }
    }
    Ok(())
}

/// The detected erase size differs from the requested one: refuses, or returns the erase
/// size to read the input with (the detected one when forced to re-block, else the
/// requested one), adding the warning that says which.
fn erase_size_mismatch(
    image: &[u8],
    cfg: &SumtoolConfig,
    detection: &Detection,
    cm_size: u32,
    warnings: &mut Vec<Warning>,
) -> Result<u32, SumtoolError> {
    let dg = detection.geometry;
    let confident = detection.confidence >= 0.5;
    let broken = contradicted_at(image, cfg, cm_size);
    // Refuse when the request is contradicted, when the detection is sure, or when it
    // is fairly sure of a size the request is a multiple of (the request's boundaries
    // are then a subset of the detected ones: every node fits, but the output would
    // be laid out for blocks the flash does not have). A fair guess that the request
    // is not a multiple of, with the request consistent, is more likely a coincidence
    // in a small image (a node happening to start where the guess puts a boundary).
    let refuse = !broken.is_empty()
        || detection.confidence >= 0.9
        || (confident && cfg.erase_size % dg.erase_size == 0);
    let uncertain = Warning::GeometryUncertain {
        assumed: cfg.erase_size,
        guess: dg.erase_size,
        confidence: detection.confidence,
    };
    if !refuse {
        warnings.push(uncertain);
    } else if !cfg.force_erase_size {
        return Err(if confident {
            SumtoolError::EraseSizeMismatch {
                detected: dg.erase_size,
                requested: cfg.erase_size,
                confidence: detection.confidence,
            }
        } else {
            SumtoolError::NodesCrossBlocks {
                erase_size: cfg.erase_size,
                count: broken.len(),
                first: broken.first().copied().unwrap_or(0),
            }
        });
    } else if confident {
        warnings.push(Warning::Reblocking {
            from: dg.erase_size,
            to: cfg.erase_size,
        });
        return Ok(dg.erase_size);
    } else {
        warnings.push(uncertain);
    }
    Ok(cfg.erase_size)
}

/// Is the requested size itself contradicted by the image? Scanned in that geometry, nodes
/// would run over block ends, or cleanmarkers would not start blocks: their offsets.
fn contradicted_at(image: &[u8], cfg: &SumtoolConfig, cm_size: u32) -> Vec<u32> {
    let probe = scan::scan(
        &as_flashed(image, cfg.erase_size),
        &Geometry {
            endian: cfg.endian,
            erase_size: cfg.erase_size,
            cleanmarker_size: cm_size,
        },
        &ScanOptions::default(),
    );
    probe
        .dirt
        .iter()
        .filter(|d| {
            matches!(
                d.cause,
                DirtCause::CrossesBlockEnd | DirtCause::CleanmarkerNotFirst
            )
        })
        .map(|d| d.offset)
        .collect()
}

/// The mount scan of the input in `geometry`, and its nodes sorted for the output.
fn read_nodes(
    flashed: &[u8],
    geometry: &Geometry,
    cfg: &SumtoolConfig,
    check: bool,
) -> (Scan, SortedNodes) {
    let scan = scan::scan(
        flashed,
        geometry,
        &ScanOptions {
            read_only: true,
            summary: true,
            xattr: true,
            end_marker: true,
        },
    );
    let nodes = sort_nodes(flashed, &scan, geometry, cfg, check);
    (scan, nodes)
}

/// The analysis of an input read by [`read_nodes`] in the geometry `g` decided.
fn conclude(
    flashed: &[u8],
    input_len: u64,
    g: InputGeometry,
    (scan, nodes): (Scan, SortedNodes),
    cfg: &SumtoolConfig,
) -> Result<Analysis, SumtoolError> {
    let InputGeometry {
        detection,
        geometry,
        mut warnings,
    } = g;
    refuse_unknown_nodes(flashed, &scan, cfg, &mut warnings)?;
    let dirt = tally_dirt(&scan, &mut warnings);
    let unread = unread_blocks(flashed, &scan);
    if !unread.is_empty() {
        warnings.push(Warning::UnreadData { blocks: unread });
    }
    after_end_marker(flashed, input_len, &scan, &mut warnings);
    let mut a = Analysis {
        detection,
        input_geometry: geometry,
        scan,
        input_len,
        held_len: flashed.len(),
        kept: nodes.kept,
        rejected: nodes.rejected,
        input_cleanmarker: nodes.input_cleanmarker,
        dirt,
        warnings,
        checks_pending: nodes.checks_pending,
    };
    // Last of the warnings: the rejected nodes (none yet when the checks are pending).
    push_rejected_warning(&mut a);
    Ok(a)
}

/// Refuses an input with a node type the kernel would not mount read-write (INCOMPAT, or
/// ROCOMPAT which forces read-only); another mount failure is a warning.
fn refuse_unknown_nodes(
    flashed: &[u8],
    scan: &Scan,
    cfg: &SumtoolConfig,
    warnings: &mut Vec<Warning>,
) -> Result<(), SumtoolError> {
    match &scan.failure {
        Some(MountFailure::Incompat { offset, nodetype }) => {
            return Err(SumtoolError::UnknownNode {
                offset: *offset,
                nodetype: *nodetype,
                incompat: true,
            })
        }
        Some(MountFailure::RoCompat { offset, nodetype }) => {
            return Err(SumtoolError::UnknownNode {
                offset: *offset,
                nodetype: *nodetype,
                incompat: false,
            })
        }
        Some(MountFailure::Other(m)) => warnings.push(Warning::MountProblem(m.clone())),
        Some(MountFailure::TooFewBlocks(_)) | None => {}
    }
    if scan.forced_read_only {
        let at = scan
            .log
            .iter()
            .find(|m| m.text.starts_with("Read-only compatible"))
            .and_then(|m| m.offset)
            .unwrap_or(0);
        let nodetype = flashed
            .get(at as usize..)
            .and_then(|b| NodeHeader::decode(b, cfg.endian, u64::from(at)).ok())
            .map_or(0, |h| h.nodetype);
        return Err(SumtoolError::UnknownNode {
            offset: at,
            nodetype,
            incompat: false,
        });
    }
    Ok(())
}

/// Dirt per cause text (ranges, bytes), and a warning per kind of corruption found.
fn tally_dirt(scan: &Scan, warnings: &mut Vec<Warning>) -> BTreeMap<String, (usize, u64)> {
    let mut dirt: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    let mut corrupt: BTreeMap<u8, (DirtCause, usize, u64, u32)> = BTreeMap::new();
    for d in &scan.dirt {
        let e = dirt.entry(cause_text(d.cause).to_string()).or_default();
        e.0 += 1;
        e.1 += u64::from(d.len);
        if is_corruption(d.cause) {
            let c = corrupt
                .entry(d.cause as u8)
                .or_insert((d.cause, 0, 0, d.offset));
            c.1 += 1;
            c.2 += u64::from(d.len);
        }
    }
    for (_, (cause, ranges, bytes, first)) in corrupt {
        warnings.push(Warning::Corrupt {
            cause,
            ranges,
            bytes,
            first,
        });
    }
    dirt
}

/// Warns of data after OpenWrt's end marker (within the input's `input_len` bytes).
fn after_end_marker(flashed: &[u8], input_len: u64, scan: &Scan, warnings: &mut Vec<Warning>) {
    let Some(m) = scan.end_marker else {
        return;
    };
    let from = m as usize + scan::END_MARKER.len();
    let to = usize::try_from(input_len).map_or(flashed.len(), |l| l.min(flashed.len()));
    if let Some(p) = flashed
        .get(from..to)
        .and_then(|t| t.iter().position(|&c| c != 0xFF))
    {
        warnings.push(Warning::AfterEndMarker {
            marker: m,
            data: (from + p) as u32,
        });
    }
}

/// The scanned nodes sorted for the output.
struct SortedNodes {
    kept: Vec<Kept>,
    rejected: Vec<Rejected>,
    /// The input's cleanmarker size, when it has cleanmarkers.
    input_cleanmarker: Option<u32>,
    /// Not checked yet: `kept` and `rejected` are empty.
    checks_pending: bool,
}

/// Sorts the scan's nodes: cleanmarkers, summaries and padding are dropped (the output gets
/// its own), the others kept when [`check_node`] accepts them (with `check`; else left to
/// [`write_piped_checking`]).
fn sort_nodes(
    flashed: &[u8],
    scan: &Scan,
    geometry: &Geometry,
    cfg: &SumtoolConfig,
    check: bool,
) -> SortedNodes {
    let mut sorted = SortedNodes {
        kept: Vec::new(),
        rejected: Vec::new(),
        input_cleanmarker: scan
            .refs
            .iter()
            .any(|r| r.kind == NodeKind::Cleanmarker)
            .then_some(geometry.cleanmarker_size),
        checks_pending: !check,
    };
    if check {
        check_all(
            flashed,
            &scan.refs,
            cfg.endian,
            &mut sorted.kept,
            &mut sorted.rejected,
        );
    }
    sorted
}

/// [`check_nodes`] of every ref, each filed among the kept or the rejected nodes.
fn check_all(
    img: &[u8],
    refs: &[NodeRef],
    e: Endian,
    kept: &mut Vec<Kept>,
    rejected: &mut Vec<Rejected>,
) {
    for (i, c) in check_nodes(img, refs, e).into_iter().enumerate() {
        if let Some(c) = c {
            sort_one(refs, i, c, kept, rejected);
        }
    }
}

/// Files ref `i`, checked, among the kept or the rejected nodes.
fn sort_one(
    refs: &[NodeRef],
    i: usize,
    checked: Result<u32, RejectReason>,
    kept: &mut Vec<Kept>,
    rejected: &mut Vec<Rejected>,
) {
    let Some(r) = refs.get(i) else {
        return;
    };
    match checked {
        Ok(totlen) => kept.push(Kept {
            offset: r.offset,
            totlen,
            node: i,
        }),
        Err(reason) => rejected.push(Rejected {
            offset: r.offset,
            node: i,
            reason,
        }),
    }
}

/// [`check_node`] of ref `i`, `None` for the kinds never carried over.
fn check_ref(
    img: &[u8],
    refs: &[NodeRef],
    i: usize,
    e: Endian,
) -> Option<Result<u32, RejectReason>> {
    let r = refs.get(i)?;
    match r.kind {
        NodeKind::Cleanmarker | NodeKind::Summary | NodeKind::Padding => None,
        kind => Some(check_node(img, r.offset, e, kind)),
    }
}

/// How many nodes ahead a walk over the input's nodes asks for a header.
const AHEAD: usize = 8;

/// Refs from this many on are checked on several threads.
const PARALLEL_CHECK_FROM: usize = 4096;

/// [`check_node`] of each ref that may be carried over (`None` for the others), split over
/// up to 4 threads for a large input: the data CRCs cost about as much as the scan.
fn check_nodes(img: &[u8], refs: &[NodeRef], e: Endian) -> Vec<Option<Result<u32, RejectReason>>> {
    // The refs from..to.
    let run = |from: usize, to: usize| {
        (from..to)
            .map(|i| {
                if let Some(ahead) = refs.get(i + AHEAD) {
                    crate::prefetch::prefetch(img, ahead.offset as usize);
                }
                check_ref(img, refs, i, e)
            })
            .collect::<Vec<_>>()
    };
    let threads = if refs.len() >= PARALLEL_CHECK_FROM {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
    } else {
        1
    };
    let chunk = refs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let others: Vec<_> = (1..threads)
            .map(|n| {
                let (from, to) = (
                    (n * chunk).min(refs.len()),
                    ((n + 1) * chunk).min(refs.len()),
                );
                let h = std::thread::Builder::new()
                    .name(format!("sumtool-check-{n}"))
                    .spawn_scoped(s, move || run(from, to));
                (from, to, h)
            })
            .collect();
        let mut all = run(0, chunk.min(refs.len()));
        for (from, to, h) in others {
            match h.map(|h| h.join()) {
                Ok(Ok(v)) => all.extend(v),
                Ok(Err(p)) => std::panic::resume_unwind(p),
                // No thread: checked here.
                Err(_) => all.extend(run(from, to)),
            }
        }
        all
    })
}

/// The output's cleanmarker size, if any, for this input and these options.
pub fn output_cleanmarker(a: &Analysis, cfg: &SumtoolConfig) -> Option<u32> {
    match cfg.cleanmarkers {
        Cleanmarkers::Off => None,
        Cleanmarkers::Size(n) => Some(n),
        Cleanmarkers::FromInput => a.input_cleanmarker,
    }
}

/// Writes the summarised image of an analysed input to `out`.
pub fn write<W: Write>(
    image: &[u8],
    a: &Analysis,
    cfg: &SumtoolConfig,
    out: W,
) -> Result<(W, SumtoolReport), SumtoolError> {
    lay_out(image, a, cfg, kept_ahead(image, a), out)
}

/// The kept nodes of `a`, each asking for the header of the one `AHEAD` of it: the summary
/// record reads the node's header, rarely in the cache by then.
fn kept_ahead<'a>(image: &'a [u8], a: &'a Analysis) -> impl Iterator<Item = Kept> + 'a {
    a.kept.iter().enumerate().map(move |(i, k)| {
        if let Some(ahead) = a.kept.get(i + AHEAD) {
            crate::prefetch::prefetch(image, ahead.offset as usize);
        }
        *k
    })
}

/// [`lay_out`] with the output's `write` system calls on a thread of their own (the nodes
/// written from `image` itself).
fn lay_out_piped<W: Write + Send>(
    image: &[u8],
    a: &Analysis,
    cfg: &SumtoolConfig,
    nodes: impl Iterator<Item = Kept>,
    out: W,
) -> Result<(W, SumtoolReport), SumtoolError> {
    std::thread::scope(|s| {
        let pipe = crate::pipe::Pipe::start(s, "sumtool-write", image, out)?;
        let (pipe, report) = lay_out(image, a, cfg, nodes, pipe)?;
        Ok((pipe.finish()?, report))
    })
}

/// [`write()`] of the nodes `nodes` gives, in order.
fn lay_out<W: Write>(
    image: &[u8],
    a: &Analysis,
    cfg: &SumtoolConfig,
    nodes: impl Iterator<Item = Kept>,
    out: W,
) -> Result<(W, SumtoolReport), SumtoolError> {
    let cleanmarker = output_cleanmarker(a, cfg);
    if let Some(cm) = cleanmarker {
        if pad4_64(cm) >= u64::from(cfg.erase_size) {
            return Err(SumtoolError::BadCleanmarker {
                cleanmarker: cm,
                erase_size: cfg.erase_size,
            });
        }
    }
    let mut s = Summarizer::new(out, cfg.endian, cfg.erase_size, cleanmarker);
    for k in nodes {
        if !s.fits(k.totlen) {
            return Err(SumtoolError::NodeTooLarge {
                offset: k.offset,
                totlen: k.totlen,
                erase_size: cfg.erase_size,
            });
        }
        let start = k.offset as usize;
        // check_node verified the node lies inside the image.
        let node =
            image
                .get(start..start + k.totlen as usize)
                .ok_or(SumtoolError::NodeTooLarge {
                    offset: k.offset,
                    totlen: k.totlen,
                    erase_size: cfg.erase_size,
                })?;
        s.push(node)?;
    }
    let es = u64::from(cfg.erase_size);
    // With OpenWrt's end marker the input's filesystem ends where the marker is.
    let marker = a.scan.end_marker.map(u64::from);
    let fs_len = marker.unwrap_or(a.input_len).min(a.input_len);
    let min_len = if cfg.pad {
        fs_len.div_ceil(es) * es
    } else {
        fs_len
    };
    let (mut out, mut stats) = s.finish(min_len)?;
    if marker.is_some() {
        // The marker at the start of the next erase block, then the input's size.
        let at = stats.size.div_ceil(es) * es;
        let end = a.input_len.max(at + scan::END_MARKER.len() as u64);
        write_ff(&mut out, at - stats.size)?;
        out.write_all(&scan::END_MARKER)?;
        write_ff(&mut out, end - at - scan::END_MARKER.len() as u64)?;
        stats.size = end;
    }
    Ok((
        out,
        SumtoolReport {
            stats,
            cleanmarker,
            erase_size: cfg.erase_size,
        },
    ))
}

/// [`write()`], the output's `write` system calls on a thread of their own, the nodes written
/// from `image` itself (no copy of them in memory): for an output that is
/// a file, about half the time of [`write()`]. The bytes written are the same.
pub fn write_piped<W: Write + Send>(
    image: &[u8],
    a: &Analysis,
    cfg: &SumtoolConfig,
    out: W,
) -> Result<(W, SumtoolReport), SumtoolError> {
    lay_out_piped(image, a, cfg, kept_ahead(image, a), out)
}

/// [`write_piped`] of an [`analyse_unchecked`] analysis: each node is checked just before
/// it is laid out, while the writing thread writes the blocks before it (the checks then
/// cost no time of their own when the writing is the longer). Completes the analysis as
/// [`analyse`] would have — every node checked, the warning of the rejected ones added last
/// — whether the writing succeeds or not; the bytes written are those of [`write_piped`].
pub fn write_piped_checking<W: Write + Send>(
    image: &[u8],
    a: &mut Analysis,
    cfg: &SumtoolConfig,
    out: W,
) -> Result<(W, SumtoolReport), SumtoolError> {
    if !a.checks_pending {
        return write_piped(image, a, cfg, out);
    }
    let want = usize::try_from(a.input_len).map_or(usize::MAX, |l| {
        scan::flashed_len(l, a.input_geometry.erase_size)
    });
    if image.len() < want {
        // Analysed on a padded copy (the caller's buffer had no room): checked on one too.
        let mut padded = image.to_vec();
        padded.resize(want, 0xFF);
        complete_checks(&padded, a, cfg.endian);
        return write_piped(image, a, cfg, out);
    }
    let (mut kept, mut rejected) = (Vec::new(), Vec::new());
    let result = {
        let refs = &a.scan.refs;
        let mut i = 0usize;
        let mut nodes = std::iter::from_fn(|| {
            while i < refs.len() {
                if let Some(ahead) = refs.get(i + AHEAD) {
                    crate::prefetch::prefetch(image, ahead.offset as usize);
                }
                let c = check_ref(image, refs, i, cfg.endian);
                i += 1;
                if let Some(c) = c {
                    sort_one(refs, i - 1, c, &mut kept, &mut rejected);
                    if c.is_ok() {
                        return kept.last().copied();
                    }
                }
            }
            None
        });
        let written = lay_out_piped(image, a, cfg, &mut nodes, out);
        // Stopped early (an error): the other nodes are checked all the same.
        nodes.for_each(drop);
        written
    };
    a.kept = kept;
    a.rejected = rejected;
    a.checks_pending = false;
    push_rejected_warning(a);
    result
}

/// Checks every node of an [`analyse_unchecked`] analysis of `flashed`.
fn complete_checks(flashed: &[u8], a: &mut Analysis, e: Endian) {
    check_all(flashed, &a.scan.refs, e, &mut a.kept, &mut a.rejected);
    a.checks_pending = false;
    push_rejected_warning(a);
}

/// The warning of the rejected nodes, if any.
fn push_rejected_warning(a: &mut Analysis) {
    if let Some(first) = a.rejected.first() {
        a.warnings.push(Warning::Rejected {
            count: a.rejected.len(),
            first: *first,
        });
    }
}

/// [`analyse`] then [`write()`].
///
/// `jffs2-sumtool -l -e 64KiB`; the result is the image `jffs2-mkfs --summary` writes:
///
/// ```
/// use jffs2::format::Endian;
/// use jffs2::mkfs::{build, MkfsConfig, NullSink};
/// use jffs2::scan::SummaryUse;
/// use jffs2::sumtool::{summarize, SumtoolConfig};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let plain_cfg = MkfsConfig { endian: Endian::Little, ..MkfsConfig::default() };
/// let mut plain = Vec::new();
/// build(&tree, &plain_cfg, &mut plain, &mut NullSink)?;
///
/// let cfg = SumtoolConfig { endian: Endian::Little, erase_size: 65536, ..SumtoolConfig::new() };
/// let (summarised, analysis, report) = summarize(&plain, &cfg, Vec::new())?;
/// assert_eq!(analysis.kept.len(), 2); // the dirent and the inode node
/// assert_eq!((report.stats.summarized_blocks, report.stats.size), (1, 65536));
///
/// let mut built = Vec::new();
/// build(&tree, &MkfsConfig { summary: true, ..plain_cfg }, &mut built, &mut NullSink)?;
/// assert_eq!(summarised, built);
///
/// // Linux reads the summary instead of the nodes.
/// let s = jffs2::Image::from_vec(summarised)?.scan();
/// assert_eq!(s.blocks[0].summary, SummaryUse::Used);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn summarize<W: Write>(
    image: &[u8],
    cfg: &SumtoolConfig,
    out: W,
) -> Result<(W, Analysis, SumtoolReport), SumtoolError> {
    let a = analyse(image, cfg)?;
    let (out, r) = write(image, &a, cfg, out)?;
    Ok((out, a, r))
}

/// Checks the node at `offset` the way the kernel does by the time it uses it (header,
/// ACCURATE bit, node CRC, then data / name CRC and lengths as `readinode.c` and the xattr
/// code do); returns its totlen.
fn check_node(img: &[u8], offset: u32, e: Endian, kind: NodeKind) -> Result<u32, RejectReason> {
    let b = img.get(offset as usize..).ok_or(RejectReason::Header)?;
    let h = NodeHeader::decode(b, e, u64::from(offset)).map_err(|_| RejectReason::Header)?;
    if h.magic != MAGIC || !h.crc_ok(e) {
        return Err(RejectReason::Header);
    }
    let b = b.get(..h.totlen as usize).ok_or(RejectReason::Header)?;
    if !h.is_accurate() {
        return Err(RejectReason::Obsolete);
    }
    let actual = NodeKind::of(h.nodetype);
    if actual != kind {
        return Err(RejectReason::WrongType);
    }
    let o = u64::from(offset);
    match kind {
        NodeKind::Inode => {
            let n = InodeNode::decode(b, e, o).map_err(|_| RejectReason::Length)?;
            if !n.node_crc_ok(b, e) {
                return Err(RejectReason::NodeCrc);
            }
            if INODE_SIZE as u64 + u64::from(n.csize) > u64::from(h.totlen) {
                return Err(RejectReason::Length);
            }
            if !n.data_crc_ok(b) {
                return Err(RejectReason::DataCrc);
            }
        }
        NodeKind::Dirent => {
            let d = DirentNode::decode(b, e, o).map_err(|_| RejectReason::Length)?;
            if !d.node_crc_ok(b, e) {
                return Err(RejectReason::NodeCrc);
            }
            let name = d.name(b).ok_or(RejectReason::Length)?;
            if DIRENT_SIZE + name.len() > h.totlen as usize {
                return Err(RejectReason::Length);
            }
            // The kernel checks the CRC of the name up to its first NUL.
            let checked = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            if crate::crc::crc32(&name[..checked]) != d.name_crc {
                return Err(RejectReason::DataCrc);
            }
        }
        NodeKind::Xattr => {
            let x = XattrNode::decode(b, e, o).map_err(|_| RejectReason::Length)?;
            if !x.node_crc_ok(b, e) {
                return Err(RejectReason::NodeCrc);
            }
            let want = pad4(XATTR_SIZE as u32 + u32::from(x.name_len) + 1 + u32::from(x.value_len));
            if want != h.totlen {
                return Err(RejectReason::Length);
            }
            if !x.data_crc_ok(b) {
                return Err(RejectReason::DataCrc);
            }
        }
        NodeKind::Xref => {
            let x = XrefNode::decode(b, e, o).map_err(|_| RejectReason::Length)?;
            if !x.node_crc_ok(b, e) {
                return Err(RejectReason::NodeCrc);
            }
            if h.totlen != XREF_SIZE as u32 {
                return Err(RejectReason::Length);
            }
        }
        // RWCOMPAT_COPY nodes: the kernel keeps them with the header CRC checked.
        _ => {
            if (h.totlen as usize) < HEADER_SIZE {
                return Err(RejectReason::Length);
            }
        }
    }
    Ok(h.totlen)
}

/// Blocks the kernel files as free or erased without reading them through (§3.2 step C and
/// the cleanmarker shortcut of D.5) although they hold non-0xFF bytes further in.
fn unread_blocks(img: &[u8], scan: &Scan) -> Vec<u32> {
    let es = scan.geometry.erase_size as usize;
    let mut v = Vec::new();
    for b in &scan.blocks {
        if !matches!(b.class, BlockClass::Empty | BlockClass::Cleanmarker)
            || scan.end_marker.is_some_and(|m| b.offset >= m)
        {
            continue;
        }
        let start = b.offset as usize;
        let Some(blk) = img.get(start..start + es) else {
            continue;
        };
        // Skip the cleanmarker (if any) and look for data after it.
        let skip = if blk.iter().take(4).all(|&c| c == 0xFF) {
            0
        } else {
            pad4_64(scan.geometry.cleanmarker_size) as usize
        };
        if blk
            .get(skip..)
            .is_some_and(|r| r.iter().any(|&c| c != 0xFF))
        {
            v.push(b.offset);
        }
    }
    v
}

/// Writes `n` bytes of 0xFF.
fn write_ff<W: Write>(out: &mut W, mut n: u64) -> std::io::Result<()> {
    let ff = [0xFFu8; 4096];
    while n > 0 {
        let k = n.min(ff.len() as u64) as usize;
        out.write_all(&ff[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// Node headers with a valid magic and header CRC in byte order `e` (a word-by-word walk
/// skipping nodes; for the endianness message).
fn count_headers(img: &[u8], e: Endian) -> usize {
    let mut n = 0;
    let mut p = 0usize;
    while p + HEADER_SIZE <= img.len() {
        let ok = NodeHeader::decode(&img[p..], e, p as u64)
            .ok()
            .filter(|h| h.magic == MAGIC && h.crc_ok(e) && h.totlen >= HEADER_SIZE as u32);
        match ok {
            Some(h) => {
                n += 1;
                p = p.saturating_add(pad4_64(h.totlen).max(4) as usize);
            }
            None => p += 4,
        }
    }
    n
}
