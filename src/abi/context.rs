//! DAT_CONTEXT, and the cookies that are one (DAT_DTO_COOKIE, DAT_RMR_COOKIE), as the 64-bit
//! value the library carries: one union read, here.

#[allow(unused_imports)]
use super::*;

// Each member fills all 8 bytes, so the bytes a consumer set through any one of them are the
// whole value.
const _: () = assert!(core::mem::size_of::<DAT_CONTEXT>() == 8);
const _: () = assert!(core::mem::size_of::<DAT_PVOID>() == 8 && core::mem::size_of::<DAT_UINT64>() == 8 && core::mem::size_of::<DAT_UVERYLONG>() == 8);

impl DAT_CONTEXT {
    /// The value, whichever member the consumer set.
    #[inline(always)]
    pub fn as_u64(self) -> u64 {
        // SAFETY: every member is 8 bytes of plain data (asserted above: a pointer, a u64, an
        // unsigned long long), so the 8 bytes are a valid u64 whichever member wrote them.
        unsafe { self.as_64 }
    }

    /// A context (or cookie) of this value.
    #[inline(always)]
    pub fn from_u64(value: u64) -> DAT_CONTEXT {
        DAT_CONTEXT { as_64: value }
    }
}
