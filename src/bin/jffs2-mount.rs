//! `jffs2-mount`: mounts a JFFS2 image read-only through FUSE, showing what Linux shows.

fn main() {
    jffs2_tools::bounded_malloc();
    std::process::exit(jffs2_tools::cli::mount_main());
}
