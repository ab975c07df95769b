//! Readings NVML gives only as field values (`nvmlDeviceGetFieldValues`): row remapping, HBM
//! temperature, and the NVLink data counters of each link. Each slot of a field-value call answers on
//! its own, so one field a board lacks leaves only its own reading out.

use super::super::backend::RemappedRows;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id;
use std::ffi::c_int;

/// Row remapping (the wrapper has no call for nvmlDeviceGetRemappedRows).
pub fn remapped_rows(d: &nvml_wrapper::Device<'_>) -> Option<RemappedRows> {
    let ids = [
        field_id::NVML_FI_DEV_REMAPPED_COR,
        field_id::NVML_FI_DEV_REMAPPED_UNC,
        field_id::NVML_FI_DEV_REMAPPED_PENDING,
        field_id::NVML_FI_DEV_REMAPPED_FAILURE,
    ]
    .map(FieldId);
    let values = d.field_values_for(&ids).ok()?;
    let v: Vec<Option<u64>> = values.into_iter().map(|r| as_u64(r.ok()?.value.ok()?)).collect();
    Some(RemappedRows {
        correctable: v.first().copied().flatten()?,
        uncorrectable: v.get(1).copied().flatten()?,
        pending: v.get(2).copied().flatten()? != 0,
        failed: v.get(3).copied().flatten()? != 0,
    })
}

/// HBM temperature, °C (boards with HBM: A100, H100 and later).
pub fn memory_temperature(d: &nvml_wrapper::Device<'_>) -> Option<f64> {
    let values = d.field_values_for(&[FieldId(field_id::NVML_FI_DEV_MEMORY_TEMP)]).ok()?;
    as_f64(values.into_iter().next()?.ok()?.value.ok()?)
}

/// The payload bytes each link has sent and received since the driver loaded, per link of `links`:
/// `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`/`_RX`, which nvml.h counts in KiB, with the link as scope id.
pub fn nvlink_bytes(
    nvml: &nvml_wrapper::Nvml,
    d: &nvml_wrapper::Device<'_>,
    links: &[u32],
) -> Vec<(Option<u64>, Option<u64>)> {
    let absent = vec![(None, None); links.len()];
    if links.is_empty() {
        return absent;
    }
    let requests: Vec<(u32, u32)> = links
        .iter()
        .flat_map(|&l| {
            [(field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, l), (field_id::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, l)]
        })
        .collect();
    let Ok(get) = nvml.lib().nvmlDeviceGetFieldValues.as_ref() else { return absent };
    // SAFETY: the handle is the live device `d` of the library `get` was loaded from.
    let values = match unsafe { scoped_field_values(*get, d.handle(), &requests) } {
        Ok(v) => v,
        Err(_) => return absent,
    };
    let kib = |r: &Result<FieldValueSample, NvmlError>| {
        let v = r.as_ref().ok()?.value.as_ref().ok()?.clone();
        as_u64(v)?.checked_mul(1024)
    };
    values.chunks(2).map(|pair| (kib(&pair[0]), pair.get(1).and_then(kib))).collect()
}

/// `nvmlFieldValue_t` as nvml.h lays it out: the field and scope ids the caller sets, then 32 bytes
/// NVML fills (timestamp, latency, value type, return code, value).
#[repr(C)]
struct RawFieldValue {
    field_id: u32,
    scope_id: u32,
    answer: [i64; 4],
}

/// Calls `nvmlDeviceGetFieldValues` with a scope id per field. nvml-wrapper 0.13's `field_values_for`
/// sets field ids only (the scope stays 0, link 0), and its `nvmlFieldValue_t` is not exported, so the
/// library's own function is called here with a struct of the same layout (checked against the
/// wrapper's at compile time) and each answer is decoded by the wrapper's `FieldValueSample`.
/// Field ids are passed as they are: nvml-wrapper renumbers only ids 251–273 for drivers from 580.82.
///
/// # Safety
/// `device` is a live handle of the library `get` belongs to.
unsafe fn scoped_field_values<D, T>(
    get: unsafe extern "C" fn(D, c_int, *mut T) -> u32,
    device: D,
    requests: &[(u32, u32)],
) -> Result<Vec<Result<FieldValueSample, NvmlError>>, NvmlError>
where
    FieldValueSample: TryFrom<T, Error = NvmlError>,
{
    const {
        assert!(size_of::<T>() == size_of::<RawFieldValue>() && align_of::<T>() == align_of::<RawFieldValue>());
    }
    let mut raw: Vec<RawFieldValue> =
        requests.iter().map(|&(field_id, scope_id)| RawFieldValue { field_id, scope_id, answer: [0; 4] }).collect();
    let count = c_int::try_from(raw.len()).map_err(|_| NvmlError::InvalidArg)?;
    // SAFETY: `raw` holds `count` values laid out as nvmlFieldValue_t (same size and alignment, ids
    // first, the rest zeroed), and `device` is live (this function's contract).
    let code = unsafe { get(device, count, raw.as_mut_ptr().cast::<T>()) };
    if code != 0 {
        return Err(NvmlError::from(code));
    }
    Ok(raw
        .iter()
        // SAFETY: NVML filled each slot as an nvmlFieldValue_t, which `T` is; `read` copies it out.
        .map(|slot| FieldValueSample::try_from(unsafe { std::ptr::from_ref(slot).cast::<T>().read() }))
        .collect())
}

pub fn as_u64(v: SampleValue) -> Option<u64> {
    match v {
        SampleValue::U32(x) => Some(u64::from(x)),
        SampleValue::U64(x) => Some(x),
        SampleValue::I64(x) => u64::try_from(x).ok(),
        SampleValue::F64(x) => (x >= 0.0).then_some(x as u64),
    }
}

fn as_f64(v: SampleValue) -> Option<f64> {
    match v {
        SampleValue::U32(x) => Some(f64::from(x)),
        SampleValue::U64(x) => Some(x as f64),
        SampleValue::I64(x) => Some(x as f64),
        SampleValue::F64(x) => Some(x),
    }
}
