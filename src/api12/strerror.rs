//! `dat_strerror` of 1.2: it names a 1.2 code, so the code is first put in 2.0's numbering,
//! whose names are the same.

use std::ffi::c_char;

use super::returns::{return12, return20};
use crate::abi12 as v1;
use crate::api::registry;

#[export_name = "dat_strerror@DAT_1.2"]
pub unsafe extern "C" fn dat_strerror(
    value: v1::DAT_RETURN,
    major_message: *mut *const c_char,
    minor_message: *mut *const c_char,
) -> v1::DAT_RETURN {
    // SAFETY: the caller's out-pointers, as 2.0's function takes them.
    return12(unsafe { registry::dat_strerror(return20(value), major_message, minor_message) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn names(value: v1::DAT_RETURN) -> (v1::DAT_RETURN, String, String) {
        let (mut major, mut minor) = (std::ptr::null(), std::ptr::null());
        // SAFETY: two live out-pointers.
        let rc = unsafe { dat_strerror(value, &mut major, &mut minor) };
        if rc != 0 {
            return (rc, String::new(), String::new());
        }
        // SAFETY: on success both are the library's NUL-terminated names.
        let s = |p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        (rc, s(major), s(minor))
    }

    #[test]
    fn a_1_2_code_is_named_by_its_1_2_meaning() {
        use v1::dat_return_subtype as S;
        use v1::dat_return_type as T;
        // Subtypes 1.2 numbers differently from 2.0.
        let code = v1::DAT_CLASS_ERROR
            | u32::from(T::DAT_PRIVILEGES_VIOLATION)
            | u32::from(S::DAT_PRIVILEGES_RDMA_WRITE);
        let (rc, major, minor) = names(code);
        assert_eq!(rc, 0);
        assert_eq!(major, "DAT_PRIVILEGES_VIOLATION");
        assert_eq!(minor, "DAT_PRIVILEGES_RDMA_WRITE");
        let code = u32::from(T::DAT_INVALID_PARAMETER) | u32::from(S::DAT_INVALID_ARG5);
        assert_eq!(names(code).2, "DAT_INVALID_ARG5");
        let (_, major, _) = names(0xffff_0000);
        assert_eq!(major, "DAT_NOT_IMPLEMENTED");
    }

    #[test]
    fn its_own_errors_are_1_2_codes() {
        // SAFETY: NULL out-pointers, which the function refuses.
        let rc = unsafe { dat_strerror(0, std::ptr::null_mut(), std::ptr::null_mut()) };
        assert_eq!(
            rc,
            v1::DAT_CLASS_ERROR
                | u32::from(v1::dat_return_type::DAT_INVALID_PARAMETER)
                | u32::from(v1::dat_return_subtype::DAT_INVALID_ARG2)
        );
    }
}
