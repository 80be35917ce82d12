//! `jffs2-convert`: offline garbage collection and re-layout of JFFS2 images (dirty
//! partition dumps into clean, summarised images; another erase size, byte order, page size
//! or compression), keeping exactly what Linux shows.

fn main() {
    jffs2_tools::bounded_malloc();
    std::process::exit(jffs2_tools::cli::convert_main());
}
