//! The jffs2-tools command-line front ends. All JFFS2 knowledge lives in the `jffs2` core
//! crate; this crate only parses arguments and prints.

pub mod cli;
