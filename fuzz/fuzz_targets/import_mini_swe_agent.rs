//! The mini-swe-agent importer on arbitrary text (see common.rs for what is checked).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::check_import(data, Some("mini-swe-agent")));
