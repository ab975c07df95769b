//! argus-fake-nvml owns a stand-in for NVIDIA's management library (`libnvidia-ml.so.1`): a C-ABI
//! library exporting the NVML entry points the collector's NVML backend reaches through nvml-wrapper,
//! answering from a JSON scenario (docs/format/fake-nvml-scenario.md) read at `nvmlInit` from the
//! file `ARGUS_FAKE_NVML_SCENARIO` names. With `[collector.gpu] nvml_library` pointing at it, the real
//! backend runs on machines without a GPU: readings, unsupported features, lost GPUs, hanging calls
//! and Xid events all come from the scenario.
//!
//! nvml-wrapper looks every symbol up when it opens the library and fails a call whose symbol is
//! missing with `FailedToLoadSymbol`, so what is not exported here reads as absent in the collector.
//! [`EXPORTS`] lists what is.
//!
//! Every exported function follows nvml.h's contract: each pointer argument is null or valid for the
//! call, output buffers hold as many elements as their length argument says. The `unsafe` blocks rely
//! on that contract and on nothing else.

// The exports are `unsafe extern "C"` because they write through their callers' pointers; their one
// safety condition is nvml.h's contract, stated above rather than on each function.
#![allow(clippy::missing_safety_doc)]
#![allow(non_snake_case)]

mod device;
mod events;
mod fields;
mod gpm;
mod process;
mod scenario;
mod state;

use nvml_wrapper_sys::bindings as nv;
use scenario::Scenario;
use state::{INVALID_ARGUMENT, Ret, State};
use std::ffi::{CStr, c_char, c_uint};

/// The environment variable naming the scenario file.
pub const SCENARIO_ENV: &str = "ARGUS_FAKE_NVML_SCENARIO";

/// Every function this library exports, the names a scenario's `failures` may use.
pub const EXPORTS: &[&str] = &[
    "nvmlInit_v2",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetFanSpeed_v2",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetViolationStatus",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPages_v2",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetNvLinkErrorCounter",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetProcessUtilization",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleGet",
    "nvmlGpmMetricsGet",
    "nvmlGpmSampleFree",
    "nvmlEventSetCreate",
    "nvmlDeviceRegisterEvents",
    "nvmlEventSetWait_v2",
    "nvmlEventSetFree",
];

const SUCCESS: Ret = nv::nvmlReturn_enum_NVML_SUCCESS;

// === impl library ===

/// Loads the scenario on the first call; later calls count references, as NVML does.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> Ret {
    let mut guard = state::lock();
    if let Some(s) = guard.as_mut() {
        s.refs += 1;
        return SUCCESS;
    }
    let Some(path) = std::env::var_os(SCENARIO_ENV) else {
        eprintln!("argus-fake-nvml: {SCENARIO_ENV} is not set; answering as a machine without a driver");
        return nv::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
    };
    let loaded = Scenario::load(std::path::Path::new(&path)).and_then(State::new);
    match loaded {
        Ok(s) => *guard = Some(s),
        Err(e) => {
            eprintln!("argus-fake-nvml: {e}");
            return nv::nvmlReturn_enum_NVML_ERROR_UNKNOWN;
        }
    }
    drop(guard);
    // The scenario may make initialization itself fail (no driver, no permission) or hang.
    match state::call("nvmlInit_v2", None, |_| Ok(())) {
        Ok(()) => SUCCESS,
        Err(code) => {
            *state::lock() = None;
            code
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> Ret {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> Ret {
    let mut guard = state::lock();
    let Some(s) = guard.as_mut() else { return nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED };
    s.refs -= 1;
    if s.refs == 0 {
        *guard = None;
    }
    SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: Ret) -> *const c_char {
    error_string(result).as_ptr()
}

fn error_string(result: Ret) -> &'static CStr {
    match result {
        nv::nvmlReturn_enum_NVML_SUCCESS => c"Success",
        nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED => c"Uninitialized",
        nv::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        nv::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED => c"Not Supported",
        nv::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION => c"Insufficient Permissions",
        nv::nvmlReturn_enum_NVML_ERROR_NOT_FOUND => c"Not Found",
        nv::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
        nv::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED => c"Driver Not Loaded",
        nv::nvmlReturn_enum_NVML_ERROR_TIMEOUT => c"Timeout",
        nv::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST => c"GPU is lost",
        nv::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        nv::nvmlReturn_enum_NVML_ERROR_MEMORY => c"Insufficient Memory",
        _ => c"Unknown Error",
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> Ret {
    let r = state::call("nvmlSystemGetDriverVersion", None, |s| Ok(s.scenario.driver_version.clone()));
    // SAFETY: `version` is null or holds `length` bytes (nvml.h).
    unsafe { put_str(version, length, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> Ret {
    let r = state::call("nvmlDeviceGetCount_v2", None, |s| Ok(s.scenario.devices.len() as c_uint));
    // SAFETY: `count` is null or points to a c_uint (nvml.h).
    unsafe { put(count, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, device: *mut nv::nvmlDevice_t) -> Ret {
    let r = state::call("nvmlDeviceGetHandleByIndex_v2", Some(index), |s| {
        if (index as usize) < s.scenario.devices.len() { Ok(state::gpu_handle(index)) } else { Err(INVALID_ARGUMENT) }
    });
    // SAFETY: `device` is null or points to an nvmlDevice_t (nvml.h).
    unsafe { put(device, r) }
}

// === impl output arguments ===

/// Writes a successful answer through `out`; an error is returned as it is.
///
/// # Safety
/// `out` is null or valid for writing a `T`.
unsafe fn put<T>(out: *mut T, r: Result<T, Ret>) -> Ret {
    match r {
        Err(code) => code,
        Ok(_) if out.is_null() => INVALID_ARGUMENT,
        Ok(v) => {
            // SAFETY: `out` is not null, and valid for a `T` by this function's contract.
            unsafe { out.write(v) };
            SUCCESS
        }
    }
}

/// Copies a string and its terminating NUL into a caller's buffer of `length` bytes.
///
/// # Safety
/// `buf` is null or valid for writing `length` bytes.
unsafe fn put_str(buf: *mut c_char, length: c_uint, r: Result<String, Ret>) -> Ret {
    let s = match r {
        Err(code) => return code,
        Ok(s) => s,
    };
    if buf.is_null() {
        return INVALID_ARGUMENT;
    }
    if s.len() >= length as usize {
        return nv::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: `buf` holds `length` bytes and `s.len() + 1 <= length`; a Rust string never overlaps a
    // caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, s.len());
        buf.add(s.len()).write(0);
    }
    SUCCESS
}

/// NVML's two-call array convention: `*count` holds the buffer's capacity on entry and the number
/// of items on return; a buffer too small (or null, for a size query) answers `INSUFFICIENT_SIZE`.
///
/// # Safety
/// `count` is null or valid for reading and writing a c_uint; `buf` is null or valid for writing
/// `*count` elements.
unsafe fn put_array<T: Copy>(count: *mut c_uint, buf: *mut T, r: Result<Vec<T>, Ret>) -> Ret {
    let items = match r {
        Err(code) => return code,
        Ok(items) => items,
    };
    if count.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `count` is not null, and valid by this function's contract.
    let capacity = unsafe { count.replace(items.len() as c_uint) } as usize;
    if items.is_empty() {
        return SUCCESS;
    }
    if buf.is_null() || capacity < items.len() {
        return nv::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
    }
    // SAFETY: `buf` holds `capacity >= items.len()` elements by this function's contract.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), buf, items.len()) };
    SUCCESS
}
