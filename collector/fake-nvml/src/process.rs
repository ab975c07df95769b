//! Processes on a GPU: the compute processes and their memory, and the per-process utilization
//! samples taken since a timestamp.

use crate::state::{self, NOT_SUPPORTED, Ret};
use crate::{put, put_array};
use nvml_wrapper_sys::bindings as nv;
use std::ffi::{c_uint, c_ulonglong};

/// nvml.h's "not available" for a process's memory: `NVML_VALUE_NOT_AVAILABLE` as unsigned.
const NOT_AVAILABLE: c_ulonglong = nv::NVML_VALUE_NOT_AVAILABLE as c_ulonglong;
/// nvml.h's "no instance" for a process outside MIG.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nv::nvmlDevice_t,
    count: *mut c_uint,
    infos: *mut nv::nvmlProcessInfo_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetComputeRunningProcesses_v3", device, |t, _| {
        Ok(t.gpu()?
            .processes
            .iter()
            .map(|p| nv::nvmlProcessInfo_t {
                pid: p.pid,
                usedGpuMemory: p.used_memory_bytes.unwrap_or(NOT_AVAILABLE),
                gpuInstanceId: p.gpu_instance_id.unwrap_or(NO_INSTANCE),
                computeInstanceId: p.compute_instance_id.unwrap_or(NO_INSTANCE),
            })
            .collect())
    });
    // SAFETY: `count` is null or points to a c_uint, `infos` is null or holds `*count` elements
    // (nvml.h).
    unsafe { put_array(count, infos, r) }
}

/// The samples taken after `last_seen` (µs): `NOT_FOUND` when there are none, the two-call array
/// convention otherwise (a null buffer asks for the count).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    device: nv::nvmlDevice_t,
    utilization: *mut nv::nvmlProcessUtilizationSample_t,
    count: *mut c_uint,
    last_seen: c_ulonglong,
) -> Ret {
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    let r = state::device("nvmlDeviceGetProcessUtilization", device, |t, _| {
        let samples = t.gpu()?.process_utilization.as_ref().ok_or(NOT_SUPPORTED)?;
        Ok(samples
            .iter()
            .map(|p| nv::nvmlProcessUtilizationSample_t {
                pid: p.pid,
                timeStamp: p.timestamp_us.unwrap_or(now_us),
                smUtil: p.sm_percent,
                memUtil: p.memory_percent,
                encUtil: p.encoder_percent,
                decUtil: p.decoder_percent,
            })
            .filter(|s| s.timeStamp > last_seen)
            .collect::<Vec<_>>())
    });
    match r {
        Ok(samples) if samples.is_empty() => {
            // SAFETY: `count` is null or points to a c_uint (nvml.h).
            match unsafe { put(count, Ok(0)) } {
                crate::SUCCESS => nv::nvmlReturn_enum_NVML_ERROR_NOT_FOUND,
                code => code,
            }
        }
        // SAFETY: `count` is null or points to a c_uint, `utilization` is null or holds `*count`
        // elements (nvml.h).
        r => unsafe { put_array(count, utilization, r) },
    }
}
