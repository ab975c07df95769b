//! The library's one global state (NVML is a process-wide singleton too): the scenario loaded by
//! `nvmlInit`, the event sets, and the rule every call goes through first.
//!
//! Handles are numbers, not pointers: GPU `i` is `(i + 1) << 8`, its MIG device `k` adds `k + 1`, and
//! event set and GPM sample `n` are `n + 1`. Nothing ever dereferences them, and a stale or foreign
//! handle decodes to `INVALID_ARGUMENT` instead of undefined behaviour.

use crate::scenario::{Device, MigDevice, Rule, Scenario};
use nvml_wrapper_sys::bindings as nv;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

pub type Ret = nv::nvmlReturn_t;

pub const NOT_SUPPORTED: Ret = nv::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
pub const INVALID_ARGUMENT: Ret = nv::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;

pub struct State {
    pub scenario: Scenario,
    rules: Vec<Rule>,
    /// `nvmlInit` calls not yet matched by `nvmlShutdown`.
    pub refs: u32,
    /// Freed sets stay as `None` so their handles are never reused.
    pub sets: Vec<Option<EventSet>>,
    /// GPM samples, freed ones as `None` (never reused either).
    pub samples: Vec<Option<GpmSample>>,
    /// Orders the samples taken, so a metrics call can tell the earlier one.
    pub samples_taken: u64,
    /// When `nvmlInit` loaded the scenario: failure rules with `after_ms` count from here.
    started: Instant,
}

/// An allocated GPM sample: empty until `nvmlGpmSampleGet` fills it from a GPU.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpmSample {
    /// The GPU it was taken on and its place in the order of samples taken.
    pub taken: Option<(u32, u64)>,
}

#[derive(Default)]
pub struct EventSet {
    /// Event type mask registered per GPU.
    pub registered: BTreeMap<u32, u64>,
    /// Which of the scenario's `xid_events` this set has handed out.
    pub delivered: Vec<bool>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// The state, even if a thread panicked while holding it: every update is a single assignment.
pub fn lock() -> MutexGuard<'static, Option<State>> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    pub fn new(scenario: Scenario) -> Result<State, String> {
        let rules = scenario.rules()?;
        Ok(State {
            scenario,
            rules,
            refs: 1,
            sets: Vec::new(),
            samples: Vec::new(),
            samples_taken: 0,
            started: Instant::now(),
        })
    }

    /// The first rule for this call that has calls left and has started, counting this one.
    fn rule(&mut self, function: &str, gpu: Option<u32>) -> Option<Rule> {
        let elapsed = self.started.elapsed();
        let rule = self.rules.iter_mut().find(|r| {
            (r.function == "*" || r.function == function)
                && (r.gpu.is_none() || r.gpu == gpu)
                && r.remaining != Some(0)
                && r.after <= elapsed
        })?;
        if let Some(n) = &mut rule.remaining {
            *n -= 1;
        }
        Some(rule.clone())
    }
}

/// Runs `f` on the state after the scenario's failure rules for `function` (on `gpu`, if the call
/// concerns one): a hang sleeps without holding the state, so other threads' calls go on.
pub fn call<T>(function: &str, gpu: Option<u32>, f: impl FnOnce(&mut State) -> Result<T, Ret>) -> Result<T, Ret> {
    let rule = {
        let mut guard = lock();
        let state = guard.as_mut().ok_or(nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED)?;
        state.rule(function, gpu)
    };
    if let Some(rule) = rule {
        if let Some(d) = rule.hang {
            std::thread::sleep(d);
        }
        if let Some(answer) = rule.answer {
            return Err(answer);
        }
    }
    let mut guard = lock();
    let state = guard.as_mut().ok_or(nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED)?;
    f(state)
}

/// What a device handle names.
pub enum Target<'a> {
    Gpu(&'a Device),
    Mig(&'a MigDevice),
}

impl<'a> Target<'a> {
    /// The GPU itself; calls NVML does not answer for a MIG device answer `NOT_SUPPORTED`.
    pub fn gpu(&self) -> Result<&'a Device, Ret> {
        match self {
            Target::Gpu(d) => Ok(d),
            Target::Mig(..) => Err(NOT_SUPPORTED),
        }
    }
}

/// [`call`] for a function taking a device handle.
pub fn device<T>(
    function: &str,
    handle: nv::nvmlDevice_t,
    f: impl FnOnce(Target<'_>, u32) -> Result<T, Ret>,
) -> Result<T, Ret> {
    let (gpu, mig) = decode(handle)?;
    call(function, Some(gpu), |s| {
        let d = s.scenario.devices.get(gpu as usize).ok_or(INVALID_ARGUMENT)?;
        let target = match mig {
            None => Target::Gpu(d),
            Some(k) => Target::Mig(d.mig.as_ref().and_then(|m| m.devices.get(k as usize)).ok_or(INVALID_ARGUMENT)?),
        };
        f(target, gpu)
    })
}

pub fn gpu_handle(gpu: u32) -> nv::nvmlDevice_t {
    std::ptr::without_provenance_mut((gpu as usize + 1) << 8)
}

pub fn mig_handle(gpu: u32, mig: u32) -> nv::nvmlDevice_t {
    std::ptr::without_provenance_mut(((gpu as usize + 1) << 8) + mig as usize + 1)
}

/// A handle → (GPU index, MIG device index).
pub fn decode(handle: nv::nvmlDevice_t) -> Result<(u32, Option<u32>), Ret> {
    let addr = handle.addr();
    let gpu = (addr >> 8).checked_sub(1).ok_or(INVALID_ARGUMENT)?;
    let gpu = u32::try_from(gpu).map_err(|_| INVALID_ARGUMENT)?;
    let slot = (addr & 0xff) as u32;
    Ok((gpu, slot.checked_sub(1)))
}

pub fn set_handle(index: usize) -> nv::nvmlEventSet_t {
    std::ptr::without_provenance_mut(index + 1)
}

/// An event set handle → its index in [`State::sets`].
pub fn set_index(handle: nv::nvmlEventSet_t) -> Result<usize, Ret> {
    handle.addr().checked_sub(1).ok_or(INVALID_ARGUMENT)
}

pub fn sample_handle(index: usize) -> nv::nvmlGpmSample_t {
    std::ptr::without_provenance_mut(index + 1)
}

/// A GPM sample handle → its index in [`State::samples`].
pub fn sample_index(handle: nv::nvmlGpmSample_t) -> Result<usize, Ret> {
    handle.addr().checked_sub(1).ok_or(INVALID_ARGUMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_decode_to_what_they_name() {
        assert_eq!(decode(gpu_handle(0)), Ok((0, None)));
        assert_eq!(decode(gpu_handle(7)), Ok((7, None)));
        assert_eq!(decode(mig_handle(3, 0)), Ok((3, Some(0))));
        assert_eq!(decode(mig_handle(3, 6)), Ok((3, Some(6))));
        assert_eq!(decode(std::ptr::null_mut()), Err(INVALID_ARGUMENT));
        assert_eq!(set_index(set_handle(4)), Ok(4));
        assert_eq!(set_index(std::ptr::null_mut()), Err(INVALID_ARGUMENT));
        assert_eq!(sample_index(sample_handle(0)), Ok(0));
        assert_eq!(sample_index(std::ptr::null_mut()), Err(INVALID_ARGUMENT));
    }
}
