#![no_main]
//! Fuzz target `nodes`: see `jffs2::fuzz::nodes`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::nodes(data));
