#![no_main]
//! Fuzz target `dump`: see `jffs2::fuzz::dump`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::dump(data));
