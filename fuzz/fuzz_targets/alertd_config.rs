#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| argus_fuzz::alertd_config(data));
