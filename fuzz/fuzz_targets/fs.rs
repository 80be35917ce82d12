#![no_main]
//! Fuzz target `fs`: see `jffs2::fuzz::fs`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::fs(data));
