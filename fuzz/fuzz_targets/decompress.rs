#![no_main]
//! Fuzz target `decompress`: see `jffs2::fuzz::decompress`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::decompress(data));
