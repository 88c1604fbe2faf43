//! The simulator's integration tests: one binary, a module per area, each talking to a simulator
//! over real HTTP on 127.0.0.1 (the `cli` module runs the built `edge-connect-sim` binary).

mod support;

mod access_ports;
mod app;
mod appinst;
mod auth;
mod cli;
mod faults;
mod fidelity;
mod json;
mod startup;
