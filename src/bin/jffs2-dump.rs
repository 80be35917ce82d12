//! `jffs2-dump`: mtd-utils' `jffs2dump` with the same `-c` text, a correct `-e` endianness
//! conversion and no endless loops. Installed (or symlinked) as `jffs2dump` it behaves as
//! that tool; as `jefferson`, it takes the Python extractor's command line.

fn main() {
    jffs2_tools::bounded_malloc();
    std::process::exit(jffs2_tools::cli::dump_main());
}
