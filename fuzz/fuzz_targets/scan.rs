#![no_main]
//! Fuzz target `scan`: see `jffs2::fuzz::scan`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::scan(data));
