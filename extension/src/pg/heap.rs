//! How much freed C heap a backend keeps for its next call (setting `supabash.backend_heap_keep`,
//! MB, default 64, 0 leaves glibc's own policy). A 10,000-file manifest passes through a few
//! buffers of about 1.5 MB each (SPI's result, the sort, the answer, its copies); with glibc's
//! default policy every call gets them from the kernel again, zeroed page by page, and hands
//! them back when freed: about 40 % of the call's time (bench/ANALYSIS.md, "the cold open").
//! Keeping up to the setting's worth of freed heap (`M_TRIM_THRESHOLD`) and taking blocks
//! below half of it (at most 32 MB) from the heap rather than from fresh mappings
//! (`M_MMAP_THRESHOLD`) are the thresholds glibc itself moves to after freeing a large block;
//! this sets them from the first call on. Memory a backend once used up to that amount stays
//! with it until it exits, as a backend's caches do. Applied once per backend, at its first
//! supabash call; elsewhere than glibc on Linux it does nothing.

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use std::cell::Cell;

/// The setting, in MB.
static KEEP_MB: GucSetting<i32> = GucSetting::<i32>::new(64);

/// Registers the setting (from `_PG_init`).
pub fn define() {
    GucRegistry::define_int_guc(
        c"supabash.backend_heap_keep",
        c"Freed C heap a backend keeps for its next call (0: glibc's own policy).",
        c"Large answers (a 10,000-file manifest) reuse the kept heap instead of faulting fresh pages in on every call. Applied once per backend, at its first supabash call.",
        &KEEP_MB,
        0,
        1024,
        GucContext::Sighup,
        GucFlags::UNIT_MB,
    );
}

thread_local! {
    static APPLIED: Cell<bool> = const { Cell::new(false) };
}

/// Applies the setting, the first time in this backend.
pub fn keep() {
    if APPLIED.with(|a| a.replace(true)) {
        return;
    }
    let mb = KEEP_MB.get();
    if mb > 0 {
        set_thresholds(mb as usize * 1024 * 1024);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_thresholds(keep: usize) {
    use std::ffi::c_int;
    const M_TRIM_THRESHOLD: c_int = -1;
    const M_MMAP_THRESHOLD: c_int = -3;
    // glibc refuses a mapping threshold above 32 MB on 64-bit (HEAP_MAX_SIZE / 2).
    const MMAP_MAX: usize = 32 * 1024 * 1024;
    extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    let clamp = |n: usize| c_int::try_from(n).unwrap_or(c_int::MAX);
    // SAFETY: mallopt only changes the allocator's thresholds; the backend has one thread.
    unsafe {
        mallopt(M_TRIM_THRESHOLD, clamp(keep));
        mallopt(M_MMAP_THRESHOLD, clamp((keep / 2).min(MMAP_MAX)));
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_thresholds(_keep: usize) {}
