//! The process's allocator, chosen and tuned so that resident memory tracks what the store accounts
//! for (`[store] memory_limit`) rather than the highest peak the process ever reached.
//!
//! By default (cargo feature `jemalloc`, on Unix) that is jemalloc: it returns the pages of freed
//! memory to the system about a second after they fall idle, from a background thread. glibc's malloc
//! returns only what lies at the top of each arena, so every transient peak — the analyzer's range
//! reads over the fleet, a 6-hour dashboard query, a refused batch — stayed resident afterwards: in the
//! 30-minute soak (its third run, `git show d87df420:bench/RESULTS.md`) RSS rose in steps with each
//! new high-water mark, +16 % while the store's own accounting grew 4 %.
//!
//! Built without the feature, glibc's malloc is tuned instead, before any thread starts. glibc gives
//! each thread that contends for the heap an arena of its own, up to eight per core, and keeps freed
//! memory in them; it also raises its mmap threshold each time a large block is freed, so
//! the next large blocks land in those arenas too. Under a flood of refused batches (each parsed into
//! ~10 MB of lines and labels, then dropped) resident memory then grows by arenas' worth of freed
//! pages: `tests/it/memory_budget.rs` peaked at 75–97 MiB under a 96 MiB limit on a loaded 2-core
//! machine, against 61–63 MiB with the settings below. They are the knobs glibc documents for this:
//! at most as many arenas as cores (2 to 8); blocks of 1 MiB and more mapped and unmapped on their
//! own (128 KiB gave 57 MiB, but then every mid-sized query buffer would cost fresh zeroed pages);
//! free memory at the heap's top returned past 1 MiB.
//!
//! An operator's own `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` wins.

#[cfg(all(feature = "jemalloc", unix))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read at its first allocation (an operator's `_RJEM_MALLOC_CONF` is read after
/// them and wins): purge from a background thread, so memory freed by a burst is returned even while
/// the threads that freed it sleep; dirty pages returned after a second, and then at once
/// (`MADV_DONTNEED`) rather than lazily (`MADV_FREE`, which stays in RSS until the kernel runs short);
/// one arena per CPU rather than four, as glibc's arenas are capped below. Under
/// `tests/it/memory_budget.rs`'s flood (96 MiB limit, with a soak loading both cores) these peaked at
/// 81–82 MiB, glibc tuned as below at 79–89 MiB, jemalloc with a 5 s decay and four arenas per CPU at
/// 89–107 MiB; alternated on a quieter machine, these 74.7–75.8 MiB and glibc 70.0–73.7 MiB, with ingest
/// no slower and 24-hour reads 23 % faster (docs/performance.md, "jemalloc against glibc").
#[cfg(all(feature = "jemalloc", unix))]
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: Option<&'static std::ffi::c_char> = Some(
    // SAFETY: the pointer comes from a 'static C string literal.
    unsafe { &*c"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0,percpu_arena:percpu".as_ptr() },
);

#[cfg(all(feature = "jemalloc", unix))]
pub fn tune() {}

/// For `argus collect`, the node agent: a few MiB of data, allocated and freed again on every
/// collection and flush. jemalloc's purging thread then wakes every cycle to return the pages freed
/// since the last one: on a profile, a tenth of the agent's CPU (bench/collector_vs_node_exporter.py).
/// Without it, the agent's own threads purge as they allocate, with the same one-second decay, so its
/// resident memory stays where it was. An operator's `_RJEM_MALLOC_CONF` wins: with it set, nothing
/// is changed.
#[cfg(all(feature = "jemalloc", unix))]
pub fn tune_for_agent() {
    if std::env::var_os("_RJEM_MALLOC_CONF").is_none() {
        write_mallctl(c"background_thread", false);
    }
}

/// Writes a jemalloc setting whose C type is `T` (`background_thread` a bool, decay times an ssize_t).
#[cfg(all(feature = "jemalloc", unix))]
fn write_mallctl<T: Copy>(name: &std::ffi::CStr, mut value: T) {
    // SAFETY: `name` is a writable mallctl of type `T`, given a pointer to a live `T` and its size.
    let rc = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&raw mut value).cast::<std::ffi::c_void>(),
            size_of::<T>(),
        )
    };
    if rc != 0 {
        tracing::debug!(?name, rc, "jemalloc setting not changed");
    }
}

#[cfg(not(all(feature = "jemalloc", unix)))]
pub fn tune_for_agent() {}

#[cfg(all(not(all(feature = "jemalloc", unix)), target_os = "linux", target_env = "gnu"))]
pub fn tune() {
    let set = |env: &str, param: libc::c_int, value: usize| {
        if std::env::var_os(env).is_none() {
            // SAFETY: mallopt only changes allocator parameters; it is called before other threads exist.
            unsafe { libc::mallopt(param, value as libc::c_int) };
        }
    };
    let cores = std::thread::available_parallelism().map(usize::from).unwrap_or(2);
    set("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, cores.clamp(2, 8));
    set("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, 1 << 20);
    set("MALLOC_TRIM_THRESHOLD_", libc::M_TRIM_THRESHOLD, 1 << 20);
}

#[cfg(not(any(all(feature = "jemalloc", unix), all(target_os = "linux", target_env = "gnu"))))]
pub fn tune() {}

/// Registers `argus_allocator_bytes{kind}` (docs/metrics.md): jemalloc's own account of the memory it
/// holds, read at each scrape, so that a growing resident set can be told apart as live data
/// (`allocated`), pages holding both live and freed blocks (`active` minus `allocated`), the
/// allocator's bookkeeping (`metadata`) or pages not yet returned (`resident` minus `active`).
/// Nothing is registered in a build without jemalloc.
pub fn register_stats(registry: &mut prometheus_client::registry::Registry) {
    #[cfg(all(feature = "jemalloc", unix))]
    registry.register_collector(Box::new(stats::AllocatorStats));
    #[cfg(not(all(feature = "jemalloc", unix)))]
    let _ = registry;
}

#[cfg(all(feature = "jemalloc", unix))]
mod stats {
    use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
    use prometheus_client::metrics::{MetricType, gauge::ConstGauge};
    use std::ffi::{CStr, c_void};

    /// The statistics read, by their `kind` label; jemalloc's names are `stats.<kind>`.
    const KINDS: [(&str, &CStr); 6] = [
        ("allocated", c"stats.allocated"),
        ("active", c"stats.active"),
        ("metadata", c"stats.metadata"),
        ("resident", c"stats.resident"),
        ("mapped", c"stats.mapped"),
        ("retained", c"stats.retained"),
    ];

    #[derive(Debug)]
    pub struct AllocatorStats;

    /// jemalloc's statistics as of now: it refreshes its cached totals when its `epoch` is written.
    fn read() -> Vec<(&'static str, u64)> {
        let mut epoch: u64 = 1;
        let mut len = size_of::<u64>();
        // SAFETY: `epoch` is a u64 mallctl, read and written through pointers to a live u64 of that size.
        let refreshed = unsafe {
            tikv_jemalloc_sys::mallctl(
                c"epoch".as_ptr(),
                (&raw mut epoch).cast::<c_void>(),
                &mut len,
                (&raw mut epoch).cast::<c_void>(),
                size_of::<u64>(),
            )
        };
        if refreshed != 0 {
            return Vec::new();
        }
        KINDS
            .iter()
            .filter_map(|(kind, name)| {
                let mut value: usize = 0;
                let mut len = size_of::<usize>();
                // SAFETY: the `stats.*` totals are size_t mallctls, read into a live usize.
                let rc = unsafe {
                    tikv_jemalloc_sys::mallctl(
                        name.as_ptr(),
                        (&raw mut value).cast::<c_void>(),
                        &mut len,
                        std::ptr::null_mut(),
                        0,
                    )
                };
                (rc == 0).then_some((*kind, value as u64))
            })
            .collect()
    }

    impl prometheus_client::collector::Collector for AllocatorStats {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            let values = read();
            if values.is_empty() {
                return Ok(());
            }
            let mut family = encoder.encode_descriptor(
                "argus_allocator_bytes",
                "Memory jemalloc holds, by kind: allocated (live blocks), active (pages holding them), metadata, \
                 resident, mapped, retained (address space kept for reuse, not resident)",
                None,
                MetricType::Gauge,
            )?;
            for (kind, value) in values {
                let labels = [("kind", kind)];
                ConstGauge::new(value as i64).encode(family.encode_family(&labels)?)?;
            }
            Ok(())
        }
    }
}
