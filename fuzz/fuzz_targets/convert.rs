#![no_main]
//! Fuzz target `convert`: see `jffs2::fuzz::convert`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::convert(data));
