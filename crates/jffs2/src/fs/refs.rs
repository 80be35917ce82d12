//! Helpers on the scan's node refs and kernel number formatting that the build, readinode and
//! xattr passes share. They live below those passes so that the passes depend on each other
//! one way only (build → xattr → readinode → refs; `docs/ARCHITECTURE.md`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::{DataNode, Fs};
use crate::scan::{RefState, Scan};

/// Offset of a ref (0 if the index is out of range, which a well-formed scan never gives).
pub(crate) fn ref_offset(scan: &Scan, idx: usize) -> u32 {
    scan.refs.get(idx).map_or(0, |r| r.offset)
}

/// `jffs2_mark_node_obsolete` during the build: only the in-memory state changes (BUILDING
/// is set, nothing is written, §2). Block accounting is left to the scan's counters.
pub(crate) fn mark_obsolete(scan: &mut Scan, idx: usize) {
    if let Some(r) = scan.refs.get_mut(idx) {
        r.state = RefState::Obsolete;
    }
}

/// The kernel's `%#08x`, as the scan prints it (one definition for both).
pub(crate) use crate::scan::msg::hash08x;

/// The data nodes whose data CRC is known to pass, one bit per ref: as in the kernel, where
/// a node checked once (`REF_NORMAL`) is not checked again, a CRC over the same bytes is
/// computed once however often the node is read (by every `read_inode`, then by its data
/// reads). Only passes are recorded; a failing node is checked again each time.
pub(crate) struct DataChecked(Box<[AtomicU64]>);

impl DataChecked {
    /// For `refs` refs, none checked.
    pub(crate) fn new(refs: usize) -> DataChecked {
        DataChecked((0..refs.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    fn get(&self, idx: usize) -> bool {
        self.0
            .get(idx / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (idx % 64)) != 0)
    }

    fn set(&self, idx: usize) {
        if let Some(w) = self.0.get(idx / 64) {
            w.fetch_or(1 << (idx % 64), Ordering::Relaxed);
        }
    }
}

impl Fs<'_> {
    /// The index of `dn`'s ref in the scan: `dn.node`, or for a node found some other way
    /// (the fsck walk's) the ref at its offset, if the refs' order lets a binary search find
    /// it (the scan's order is the image's, but for a summary's entries, which may be in any
    /// order: then the node is not found, and its CRC merely computed again).
    fn ref_index(&self, dn: &DataNode) -> Option<usize> {
        let refs = &self.scan.refs;
        let at = |i: usize| refs.get(i).is_some_and(|r| r.offset == dn.offset);
        if at(dn.node) {
            return Some(dn.node);
        }
        let i = refs.partition_point(|r| r.offset < dn.offset);
        at(i).then_some(i)
    }

    /// Whether the data CRC of `dn` is known to pass.
    pub(super) fn data_crc_known(&self, dn: &DataNode) -> bool {
        self.ref_index(dn).is_some_and(|i| self.data_ok.get(i))
    }

    /// Records that the data CRC of `dn` passes.
    pub(super) fn data_crc_passed(&self, dn: &DataNode) {
        if let Some(i) = self.ref_index(dn) {
            self.data_ok.set(i);
        }
    }
}
