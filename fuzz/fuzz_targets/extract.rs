#![no_main]
//! Fuzz target `extract`: see `jffs2::fuzz::extract`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::extract(data));
