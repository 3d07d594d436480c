//! The LMR and RMR triplets between the two APIs. 1.2's are 24 bytes (a context, a pad, an
//! address and a 64-bit length), the core's 16 (an address, a 32-bit length, a context): a
//! length beyond 32 bits is one no transport of ours can move, refused by the caller with the
//! code its man page gives. A post converts its segments on the stack for every count the
//! core allows, so it allocates no more than the 2.0 path.

use std::mem::MaybeUninit;

use crate::abi as v2;
use crate::abi::DAT_COUNT;
use crate::abi12 as v1;
use crate::api::edge;
use crate::error::{DatError, DatResult};

/// A 1.2 LMR triplet as the core's, unless its length needs more than 32 bits.
pub fn lmr20(t: &v1::DAT_LMR_TRIPLET) -> Option<v2::DAT_LMR_TRIPLET> {
    Some(v2::DAT_LMR_TRIPLET {
        virtual_address: t.virtual_address,
        segment_length: u32::try_from(t.segment_length).ok()?,
        lmr_context: t.lmr_context,
    })
}

/// The core's LMR triplet as 1.2's.
pub fn lmr12(t: &v2::DAT_LMR_TRIPLET) -> v1::DAT_LMR_TRIPLET {
    v1::DAT_LMR_TRIPLET {
        lmr_context: t.lmr_context,
        pad: 0,
        virtual_address: t.virtual_address,
        segment_length: u64::from(t.segment_length),
    }
}

/// A 1.2 RMR triplet (its address is `target_address`) as the core's, unless its length needs
/// more than 32 bits.
pub fn rmr20(t: &v1::DAT_RMR_TRIPLET) -> Option<v2::DAT_RMR_TRIPLET> {
    Some(v2::DAT_RMR_TRIPLET {
        virtual_address: t.target_address,
        segment_length: u32::try_from(t.segment_length).ok()?,
        rmr_context: t.rmr_context,
    })
}

/// Segments converted on the stack: the core's largest IOV (a count the core refuses before
/// it reads the segments, except an SRQ's, whose larger counts go to the heap).
pub const STACK_SEGMENTS: usize = crate::objects::limits::MAX_IOV_SEGMENTS as usize;

/// Room for one post's segments in the core's layout.
pub struct Segments20 {
    stack: [MaybeUninit<v2::DAT_LMR_TRIPLET>; STACK_SEGMENTS],
    heap: Vec<v2::DAT_LMR_TRIPLET>,
}

impl Segments20 {
    #[inline(always)]
    pub fn new() -> Segments20 {
        Segments20 {
            stack: [MaybeUninit::uninit(); STACK_SEGMENTS],
            heap: Vec::new(),
        }
    }

    /// `segments` in the core's layout; a length beyond 32 bits is `DAT_INVALID_PARAMETER`
    /// naming `position` (the segments' argument).
    pub fn convert(
        &mut self,
        segments: &[v1::DAT_LMR_TRIPLET],
        position: u8,
    ) -> DatResult<&[v2::DAT_LMR_TRIPLET]> {
        let each = |s| lmr20(s).ok_or(DatError::invalid_arg(position));
        if segments.len() > STACK_SEGMENTS {
            self.heap = segments.iter().map(each).collect::<DatResult<_>>()?;
            return Ok(&self.heap);
        }
        for (slot, s) in self.stack.iter_mut().zip(segments) {
            slot.write(each(s)?);
        }
        // SAFETY: the first `segments.len()` slots were written just above, and
        // MaybeUninit<T> is laid out as T.
        Ok(unsafe {
            std::slice::from_raw_parts(
                self.stack.as_ptr() as *const v2::DAT_LMR_TRIPLET,
                segments.len(),
            )
        })
    }

    /// The `count` 1.2 segments at `p` (argument `position`) in the core's layout.
    ///
    /// # Safety
    /// A non-NULL `p` points to `count` triplets (the caller's promise).
    #[inline(always)]
    pub unsafe fn read(
        &mut self,
        p: *const v1::DAT_LMR_TRIPLET,
        count: DAT_COUNT,
        position: u8,
    ) -> DatResult<&[v2::DAT_LMR_TRIPLET]> {
        // SAFETY: forwarded from our caller.
        let segments = unsafe { edge::slice_in(p, count, position)? };
        self.convert(segments, position)
    }
}

impl Default for Segments20 {
    fn default() -> Segments20 {
        Segments20::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Sub, Type};
    use std::mem::{offset_of, size_of};

    fn t12(context: u32, address: u64, length: u64) -> v1::DAT_LMR_TRIPLET {
        v1::DAT_LMR_TRIPLET {
            lmr_context: context,
            pad: 0xdead_beef,
            virtual_address: address,
            segment_length: length,
        }
    }

    #[test]
    fn layouts_differ_as_the_headers_say() {
        assert_eq!(size_of::<v1::DAT_LMR_TRIPLET>(), 24);
        assert_eq!(size_of::<v1::DAT_RMR_TRIPLET>(), 24);
        assert_eq!(size_of::<v2::DAT_LMR_TRIPLET>(), 16);
        assert_eq!(offset_of!(v1::DAT_LMR_TRIPLET, segment_length), 16);
        assert_eq!(offset_of!(v1::DAT_RMR_TRIPLET, target_address), 8);
    }

    #[test]
    fn lmr_triplet_both_ways() {
        let t = lmr20(&t12(7, 0x1000_0000_0000, 4096)).unwrap();
        assert_eq!(
            (t.lmr_context, t.virtual_address, t.segment_length),
            (7, 0x1000_0000_0000, 4096)
        );
        let back = lmr12(&t);
        assert_eq!(
            (
                back.lmr_context,
                back.pad,
                back.virtual_address,
                back.segment_length
            ),
            (7, 0, 0x1000_0000_0000, 4096)
        );
        assert_eq!(
            lmr20(&t12(1, 0, u64::from(u32::MAX)))
                .unwrap()
                .segment_length,
            u32::MAX
        );
        assert!(lmr20(&t12(1, 0, u64::from(u32::MAX) + 1)).is_none());
    }

    #[test]
    fn rmr_triplet_takes_the_target_address() {
        let r = v1::DAT_RMR_TRIPLET {
            rmr_context: 9,
            pad: 1,
            target_address: 0xabc0,
            segment_length: 100,
        };
        let t = rmr20(&r).unwrap();
        assert_eq!(
            (t.rmr_context, t.virtual_address, t.segment_length),
            (9, 0xabc0, 100)
        );
        assert!(rmr20(&v1::DAT_RMR_TRIPLET {
            segment_length: 1 << 32,
            ..r
        })
        .is_none());
    }

    #[test]
    fn segments_on_the_stack_and_beyond() {
        for n in [
            0,
            1,
            3,
            STACK_SEGMENTS,
            STACK_SEGMENTS + 1,
            3 * STACK_SEGMENTS,
        ] {
            let given: Vec<_> = (0..n)
                .map(|i| t12(i as u32, 8 * i as u64, i as u64 + 1))
                .collect();
            let mut room = Segments20::new();
            let got = room.convert(&given, 3).unwrap();
            assert_eq!(got.len(), n);
            for (i, s) in got.iter().enumerate() {
                assert_eq!(
                    (s.lmr_context, s.virtual_address, s.segment_length),
                    (i as u32, 8 * i as u64, i as u32 + 1)
                );
            }
            assert_eq!(
                room.heap.capacity() != 0,
                n > STACK_SEGMENTS,
                "{n} segments"
            );
        }
    }

    #[test]
    fn a_long_segment_names_its_argument() {
        let given = [t12(1, 0, 8), t12(2, 0, 1 << 40)];
        let e = Segments20::new().convert(&given, 3).err().unwrap();
        assert_eq!(
            (e.kind, e.sub),
            (Type::DAT_INVALID_PARAMETER, Sub::DAT_INVALID_ARG3)
        );
        let many: Vec<_> = (0..STACK_SEGMENTS + 2)
            .map(|i| t12(1, 0, if i == 5 { 1 << 33 } else { 1 }))
            .collect();
        let e = Segments20::new().convert(&many, 2).err().unwrap();
        assert_eq!(
            (e.kind, e.sub),
            (Type::DAT_INVALID_PARAMETER, Sub::DAT_INVALID_ARG2)
        );
    }

    #[test]
    fn reading_checks_the_pointer_and_count() {
        let mut room = Segments20::new();
        // SAFETY: NULL with a count, and a negative count: refused before any read.
        let e = unsafe { room.read(std::ptr::null(), 2, 3) }.err().unwrap();
        assert_eq!(e.sub, Sub::DAT_INVALID_ARG3);
        let one = [t12(4, 16, 32)];
        // SAFETY: as above.
        let e = unsafe { room.read(one.as_ptr(), -1, 3) }.err().unwrap();
        assert_eq!(e.sub, Sub::DAT_INVALID_ARG3);
        // SAFETY: one triplet there.
        let got = unsafe { room.read(one.as_ptr(), 1, 3) }.unwrap();
        assert_eq!((got[0].lmr_context, got[0].segment_length), (4, 32));
    }
}
