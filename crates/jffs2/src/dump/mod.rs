//! What `jffs2-dump` (mtd-utils' `jffs2dump`) does with an image: the content listing
//! ([`dump_content`], `-c`), the endianness conversion ([`swap_endian`], `-e`) and the
//! peeling of NAND OOB bytes out of a raw dump ([`peel_oob`], `-d`/`-o`)
//! (`docs/spec/mtd-utils-spec.md` §6); and the views `jffs2-dump` adds ([`views`]: nodes with their CRC
//! and kernel verdicts, erase blocks, summaries, the SVG map, `--info`). The files themselves
//! are [`crate::extract`]'s.
//!
//! # A separate, simpler walk — on purpose
//!
//! This is **not** the project's mount scanner ([`crate::scan`]). jffs2dump walks the image
//! once, word by word from offset 0, ignoring erase blocks, and prints what it meets; scripts
//! and people compare that text, so [`dump_content`] reproduces jffs2dump's own walk with all
//! of its quirks, byte for byte: ACCURATE-bit handling, CRC ranges, `%d` on unsigned fields,
//! the "Wrong bitmask" once-per-run rule, nodes skipped by `PAD(totlen)` even when their CRC is
//! bad, empty-space and dirty-space counters, summary records shown with `-v`. The mount scan
//! decides what the *kernel* would see, which is a different question with different answers
//! (per-block limits, cleanmarker rules, summaries used instead of nodes). In the same way
//! [`crate::mkfs::incremental_max_ino`] mirrors `mkfs.jffs2 -i`'s walk.
//!
//! # Where jffs2dump has no defined behaviour
//!
//! jffs2dump reads a `malloc`ed copy of the image and trusts every length it finds. We print
//! exactly what it prints for as long as its behaviour is defined, and at the points where
//! it is not we do the following — each is reported as a [`Deviation`] so the caller can say
//! so (on stderr; stdout stays jffs2dump's):
//!
//! * **No progress.** A node whose header CRC is right but whose `PAD(totlen)` is 0 (totlen 0,
//!   or ≥ 0xFFFFFFFD) makes jffs2dump print the node's lines forever (or nothing forever, for a
//!   cleanmarker without `-v`). We print them once, then treat the word as a bad one: 4 bytes
//!   further on, 4 bytes of dirty space — the way jffs2dump (and the kernel) resynchronise
//!   after every other bad header.
//! * **Reads past the end.** A node near the end of the image may have fields, a name or a CRC
//!   range beyond it; jffs2dump then reads whatever follows its buffer (zeros for a large
//!   image, which glibc maps fresh; heap contents or a crash for a small one). We read zeros
//!   there — as the large-image case does — so field values and "instead of" CRCs are the
//!   ones jffs2dump prints when it survives. A CRC over a range that runs past the end costs
//!   O(log n) for the missing part, whatever `csize` claims.
//! * **Summary nodes.** A summary with `totlen` < 32 makes jffs2dump compute a CRC over a
//!   "negative" length and crash; we take the range as empty. With `-v`, a record of unknown
//!   type stops the record pointer, and jffs2dump prints "Unknown summary node!" for every
//!   remaining record, up to `sum_num` (4 billion): we print at most as many record lines as
//!   could fit in the part of the node that lies in the image (6 bytes per record).
//!
//! # The conversion
//!
//! [`swap_endian`] is deliberately *not* jffs2dump's: jffs2dump drops xref nodes, obsolete
//! nodes and nodes of unknown type (shifting everything after them), byte-swaps device
//! numbers and POSIX ACLs the wrong way (it copies them as opaque data), recomputes every
//! header and node CRC, turning corrupt nodes into "valid" ones, and — after `-c`, which sets
//! the ACCURATE bit in its buffer — writes obsolete nodes as live ones. Ours converts every node in
//! place; see the function for the rules. For the images jffs2dump handles correctly
//! (no xattrs, no device nodes, nothing obsolete or corrupt) the output is the same bytes.

mod content;
pub mod find;
mod oob;
mod swap;
pub mod views;

pub use content::{dump_content, ContentOptions, ContentReport, Deviation};
pub use swap::{swap_endian, SwapOptions};
// The node conversion itself is format's (`format::swap`); these paths stay for callers.
pub use crate::format::acl::swap_acl;
pub use crate::format::{swap_node, SwapReport};
pub use oob::peel_oob;

/// An error of the dump tools' input handling.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DumpError {
    /// `-d`/`-o`: the image is not a whole number of pages of data + OOB.
    #[error(
        "the image is {len} bytes, not a whole number of {page}-byte pages \
         ({datsize} data + {oobsize} OOB bytes each)"
    )]
    OobSizeMismatch {
        /// Image length.
        len: u64,
        /// Data bytes per page.
        datsize: usize,
        /// OOB bytes per page.
        oobsize: usize,
        /// `datsize + oobsize`.
        page: u64,
    },
    /// `-d`/`-o`: a size of zero.
    #[error("the data size and the OOB size must both be positive (got {datsize} and {oobsize})")]
    OobGeometry {
        /// Data bytes per page.
        datsize: usize,
        /// OOB bytes per page.
        oobsize: usize,
    },
}
