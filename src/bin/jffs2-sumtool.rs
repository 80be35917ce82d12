//! `jffs2-sumtool`: a drop-in for mtd-utils' `sumtool` that summarises every erase block and
//! never loses a node. Installed (or symlinked) as `sumtool` it behaves as that tool.

fn main() {
    jffs2_tools::bounded_malloc();
    std::process::exit(jffs2_tools::cli::sumtool_main());
}
