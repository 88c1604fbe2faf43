//! The exit codes GARM reads from a provider (garm-provider-common's `execution` package).

/// "Not found": GARM treats it as success for DeleteInstance.
pub const NOT_FOUND: u8 = 30;
/// "An instance with this name already exists".
pub const DUPLICATE: u8 = 31;
/// Every other failure.
pub const FAILURE: u8 = 1;
