//! End to end in a real browser: the playground and the Relay example.
//!
//! One test binary for the whole layer, so the crate and the AWS SDK are linked once;
//! `docs/TESTING.md` lists what each file covers.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod playground;
mod web_example;
