//! The jffs2-tools command-line front ends. All JFFS2 knowledge lives in the `jffs2` core
//! crate; this crate only parses arguments and prints.

pub mod cli;

/// Keeps glibc's allocator to a single arena. By default every thread that allocates gets an
/// arena of its own (up to 8 per core), and each keeps what its thread freed: with the model
/// built on several threads, that memory is held on top of what the next phase allocates,
/// which on entry-heavy images put the tools above the memory bound of `docs/SECURITY.md`
/// (up to 57 MiB more). The threads mostly decompress and check CRCs, so sharing one arena
/// costs them little. Called first thing by the image-reading tools.
pub fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes an allocator setting; no thread has started yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
