#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| argus_fuzz::alert_intake(data));
