//! The all-zero value of the C structs we fill field by field (C's `= {0}`), without `unsafe`
//! at each use.

#[allow(unused_imports)]
use super::*;

/// A C struct or union for which all-zero bytes are a valid value: its fields are integers
/// (the headers' enums are transcribed as their integer types), raw pointers, `Option`s of
/// function pointers, and arrays, structs and unions of those; never a Rust enum, a reference
/// or a `bool`.
///
/// # Safety
/// All-zero bytes must be a valid value of the implementing type.
pub unsafe trait Zeroable: Sized {
    /// The all-zero value. Inlined: the same code as `mem::zeroed` in place.
    #[inline(always)]
    fn zeroed() -> Self {
        // SAFETY: the implementor promises that all-zero bytes are a valid value (the trait's
        // contract).
        unsafe { core::mem::zeroed() }
    }
}

/// Declares C types `Zeroable`. Each use carries a `// SAFETY:` comment saying why all-zero
/// bytes are valid for every type it names.
macro_rules! zeroable {
    ($($t:ty),+ $(,)?) => {
        $(
            // SAFETY: as the `// SAFETY:` comment at this macro's use says.
            unsafe impl $crate::abi::Zeroable for $t {}
        )+
    };
}
pub(crate) use zeroable;

// SAFETY: every field of these, through their nested structs and unions, is an integer, a raw
// pointer or an `Option` of a function pointer (DAT_OS_WAIT_PROXY_AGENT's agent), as
// transcribed from the headers in this module's siblings; DAT_SOCK_ADDR6 is the C library's
// sockaddr_in6, integers and an array of bytes.
zeroable!(
    DAT_EVENT,
    DAT_EP_ATTR,
    DAT_EP_PARAM,
    DAT_RMR_PARAM,
    DAT_LMR_PARAM,
    DAT_CNO_PARAM,
    DAT_OS_WAIT_PROXY_AGENT,
    DAT_IA_ATTR,
    DAT_PROVIDER_ATTR,
    DAT_PROVIDER_INFO,
    DAT_IB_EXTENSION_EVENT_DATA,
    DAT_SOCK_ADDR6,
    DAT_SRQ_PARAM,
    DAT_PZ_PARAM,
);
