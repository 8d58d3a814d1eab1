//! The inspect importer on arbitrary bytes, zip archives (`.eval`) and JSON logs alike (see common.rs for
//! what is checked).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::check_import_bytes(data, Some("inspect")));
