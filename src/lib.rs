//! The jffs2-tools command-line front ends. All JFFS2 knowledge lives in the `jffs2` core
//! crate; this crate only parses arguments and prints.

pub mod cli;

/// Sets glibc's allocator up for the memory bound of `docs/SECURITY.md` (peak RSS ≤ 2 × image
/// + 64 MiB); called first thing by the image-reading tools. Measured on the entry-heavy
///   images of `tests/hostile_memory.rs`:
///
/// * one arena: by default every thread that allocates gets an arena of its own (up to 8 per
///   core), each keeping what its thread freed, on top of what the next phase allocates
///   (fsck `--repair` on 100 000 nested directories: 194 → 135 MiB). The threads mostly
///   decompress and check CRCs, so sharing one arena costs them little;
/// * blocks of 256 KiB and more always mapped: glibc otherwise raises that threshold as
///   large blocks are freed, after which a growing vector of records is copied within the
///   heap (old and new both resident) instead of remapped, and freed memory stays
///   (`--extract` of 200 000 names of one file: 95 → 76 MiB).
pub fn bounded_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator settings; no thread has started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}
