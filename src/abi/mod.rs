//! `#[repr(C)]` types, constants and `DAT_RETURN` codes of the DAT 2.0 headers: data only.
