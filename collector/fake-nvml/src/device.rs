//! The `nvmlDevice*` readings: each answers from its device's scenario entry, `NOT_SUPPORTED` where
//! the entry leaves the reading out.

use crate::state::{self, INVALID_ARGUMENT, NOT_SUPPORTED, Ret, Target};
use crate::{SUCCESS, put, put_array, put_str};
use nvml_wrapper_sys::bindings as nv;
use std::ffi::{c_char, c_uint, c_ulonglong};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetIndex(device: nv::nvmlDevice_t, index: *mut c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetIndex", device, |t, gpu| t.gpu().map(|_| gpu));
    // SAFETY: `index` is null or points to a c_uint (nvml.h).
    unsafe { put(index, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(device: nv::nvmlDevice_t, name: *mut c_char, length: c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetName", device, |t, _| {
        Ok(match t {
            Target::Gpu(d) => d.name.clone(),
            Target::Mig(m) => m.name.clone(),
        })
    });
    // SAFETY: `name` is null or holds `length` bytes (nvml.h).
    unsafe { put_str(name, length, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(device: nv::nvmlDevice_t, uuid: *mut c_char, length: c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetUUID", device, |t, _| {
        Ok(match t {
            Target::Gpu(d) => d.uuid.clone(),
            Target::Mig(m) => m.uuid.clone(),
        })
    });
    // SAFETY: `uuid` is null or holds `length` bytes (nvml.h).
    unsafe { put_str(uuid, length, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSerial(device: nv::nvmlDevice_t, serial: *mut c_char, length: c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetSerial", device, |t, _| t.gpu()?.serial.clone().ok_or(NOT_SUPPORTED));
    // SAFETY: `serial` is null or holds `length` bytes (nvml.h).
    unsafe { put_str(serial, length, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(device: nv::nvmlDevice_t, pci: *mut nv::nvmlPciInfo_t) -> Ret {
    let r = state::device("nvmlDeviceGetPciInfo_v3", device, |t, _| {
        let d = t.gpu()?;
        // Checked when the scenario was loaded.
        let (domain, bus, dev) = crate::scenario::parse_bus_id(&d.pci_bus_id).ok_or(INVALID_ARGUMENT)?;
        let mut info = nv::nvmlPciInfo_t {
            busIdLegacy: [0; 16],
            domain,
            bus,
            device: dev,
            pciDeviceId: d.pci_device_id,
            pciSubSystemId: d.pci_subsystem_id,
            busId: [0; 32],
        };
        let legacy = format!("{:04x}:{bus:02x}:{dev:02x}.0", domain & 0xffff);
        copy_c(&mut info.busIdLegacy, &legacy);
        copy_c(&mut info.busId, &d.pci_bus_id);
        Ok(info)
    });
    // SAFETY: `pci` is null or points to an nvmlPciInfo_t (nvml.h).
    unsafe { put(pci, r) }
}

/// Copies `s` into a fixed C char array, truncated so a NUL always ends it.
fn copy_c(dst: &mut [c_char], s: &str) {
    let room = dst.len().saturating_sub(1);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(room)) {
        *d = b as c_char;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: nv::nvmlDevice_t,
    utilization: *mut nv::nvmlUtilization_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetUtilizationRates", device, |t, _| {
        let u = t.gpu()?.utilization_percent.as_ref().ok_or(NOT_SUPPORTED)?;
        Ok(nv::nvmlUtilization_t { gpu: u.gpu, memory: u.memory })
    });
    // SAFETY: `utilization` is null or points to an nvmlUtilization_t (nvml.h).
    unsafe { put(utilization, r) }
}

/// Checks the struct version the caller set, as NVML does for its versioned structs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(device: nv::nvmlDevice_t, memory: *mut nv::nvmlMemory_v2_t) -> Ret {
    const VERSION_2: c_uint = (size_of::<nv::nvmlMemory_v2_t>() | (2 << 24)) as c_uint;
    if memory.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `memory` is not null and points to an nvmlMemory_v2_t whose `version` the caller set
    // (nvml.h).
    let version = unsafe { (*memory).version };
    if version != VERSION_2 {
        return nv::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    let r = state::device("nvmlDeviceGetMemoryInfo_v2", device, |t, _| {
        let m = match t {
            Target::Gpu(d) => d.memory_bytes.as_ref(),
            Target::Mig(m) => m.memory_bytes.as_ref(),
        }
        .ok_or(NOT_SUPPORTED)?;
        Ok(nv::nvmlMemory_v2_t { version, total: m.total, reserved: m.reserved, free: m.free, used: m.used })
    });
    // SAFETY: `memory` points to an nvmlMemory_v2_t (checked not null above).
    unsafe { put(memory, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nv::nvmlDevice_t,
    sensor: nv::nvmlTemperatureSensors_t,
    temp: *mut c_uint,
) -> Ret {
    let r = state::device("nvmlDeviceGetTemperature", device, |t, _| {
        if sensor != nv::nvmlTemperatureSensors_enum_NVML_TEMPERATURE_GPU {
            return Err(INVALID_ARGUMENT);
        }
        t.gpu()?.temperature_gpu_celsius.ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `temp` is null or points to a c_uint (nvml.h).
    unsafe { put(temp, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(device: nv::nvmlDevice_t, power: *mut c_uint) -> Ret {
    let r =
        state::device("nvmlDeviceGetPowerUsage", device, |t, _| t.gpu()?.power_usage_milliwatts.ok_or(NOT_SUPPORTED));
    // SAFETY: `power` is null or points to a c_uint (nvml.h).
    unsafe { put(power, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(device: nv::nvmlDevice_t, limit: *mut c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetEnforcedPowerLimit", device, |t, _| {
        t.gpu()?.enforced_power_limit_milliwatts.ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `limit` is null or points to a c_uint (nvml.h).
    unsafe { put(limit, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    device: nv::nvmlDevice_t,
    energy: *mut c_ulonglong,
) -> Ret {
    let r = state::device("nvmlDeviceGetTotalEnergyConsumption", device, |t, _| {
        t.gpu()?.total_energy_millijoules.ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `energy` is null or points to a c_ulonglong (nvml.h).
    unsafe { put(energy, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nv::nvmlDevice_t,
    kind: nv::nvmlClockType_t,
    clock: *mut c_uint,
) -> Ret {
    let r = state::device("nvmlDeviceGetClockInfo", device, |t, _| {
        let c = &t.gpu()?.clocks_mhz;
        match kind {
            nv::nvmlClockType_enum_NVML_CLOCK_GRAPHICS => c.graphics,
            nv::nvmlClockType_enum_NVML_CLOCK_SM => c.sm,
            nv::nvmlClockType_enum_NVML_CLOCK_MEM => c.memory,
            nv::nvmlClockType_enum_NVML_CLOCK_VIDEO => c.video,
            _ => return Err(INVALID_ARGUMENT),
        }
        .ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `clock` is null or points to a c_uint (nvml.h).
    unsafe { put(clock, r) }
}

fn clocks_event_reasons(function: &str, device: nv::nvmlDevice_t) -> Result<c_ulonglong, Ret> {
    state::device(function, device, |t, _| t.gpu()?.clocks_event_reasons.ok_or(NOT_SUPPORTED))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nv::nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> Ret {
    let r = clocks_event_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", device);
    // SAFETY: `reasons` is null or points to a c_ulonglong (nvml.h).
    unsafe { put(reasons, r) }
}

/// The newer name (driver 535 on) of the call above.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nv::nvmlDevice_t,
    reasons: *mut c_ulonglong,
) -> Ret {
    let r = clocks_event_reasons("nvmlDeviceGetCurrentClocksEventReasons", device);
    // SAFETY: `reasons` is null or points to a c_ulonglong (nvml.h).
    unsafe { put(reasons, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieThroughput(
    device: nv::nvmlDevice_t,
    counter: nv::nvmlPcieUtilCounter_t,
    value: *mut c_uint,
) -> Ret {
    let r = state::device("nvmlDeviceGetPcieThroughput", device, |t, _| {
        let p = t.gpu()?.pcie_throughput_kib_per_second.as_ref().ok_or(NOT_SUPPORTED)?;
        match counter {
            nv::nvmlPcieUtilCounter_enum_NVML_PCIE_UTIL_TX_BYTES => Ok(p.tx),
            nv::nvmlPcieUtilCounter_enum_NVML_PCIE_UTIL_RX_BYTES => Ok(p.rx),
            _ => Err(INVALID_ARGUMENT),
        }
    });
    // SAFETY: `value` is null or points to a c_uint (nvml.h).
    unsafe { put(value, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieReplayCounter(device: nv::nvmlDevice_t, value: *mut c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetPcieReplayCounter", device, |t, _| {
        t.gpu()?.pcie_replay_counter.ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `value` is null or points to a c_uint (nvml.h).
    unsafe { put(value, r) }
}

/// One of the four PCIe link readings, chosen by `pick`.
///
/// # Safety
/// `out` is null or points to a c_uint.
unsafe fn pcie_link(
    function: &str,
    device: nv::nvmlDevice_t,
    pick: fn(&crate::scenario::PcieLink) -> Option<u32>,
    out: *mut c_uint,
) -> Ret {
    let r = state::device(function, device, |t, _| pick(&t.gpu()?.pcie_link).ok_or(NOT_SUPPORTED));
    // SAFETY: `out` is null or points to a c_uint (this function's contract).
    unsafe { put(out, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(device: nv::nvmlDevice_t, generation: *mut c_uint) -> Ret {
    // SAFETY: `generation` is null or points to a c_uint (nvml.h).
    unsafe { pcie_link("nvmlDeviceGetCurrPcieLinkGeneration", device, |l| l.generation, generation) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(device: nv::nvmlDevice_t, generation: *mut c_uint) -> Ret {
    // SAFETY: `generation` is null or points to a c_uint (nvml.h).
    unsafe { pcie_link("nvmlDeviceGetMaxPcieLinkGeneration", device, |l| l.generation_max, generation) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(device: nv::nvmlDevice_t, width: *mut c_uint) -> Ret {
    // SAFETY: `width` is null or points to a c_uint (nvml.h).
    unsafe { pcie_link("nvmlDeviceGetCurrPcieLinkWidth", device, |l| l.width, width) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(device: nv::nvmlDevice_t, width: *mut c_uint) -> Ret {
    // SAFETY: `width` is null or points to a c_uint (nvml.h).
    unsafe { pcie_link("nvmlDeviceGetMaxPcieLinkWidth", device, |l| l.width_max, width) }
}

/// The time the policy held the clocks back (ns), at the time of the call (µs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetViolationStatus(
    device: nv::nvmlDevice_t,
    policy: nv::nvmlPerfPolicyType_t,
    time: *mut nv::nvmlViolationTime_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetViolationStatus", device, |t, _| {
        let v = &t.gpu()?.violation_time_ns;
        let ns = match policy {
            nv::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_POWER => v.power,
            nv::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_THERMAL => v.thermal,
            p if p < nv::nvmlPerfPolicyType_enum_NVML_PERF_POLICY_COUNT => None,
            _ => return Err(INVALID_ARGUMENT),
        }
        .ok_or(NOT_SUPPORTED)?;
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        Ok(nv::nvmlViolationTime_t { referenceTime: now_us, violationTime: ns })
    });
    // SAFETY: `time` is null or points to an nvmlViolationTime_t (nvml.h).
    unsafe { put(time, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed_v2(device: nv::nvmlDevice_t, fan: c_uint, speed: *mut c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetFanSpeed_v2", device, |t, _| {
        let fans = &t.gpu()?.fan_speeds_percent;
        if fans.is_empty() {
            return Err(NOT_SUPPORTED);
        }
        fans.get(fan as usize).copied().ok_or(INVALID_ARGUMENT)
    });
    // SAFETY: `speed` is null or points to a c_uint (nvml.h).
    unsafe { put(speed, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPerformanceState(device: nv::nvmlDevice_t, state: *mut nv::nvmlPstates_t) -> Ret {
    let r =
        state::device("nvmlDeviceGetPerformanceState", device, |t, _| t.gpu()?.performance_state.ok_or(NOT_SUPPORTED));
    // SAFETY: `state` is null or points to an nvmlPstates_t (nvml.h).
    unsafe { put(state, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nv::nvmlDevice_t,
    error_type: nv::nvmlMemoryErrorType_t,
    counter_type: nv::nvmlEccCounterType_t,
    count: *mut c_ulonglong,
) -> Ret {
    let r = state::device("nvmlDeviceGetTotalEccErrors", device, |t, _| {
        let e = t.gpu()?.total_ecc_errors.as_ref().ok_or(NOT_SUPPORTED)?;
        const CORRECTED: c_uint = nv::nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_CORRECTED;
        const UNCORRECTED: c_uint = nv::nvmlMemoryErrorType_enum_NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
        const VOLATILE: c_uint = nv::nvmlEccCounterType_enum_NVML_VOLATILE_ECC;
        const AGGREGATE: c_uint = nv::nvmlEccCounterType_enum_NVML_AGGREGATE_ECC;
        match (error_type, counter_type) {
            (CORRECTED, VOLATILE) => Ok(e.corrected_volatile),
            (UNCORRECTED, VOLATILE) => Ok(e.uncorrected_volatile),
            (CORRECTED, AGGREGATE) => Ok(e.corrected_aggregate),
            (UNCORRECTED, AGGREGATE) => Ok(e.uncorrected_aggregate),
            _ => Err(INVALID_ARGUMENT),
        }
    });
    // SAFETY: `count` is null or points to a c_ulonglong (nvml.h).
    unsafe { put(count, r) }
}

fn retired_pages(
    function: &str,
    device: nv::nvmlDevice_t,
    cause: nv::nvmlPageRetirementCause_t,
) -> Result<Vec<u64>, Ret> {
    state::device(function, device, |t, _| {
        let p = t.gpu()?.retired_pages.as_ref().ok_or(NOT_SUPPORTED)?;
        match cause {
            nv::nvmlPageRetirementCause_enum_NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS => {
                Ok(p.multiple_single_bit.clone())
            }
            nv::nvmlPageRetirementCause_enum_NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR => {
                Ok(p.double_bit.clone())
            }
            _ => Err(INVALID_ARGUMENT),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages(
    device: nv::nvmlDevice_t,
    cause: nv::nvmlPageRetirementCause_t,
    count: *mut c_uint,
    addresses: *mut c_ulonglong,
) -> Ret {
    let r = retired_pages("nvmlDeviceGetRetiredPages", device, cause);
    // SAFETY: `count` is null or points to a c_uint, `addresses` is null or holds `*count` elements
    // (nvml.h).
    unsafe { put_array(count, addresses, r) }
}

/// As above, with a timestamp per page (0: the scenario has none).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPages_v2(
    device: nv::nvmlDevice_t,
    cause: nv::nvmlPageRetirementCause_t,
    count: *mut c_uint,
    addresses: *mut c_ulonglong,
    timestamps: *mut c_ulonglong,
) -> Ret {
    let r = retired_pages("nvmlDeviceGetRetiredPages_v2", device, cause);
    let zeros = r.as_ref().map(|a| vec![0; a.len()]).map_err(|e| *e);
    if count.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `count` is not null and points to a c_uint (nvml.h).
    let capacity = unsafe { *count };
    // SAFETY: `count` points to a c_uint, `addresses` is null or holds `*count` elements (nvml.h).
    let answer = unsafe { put_array(count, addresses, r) };
    if answer == SUCCESS && !timestamps.is_null() {
        // SAFETY: `count` points to a c_uint (nvml.h); it gets the capacity back for the second array.
        unsafe { count.write(capacity) };
        // SAFETY: `timestamps` holds as many elements as `addresses`, `capacity` (nvml.h).
        return unsafe { put_array(count, timestamps, zeros) };
    }
    answer
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetRetiredPagesPendingStatus(
    device: nv::nvmlDevice_t,
    pending: *mut nv::nvmlEnableState_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetRetiredPagesPendingStatus", device, |t, _| {
        let p = t.gpu()?.retired_pages.as_ref().ok_or(NOT_SUPPORTED)?;
        Ok(enable_state(p.pending))
    });
    // SAFETY: `pending` is null or points to an nvmlEnableState_t (nvml.h).
    unsafe { put(pending, r) }
}

fn enable_state(on: bool) -> nv::nvmlEnableState_t {
    if on { nv::nvmlEnableState_enum_NVML_FEATURE_ENABLED } else { nv::nvmlEnableState_enum_NVML_FEATURE_DISABLED }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: nv::nvmlDevice_t,
    link: c_uint,
    active: *mut nv::nvmlEnableState_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetNvLinkState", device, |t, _| {
        let l = t.gpu()?.nvlinks.iter().find(|l| l.link == link).ok_or(NOT_SUPPORTED)?;
        Ok(enable_state(l.active))
    });
    // SAFETY: `active` is null or points to an nvmlEnableState_t (nvml.h).
    unsafe { put(active, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkErrorCounter(
    device: nv::nvmlDevice_t,
    link: c_uint,
    counter: nv::nvmlNvLinkErrorCounter_t,
    value: *mut c_ulonglong,
) -> Ret {
    let r = state::device("nvmlDeviceGetNvLinkErrorCounter", device, |t, _| {
        let e = &t.gpu()?.nvlinks.iter().find(|l| l.link == link).ok_or(NOT_SUPPORTED)?.errors;
        match counter {
            nv::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_REPLAY => e.replay,
            nv::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_RECOVERY => e.recovery,
            nv::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_CRC_FLIT => e.crc_flit,
            nv::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_CRC_DATA => e.crc_data,
            nv::nvmlNvLinkErrorCounter_enum_NVML_NVLINK_ERROR_DL_ECC_DATA => None,
            _ => return Err(INVALID_ARGUMENT),
        }
        .ok_or(NOT_SUPPORTED)
    });
    // SAFETY: `value` is null or points to a c_ulonglong (nvml.h).
    unsafe { put(value, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: nv::nvmlDevice_t,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> Ret {
    let r = state::device("nvmlDeviceGetMigMode", device, |t, _| {
        let m = t.gpu()?.mig.as_ref().ok_or(NOT_SUPPORTED)?;
        Ok((m.current, m.pending))
    });
    let (c, p) = match r {
        Err(code) => return code,
        Ok(modes) => modes,
    };
    // SAFETY: `current` is null or points to a c_uint (nvml.h).
    match unsafe { put(current, Ok(c)) } {
        // SAFETY: `pending` is null or points to a c_uint (nvml.h).
        SUCCESS => unsafe { put(pending, Ok(p)) },
        code => code,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(device: nv::nvmlDevice_t, count: *mut c_uint) -> Ret {
    let r = state::device("nvmlDeviceGetMaxMigDeviceCount", device, |t, _| {
        Ok(t.gpu()?.mig.as_ref().ok_or(NOT_SUPPORTED)?.max_devices)
    });
    // SAFETY: `count` is null or points to a c_uint (nvml.h).
    unsafe { put(count, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: nv::nvmlDevice_t,
    index: c_uint,
    mig_device: *mut nv::nvmlDevice_t,
) -> Ret {
    let r = state::device("nvmlDeviceGetMigDeviceHandleByIndex", device, |t, gpu| {
        let m = t.gpu()?.mig.as_ref().ok_or(NOT_SUPPORTED)?;
        if (index as usize) < m.devices.len() && m.current == 1 {
            Ok(state::mig_handle(gpu, index))
        } else if index < m.max_devices {
            Err(nv::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)
        } else {
            Err(INVALID_ARGUMENT)
        }
    });
    // SAFETY: `mig_device` is null or points to an nvmlDevice_t (nvml.h).
    unsafe { put(mig_device, r) }
}
