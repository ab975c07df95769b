//! Prints what the NVML backend reads on this machine as a fake-backend fixture (JSON on stdout), so a
//! real GPU's readings can be committed beside the published ones in collector/tests/fixtures/gpu/.
//! Run by scripts/record-nvml-fixture.sh on a machine with an NVIDIA driver.

use argus_collector::source::gpu::GpuBackend;
use argus_collector::source::gpu::nvml::Nvml;

fn main() {
    let mut backend = match Nvml::init() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("nvml: {e}");
            std::process::exit(2);
        }
    };
    // GPM readings are the difference of two samples: the first reading only takes the first sample,
    // so the second, a second later, is the one recorded.
    let read = |backend: &mut Nvml| match backend.devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("nvml: {e}");
            std::process::exit(1);
        }
    };
    read(&mut backend);
    std::thread::sleep(std::time::Duration::from_secs(1));
    let devices = read(&mut backend);
    let fixture = serde_json::json!({
        "source": "recorded with scripts/record-nvml-fixture.sh on a real machine",
        "devices": devices,
        "xid_events": backend.xid_events(),
    });
    match serde_json::to_string_pretty(&fixture) {
        Ok(s) => println!("{s}"),
        Err(e) => {
            eprintln!("json: {e}");
            std::process::exit(1);
        }
    }
}
