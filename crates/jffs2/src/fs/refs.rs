//! Helpers on the scan's node refs and kernel number formatting that the build, readinode and
//! xattr passes share. They live below those passes so that the passes depend on each other
//! one way only (build → xattr → readinode → refs; `docs/ARCHITECTURE.md`).

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
