//! Entry point: GARM mode when called without arguments and with `GARM_COMMAND` set, CLI mode
//! otherwise.

use std::process::ExitCode;

/// musl's own allocator is where a command spent a quarter of its instructions (Cargo.toml says
/// why dlmalloc); glibc's is fast already.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() -> ExitCode {
    let garm_mode = std::env::args_os().len() == 1 && std::env::var_os("GARM_COMMAND").is_some();
    let code = if garm_mode {
        garm_provider_edge_connect::front::garm::run()
    } else {
        garm_provider_edge_connect::front::cli::run()
    };
    ExitCode::from(code)
}
