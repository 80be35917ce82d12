//! `jffs2-mkfs`: a byte-identical, parallel drop-in for mtd-utils' `mkfs.jffs2`.
//! Installed (or symlinked) as `mkfs.jffs2` it behaves as that tool.

fn main() {
    std::process::exit(jffs2_tools::cli::mkfs_main());
}
