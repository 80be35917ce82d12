//! The filesystem model: what Linux builds from a [`crate::scan::Scan`] at mount
//! (`build.c`, `kernel-jffs2-spec.md` §5) and what it reads for each inode (`readinode.c`,
//! `read.c`, §6), plus xattrs (§9.4).
