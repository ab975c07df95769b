//! Event sets: the scenario's Xid errors, each handed out once by every set its GPU is registered in
//! for `nvmlEventTypeXidCriticalError`. Xid is the only event type a GPU here supports.

use crate::state::{self, EventSet, INVALID_ARGUMENT, NOT_SUPPORTED, Ret};
use crate::{SUCCESS, put};
use nvml_wrapper_sys::bindings as nv;
use std::ffi::{c_uint, c_ulonglong};
use std::time::Duration;

const XID: c_ulonglong = nv::nvmlEventTypeXidCriticalError as c_ulonglong;
/// nvml.h's "no instance" for an event outside MIG.
const NO_INSTANCE: c_uint = 0xFFFF_FFFF;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut nv::nvmlEventSet_t) -> Ret {
    let r = state::call("nvmlEventSetCreate", None, |s| {
        let delivered = vec![false; s.scenario.xid_events.len()];
        s.sets.push(Some(EventSet { delivered, ..EventSet::default() }));
        Ok(state::set_handle(s.sets.len() - 1))
    });
    // SAFETY: `set` is null or points to an nvmlEventSet_t (nvml.h).
    unsafe { put(set, r) }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceRegisterEvents(
    device: nv::nvmlDevice_t,
    types: c_ulonglong,
    set: nv::nvmlEventSet_t,
) -> Ret {
    let index = match state::set_index(set) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let gpu = match state::decode(device) {
        Ok((gpu, None)) => gpu,
        Ok((_, Some(_))) => return NOT_SUPPORTED,
        Err(code) => return code,
    };
    let r = state::call("nvmlDeviceRegisterEvents", Some(gpu), |s| {
        if gpu as usize >= s.scenario.devices.len() {
            return Err(INVALID_ARGUMENT);
        }
        if types & !XID != 0 {
            return Err(NOT_SUPPORTED);
        }
        let set = s.sets.get_mut(index).and_then(Option::as_mut).ok_or(INVALID_ARGUMENT)?;
        *set.registered.entry(gpu).or_default() |= types;
        Ok(())
    });
    r.err().unwrap_or(SUCCESS)
}

/// The next Xid for this set, or `TIMEOUT` once `timeout_ms` has passed with none.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nv::nvmlEventSet_t,
    data: *mut nv::nvmlEventData_t,
    timeout_ms: c_uint,
) -> Ret {
    let index = match state::set_index(set) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let r = state::call("nvmlEventSetWait_v2", None, |s| {
        let events = &s.scenario.xid_events;
        let set = s.sets.get_mut(index).and_then(Option::as_mut).ok_or(INVALID_ARGUMENT)?;
        let next = events
            .iter()
            .enumerate()
            .find(|(i, e)| !set.delivered[*i] && set.registered.get(&e.gpu).is_some_and(|mask| mask & XID != 0));
        Ok(next.map(|(i, e)| {
            set.delivered[i] = true;
            nv::nvmlEventData_t {
                device: state::gpu_handle(e.gpu),
                eventType: XID,
                eventData: e.code,
                gpuInstanceId: NO_INSTANCE,
                computeInstanceId: NO_INSTANCE,
            }
        }))
    });
    match r {
        Err(code) => code,
        Ok(None) => {
            std::thread::sleep(Duration::from_millis(u64::from(timeout_ms)));
            nv::nvmlReturn_enum_NVML_ERROR_TIMEOUT
        }
        // SAFETY: `data` is null or points to an nvmlEventData_t (nvml.h).
        Ok(Some(event)) => unsafe { put(data, Ok(event)) },
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlEventSetFree(set: nv::nvmlEventSet_t) -> Ret {
    let index = match state::set_index(set) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let r = state::call("nvmlEventSetFree", None, |s| {
        s.sets.get_mut(index).and_then(Option::take).map(|_| ()).ok_or(INVALID_ARGUMENT)
    });
    r.err().unwrap_or(SUCCESS)
}
