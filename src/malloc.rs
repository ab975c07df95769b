//! Tunes glibc's allocator before any thread starts, so resident memory tracks what the store
//! accounts for (`[store] memory_limit`).
//!
//! glibc gives each thread that contends for the heap an arena of its own, up to eight per core, and
//! keeps freed memory in them; it also raises its mmap threshold each time a large block is freed, so
//! the next large blocks land in those arenas too. Under a flood of refused batches (each parsed into
//! ~10 MB of lines and labels, then dropped) resident memory then grows by arenas' worth of freed
//! pages: `tests/memory_budget.rs` peaked at 75–97 MiB under a 96 MiB limit on a loaded 2-core
//! machine, against 61–63 MiB with the settings below. They are the knobs glibc documents for this:
//! at most as many arenas as cores (2 to 8); blocks of 1 MiB and more mapped and unmapped on their
//! own (128 KiB gave 57 MiB, but then every mid-sized query buffer would cost fresh zeroed pages);
//! free memory at the heap's top returned past 1 MiB.
//!
//! An operator's own `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_` wins.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
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

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}
