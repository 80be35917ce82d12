//! A cache hint for walks that jump from node to node.
//!
//! Walking an image node by node (the scan, reading an inode) waits on memory at every
//! node: the next header is rarely in the cache, and where it lies is known only once the
//! current one is read — unless a list of offsets is at hand, as it is when an inode's
//! nodes are read. Asking for a header a few nodes ahead overlaps those waits.

/// Asks the CPU to bring the cache line holding `b[at]` closer; nothing if `at` is out of
/// `b` or on other architectures. Never changes what the program computes.
#[inline(always)]
pub(crate) fn prefetch(b: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = b.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `_mm_prefetch` is a hint: it never faults and reads nothing into the
        // program, and the pointer is to an element of `b` (SSE is part of x86_64).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(p).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, at);
}
