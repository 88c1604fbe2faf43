//! The two front doors: GARM's protocol ([`garm`]) and the command line for people ([`cli`]).
//! Both turn their input into a [`crate::provider::Operation`] and hand it to the one
//! [`crate::pipeline`]; they differ only in how they read input and print the outcome.

pub mod cli;
pub mod garm;
