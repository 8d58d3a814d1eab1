//! The otel importer on arbitrary text: OTLP/JSON lines (see common.rs for what is checked).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::check_import(data, Some("otel")));
