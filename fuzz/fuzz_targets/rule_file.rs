#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| argus_fuzz::rule_file(data));
