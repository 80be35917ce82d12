#![no_main]
//! Fuzz target `sumtool`: see `jffs2::fuzz::sumtool`.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| jffs2::fuzz::sumtool(data));
