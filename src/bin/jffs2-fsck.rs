//! `jffs2-fsck`: checks a JFFS2 image. Installed (or symlinked) as `fsck.jffs2`, fsck(8) runs
//! it and it accepts fsck's generic options.

fn main() {
    jffs2_tools::bounded_malloc();
    std::process::exit(jffs2_tools::cli::fsck_main());
}
