//! GPM (GPU Performance Monitoring, Hopper and later): samples allocated and freed by the caller,
//! filled from a GPU, and metrics computed between two of them. A GPU supports GPM when its scenario
//! entry has `gpm_metrics`; the metrics answer those values whatever the two samples are, once the
//! samples are valid: both filled, from the same GPU, the first taken before the second.
//!
//! Not NVML's behaviour but a check on its callers: at most two samples per GPU may be allocated at
//! once (the one kept from the last collection and the one just taken), so a collector that leaks
//! samples sees `NVML_ERROR_MEMORY` here within a few collections instead of on a real node after days.

use crate::state::{self, GpmSample, INVALID_ARGUMENT, NOT_SUPPORTED, Ret, State};
use crate::{SUCCESS, put};
use nvml_wrapper_sys::bindings as nv;
use std::ffi::c_uint;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(
    device: nv::nvmlDevice_t,
    support: *mut nv::nvmlGpmSupport_t,
) -> Ret {
    if support.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `support` is not null and points to an nvmlGpmSupport_t whose `version` the caller set
    // (nvml.h).
    let version = unsafe { (*support).version };
    if version != nv::NVML_GPM_SUPPORT_VERSION {
        return nv::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    let r = state::device("nvmlGpmQueryDeviceSupport", device, |t, _| {
        let supported = t.gpu()?.gpm_metrics.is_some();
        Ok(nv::nvmlGpmSupport_t { version, isSupportedDevice: c_uint::from(supported) })
    });
    // SAFETY: `support` points to an nvmlGpmSupport_t (checked not null above).
    unsafe { put(support, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(sample: *mut nv::nvmlGpmSample_t) -> Ret {
    let r = state::call("nvmlGpmSampleAlloc", None, |s| {
        let live = s.samples.iter().filter(|x| x.is_some()).count();
        if live >= 2 * s.scenario.devices.len().max(1) {
            return Err(nv::nvmlReturn_enum_NVML_ERROR_MEMORY);
        }
        s.samples.push(Some(GpmSample::default()));
        Ok(state::sample_handle(s.samples.len() - 1))
    });
    // SAFETY: `sample` is null or points to an nvmlGpmSample_t (nvml.h).
    unsafe { put(sample, r) }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlGpmSampleFree(sample: nv::nvmlGpmSample_t) -> Ret {
    let index = match state::sample_index(sample) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let r = state::call("nvmlGpmSampleFree", None, |s| {
        s.samples.get_mut(index).and_then(Option::take).map(|_| ()).ok_or(INVALID_ARGUMENT)
    });
    r.err().unwrap_or(SUCCESS)
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlGpmSampleGet(device: nv::nvmlDevice_t, sample: nv::nvmlGpmSample_t) -> Ret {
    let index = match state::sample_index(sample) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let gpu = match state::decode(device) {
        Ok((gpu, None)) => gpu,
        Ok((_, Some(_))) => return NOT_SUPPORTED,
        Err(code) => return code,
    };
    let r = state::call("nvmlGpmSampleGet", Some(gpu), |s| {
        let d = s.scenario.devices.get(gpu as usize).ok_or(INVALID_ARGUMENT)?;
        if d.gpm_metrics.is_none() {
            return Err(NOT_SUPPORTED);
        }
        let order = s.samples_taken;
        let slot = s.samples.get_mut(index).and_then(Option::as_mut).ok_or(INVALID_ARGUMENT)?;
        slot.taken = Some((gpu, order));
        s.samples_taken += 1;
        Ok(())
    });
    r.err().unwrap_or(SUCCESS)
}

/// Fills each requested metric's slot: its value, or `NOT_SUPPORTED` in that slot alone. Metric
/// names and units are left null, which nvml.h allows.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMetricsGet(request: *mut nv::nvmlGpmMetricsGet_t) -> Ret {
    if request.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `request` is not null and points to an nvmlGpmMetricsGet_t the caller filled in (nvml.h);
    // nothing else refers to it during the call.
    let request = unsafe { &mut *request };
    if request.version != nv::NVML_GPM_METRICS_GET_VERSION {
        return nv::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    let count = request.numMetrics as usize;
    if count > request.metrics.len() {
        return INVALID_ARGUMENT;
    }
    let (first, second) = match (state::sample_index(request.sample1), state::sample_index(request.sample2)) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return INVALID_ARGUMENT,
    };
    let gpu = match state::lock().as_ref().map(|s| sample_gpu(s, first)) {
        Some(Ok(gpu)) => gpu,
        Some(Err(code)) => return code,
        None => return nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
    };
    let r = state::call("nvmlGpmMetricsGet", Some(gpu), |s| {
        let (gpu1, order1) = taken(s, first)?;
        let (gpu2, order2) = taken(s, second)?;
        if gpu1 != gpu2 || order1 >= order2 {
            return Err(INVALID_ARGUMENT);
        }
        let d = s.scenario.devices.get(gpu1 as usize).ok_or(INVALID_ARGUMENT)?;
        d.gpm_metrics.clone().ok_or(NOT_SUPPORTED)
    });
    let values = match r {
        Ok(v) => v,
        Err(code) => return code,
    };
    for m in &mut request.metrics[..count] {
        m.metricInfo = nv::nvmlGpmMetric_t__bindgen_ty_1 {
            shortName: std::ptr::null_mut(),
            longName: std::ptr::null_mut(),
            unit: std::ptr::null_mut(),
        };
        match values.get(&m.metricId) {
            Some(v) => (m.nvmlReturn, m.value) = (SUCCESS, *v),
            None => (m.nvmlReturn, m.value) = (NOT_SUPPORTED, 0.0),
        }
    }
    SUCCESS
}

/// The GPU a filled sample was taken on and when.
fn taken(s: &State, index: usize) -> Result<(u32, u64), Ret> {
    s.samples.get(index).copied().flatten().and_then(|x| x.taken).ok_or(INVALID_ARGUMENT)
}

/// The GPU of a filled sample, which failure rules for the metrics call are matched against.
fn sample_gpu(s: &State, index: usize) -> Result<u32, Ret> {
    taken(s, index).map(|(gpu, _)| gpu)
}
