//! A 1.2 query: the 2.0 query into a param of ours, converted into the caller's.

use crate::abi as v2;
use crate::abi::Zeroable;
use crate::abi12 as v1;
use crate::api::edge;

use super::returns::return12;

/// Runs `query` (the 2.0 function) into a param of ours, and on success writes `convert` of it
/// to `out`. A NULL `out` is passed on as NULL, so the core refuses it in its order, naming
/// the same argument.
pub fn query_into<P20: Zeroable, P12>(
    out: *mut P12,
    query: impl FnOnce(*mut P20) -> v2::DAT_RETURN,
    convert: impl FnOnce(&P20) -> P12,
) -> v1::DAT_RETURN {
    let mut ours = P20::zeroed();
    let target = if out.is_null() {
        std::ptr::null_mut()
    } else {
        &mut ours as *mut P20
    };
    let code = query(target);
    if code == v2::dat_return_type::DAT_SUCCESS as v2::DAT_RETURN {
        if let Some(o) = edge::optional_out(out) {
            o.set(convert(&ours));
        }
    }
    return12(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_on_success_only_and_passes_null_on() {
        let mut got = 0u64;
        let code = query_into(
            &mut got,
            |p: *mut v2::DAT_PZ_PARAM| {
                assert!(!p.is_null());
                // SAFETY: our own param.
                unsafe { (*p).ia_handle = 42usize as v2::DAT_IA_HANDLE };
                v2::dat_return_type::DAT_SUCCESS as v2::DAT_RETURN
            },
            |p| p.ia_handle as u64 + 1,
        );
        assert_eq!(
            (code, got),
            (v1::dat_return_type::DAT_SUCCESS as v1::DAT_RETURN, 43)
        );
        let mut untouched = 7u64;
        let failed = crate::error::DatError::invalid_arg(3).code();
        let code = query_into(&mut untouched, |_: *mut v2::DAT_PZ_PARAM| failed, |_| 0);
        assert_eq!(code, return12(failed));
        assert_eq!(untouched, 7);
        let code = query_into(
            std::ptr::null_mut::<u64>(),
            |p: *mut v2::DAT_PZ_PARAM| {
                assert!(p.is_null());
                failed
            },
            |_| 0,
        );
        assert_eq!(code, return12(failed));
    }
}
