//! Core JFFS2 library of jffs2-tools.
//!
//! Everything that knows about JFFS2 lives here, once: the on-flash format ([`mod@format`]),
//! the compressors ([`compress`]), the host-tree source for mkfs ([`source`]), the
//! erase-block writer ([`layout`]) and the image builder that ties them together ([`mkfs`]).
//! The crate never prints and never panics on input; fallible functions return typed errors
//! that carry byte offsets or paths.

pub mod compress;
pub mod convert;
pub mod crc;
pub mod dump;
pub mod extract;
pub mod format;
pub mod fs;
pub mod fsck;
pub mod fuzz;
pub mod layout;
pub mod mkfs;
pub mod scan;
pub mod source;
pub mod sumtool;
