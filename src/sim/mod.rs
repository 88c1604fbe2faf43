//! An in-memory Edge Connect (EdgeXR Master Controller) that speaks the same REST API.
