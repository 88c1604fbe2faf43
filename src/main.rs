//! Entry point: GARM mode when called without arguments and with `GARM_COMMAND` set, CLI mode
//! otherwise.

use std::process::ExitCode;

/// musl's own allocator is where a command spent a quarter of its instructions (Cargo.toml says
/// why dlmalloc); glibc's is fast already.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: Locked = Locked(std::sync::Mutex::new(dlmalloc::Dlmalloc::new()));

/// dlmalloc behind std's mutex, whose uncontended lock is one inlined atomic: the crate's own
/// global allocator calls musl's pthread mutex on every allocation and free (3 % of a List of
/// 1,000 runners, docs/packaging.md). A lock it needs: the resolver's threads allocate too.
#[cfg(target_env = "musl")]
struct Locked(std::sync::Mutex<dlmalloc::Dlmalloc>);

#[cfg(target_env = "musl")]
impl Locked {
    fn heap(&self) -> std::sync::MutexGuard<'_, dlmalloc::Dlmalloc> {
        // Nothing panics while the lock is held: dlmalloc answers a failure with null.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

// SAFETY: dlmalloc gets back each pointer with the layout it was allocated with (GlobalAlloc's
// contract), under the one lock of the one heap.
#[cfg(target_env = "musl")]
unsafe impl std::alloc::GlobalAlloc for Locked {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        unsafe { self.heap().malloc(l.size(), l.align()) }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        unsafe { self.heap().calloc(l.size(), l.align()) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, l: std::alloc::Layout) {
        unsafe { self.heap().free(ptr, l.size(), l.align()) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, l: std::alloc::Layout, size: usize) -> *mut u8 {
        unsafe { self.heap().realloc(ptr, l.size(), l.align(), size) }
    }
}

fn main() -> ExitCode {
    let garm_mode = std::env::args_os().len() == 1 && std::env::var_os("GARM_COMMAND").is_some();
    let code = if garm_mode {
        garm_provider_edge_connect::front::garm::run()
    } else {
        garm_provider_edge_connect::front::cli::run()
    };
    ExitCode::from(code)
}
