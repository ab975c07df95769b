#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| argus_fuzz::block_index(data));
