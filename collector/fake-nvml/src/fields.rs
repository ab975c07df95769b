//! `nvmlDeviceGetFieldValues`: each slot answers on its own, as NVML does. Most fields come from the
//! device's `field_values` (scope id not looked at); the NVLink data counters come from the link the
//! scope id names, as nvml.h defines them.

use crate::SUCCESS;
use crate::scenario::{Device, NvLinkThroughput};
use crate::state::{self, INVALID_ARGUMENT, NOT_SUPPORTED, Ret};
use nvml_wrapper_sys::bindings as nv;
use nvml_wrapper_sys::bindings::field_id::{
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
};
use std::ffi::c_int;

/// The scope id nvml.h reserves for "all links summed".
const ALL_LINKS: u32 = u32::MAX;

/// A field's answer: an NVML value, or the slot's error.
enum Answer {
    Unsigned(u64),
    Signed(i64),
    Double(f64),
}

/// Fills each requested field's slot: its value, or `NOT_SUPPORTED` in that slot alone.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(
    device: nv::nvmlDevice_t,
    count: c_int,
    values: *mut nv::nvmlFieldValue_t,
) -> Ret {
    let Ok(count) = usize::try_from(count) else { return INVALID_ARGUMENT };
    if values.is_null() {
        return INVALID_ARGUMENT;
    }
    // SAFETY: `values` is not null and holds `count` initialised elements whose field and scope ids
    // the caller set (nvml.h); nothing else refers to them during the call.
    let slots = unsafe { std::slice::from_raw_parts_mut(values, count) };
    let requested: Vec<(u32, u32)> = slots.iter().map(|s| (s.fieldId, s.scopeId)).collect();
    let answers = state::device("nvmlDeviceGetFieldValues", device, |t, _| {
        let d = t.gpu()?;
        Ok(requested.iter().map(|&(field, scope)| answer(d, field, scope)).collect::<Vec<_>>())
    });
    let answers = match answers {
        Ok(a) => a,
        Err(code) => return code,
    };
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    for (slot, answer) in slots.iter_mut().zip(answers) {
        slot.timestamp = now_us;
        slot.latencyUsec = 0;
        let value = match answer {
            Ok(v) => v,
            Err(code) => {
                slot.nvmlReturn = code;
                continue;
            }
        };
        slot.nvmlReturn = SUCCESS;
        (slot.valueType, slot.value) = match value {
            Answer::Unsigned(u) => {
                (nv::nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, nv::nvmlValue_t { ullVal: u })
            }
            Answer::Signed(i) => {
                (nv::nvmlValueType_enum_NVML_VALUE_TYPE_SIGNED_LONG_LONG, nv::nvmlValue_t { sllVal: i })
            }
            Answer::Double(d) => (nv::nvmlValueType_enum_NVML_VALUE_TYPE_DOUBLE, nv::nvmlValue_t { dVal: d }),
        };
    }
    SUCCESS
}

fn answer(d: &Device, field: u32, scope: u32) -> Result<Answer, Ret> {
    let counter: fn(&NvLinkThroughput) -> u64 = match field {
        NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX => |t| t.data_tx,
        NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX => |t| t.data_rx,
        _ => {
            let n = d.field_values.get(&field).ok_or(NOT_SUPPORTED)?;
            return Ok(if let Some(u) = n.as_u64() {
                Answer::Unsigned(u)
            } else if let Some(i) = n.as_i64() {
                Answer::Signed(i)
            } else {
                Answer::Double(n.as_f64().unwrap_or(f64::NAN))
            });
        }
    };
    // A link the board does not have, or one without counters, answers NOT_SUPPORTED in its slot.
    let mut total = None;
    for l in d.nvlinks.iter().filter(|l| scope == ALL_LINKS || l.link == scope) {
        if let Some(t) = &l.throughput_kib {
            total = Some(total.unwrap_or(0) + counter(t));
        }
    }
    total.map(Answer::Unsigned).ok_or(NOT_SUPPORTED)
}
