#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| argus_fuzz::argus_toml(data));
