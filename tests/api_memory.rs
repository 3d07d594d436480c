//! PZ, LMR, RMR and SRQ through the exported functions: every handle parameter refuses NULL,
//! garbage, freed and wrong-type handles with the subtype naming it; out-pointers, enum and
//! flag values name their position; the in-use rules; the happy paths.

use std::ptr::null_mut;
use std::sync::Arc;

use dat::abi::*;
use dat::api::{ep::*, evd::*, ia::*, lmr::*, pz::*, rmr::*, srq::*};
use dat::error::{DatError, Sub, Type};
use dat::objects::ep::Ep;
use dat::objects::lmr::{self as lmr_obj, AccessError, Lmr};
use dat::objects::pz::Pz;

const OK: DAT_RETURN = 0;
const GARBAGE: usize = 0x1234;
const ALL_PRIV: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
const LOCAL_PRIV: u32 = lmr_obj::PRIV_LOCAL_READ | lmr_obj::PRIV_LOCAL_WRITE;
const VIRTUAL: DAT_MEM_TYPE = dat_mem_type::DAT_MEM_TYPE_VIRTUAL as DAT_MEM_TYPE;
const MEM_LMR: DAT_MEM_TYPE = dat_mem_type::DAT_MEM_TYPE_LMR as DAT_MEM_TYPE;
const VA: DAT_VA_TYPE = dat_va_type::DAT_VA_TYPE_VA as DAT_VA_TYPE;
const ZB: DAT_VA_TYPE = dat_va_type::DAT_VA_TYPE_ZB as DAT_VA_TYPE;

fn arg(n: u8) -> DAT_RETURN {
    DatError::invalid_arg(n).code()
}
fn bad(sub: Sub) -> DAT_RETURN {
    DatError::invalid_handle(sub).code()
}
fn state(sub: Sub) -> DAT_RETURN {
    DatError::invalid_state(sub).code()
}
fn bare(kind: Type) -> DAT_RETURN {
    DatError::bare(kind).code()
}
fn zero<T>() -> T {
    // SAFETY: only used for the plain-data DAT structs.
    unsafe { std::mem::zeroed() }
}
fn cookie(v: u64) -> DAT_CONTEXT {
    DAT_CONTEXT { as_64: v }
}
fn va(buf: &mut [u8]) -> DAT_REGION_DESCRIPTION {
    DAT_REGION_DESCRIPTION {
        for_va: buf.as_mut_ptr() as DAT_PVOID,
    }
}
fn triplet(buf: &[u8], len: u32, ctx: DAT_LMR_CONTEXT) -> DAT_LMR_TRIPLET {
    DAT_LMR_TRIPLET {
        virtual_address: buf.as_ptr() as u64,
        segment_length: len,
        lmr_context: ctx,
    }
}

struct Ia(DAT_IA_HANDLE);

impl Ia {
    fn open() -> Ia {
        let mut async_evd: DAT_EVD_HANDLE = null_mut();
        let mut ia = null_mut();
        let rc = unsafe {
            dat_ia_openv(
                c"tcp-lo".as_ptr() as DAT_NAME_PTR,
                8,
                &mut async_evd,
                &mut ia,
                2,
                0,
                1,
            )
        };
        assert_eq!(rc, OK);
        Ia(ia)
    }
    fn pz(&self) -> DAT_PZ_HANDLE {
        let mut pz = null_mut();
        assert_eq!(unsafe { dat_pz_create(self.0, &mut pz) }, OK);
        pz
    }
    fn lmr(
        &self,
        pz: DAT_PZ_HANDLE,
        buf: &mut [u8],
        privileges: u32,
    ) -> (DAT_LMR_HANDLE, DAT_LMR_CONTEXT) {
        let (mut lmr, mut ctx) = (null_mut(), 0);
        let rc = unsafe {
            dat_lmr_create(
                self.0,
                VIRTUAL,
                va(buf),
                buf.len() as u64,
                pz,
                privileges,
                VA,
                &mut lmr,
                &mut ctx,
                null_mut(),
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(rc, OK);
        (lmr, ctx)
    }
    fn rmr(&self, pz: DAT_PZ_HANDLE) -> DAT_RMR_HANDLE {
        let mut rmr = null_mut();
        assert_eq!(unsafe { dat_rmr_create(pz, &mut rmr) }, OK);
        rmr
    }
    fn srq(&self, pz: DAT_PZ_HANDLE, dtos: i32, iov: i32) -> DAT_SRQ_HANDLE {
        let mut srq = null_mut();
        let mut attr = DAT_SRQ_ATTR {
            max_recv_dtos: dtos,
            max_recv_iov: iov,
            low_watermark: DAT_SRQ_LW_DEFAULT,
        };
        assert_eq!(
            unsafe { dat_srq_create(self.0, pz, &mut attr, &mut srq) },
            OK
        );
        srq
    }
    /// An EP of zone `pz` with a DTO EVD for both queues; `unsignalled` allows unsignalled requests.
    fn ep(&self, pz: DAT_PZ_HANDLE, unsignalled: bool) -> (DAT_EP_HANDLE, DAT_EVD_HANDLE) {
        let mut evd = null_mut();
        let mut ep = null_mut();
        unsafe {
            assert_eq!(
                dat_evd_create(
                    self.0,
                    16,
                    null_mut(),
                    dat_evd_flags::DAT_EVD_DTO_FLAG as u32,
                    &mut evd
                ),
                OK
            );
            let mut attr = dat::objects::ep::default_attr();
            if unsignalled {
                attr.request_completion_flags =
                    dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
            }
            assert_eq!(
                dat_ep_create(self.0, pz, evd, evd, null_mut(), &attr, &mut ep),
                OK
            );
        }
        (ep, evd)
    }
}

impl Drop for Ia {
    fn drop(&mut self) {
        unsafe {
            dat_ia_close(
                self.0,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        };
    }
}

/// Handles that are dead or of the wrong kind for each parameter kind.
struct Dead {
    ia: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    lmr: DAT_LMR_HANDLE,
    rmr: DAT_RMR_HANDLE,
    srq: DAT_SRQ_HANDLE,
    ep: DAT_EP_HANDLE,
}

fn dead() -> Dead {
    let closed = Ia::open();
    let ia = closed.0;
    drop(closed);
    let ia_ = Ia::open();
    let pz = ia_.pz();
    let mut buf = vec![0u8; 64];
    let (lmr, _) = ia_.lmr(pz, &mut buf, ALL_PRIV);
    let rmr = ia_.rmr(pz);
    let srq = ia_.srq(pz, 4, 1);
    let (ep, _) = ia_.ep(pz, false);
    unsafe {
        assert_eq!(dat_ep_free(ep), OK);
        assert_eq!(dat_srq_free(srq), OK);
        assert_eq!(dat_rmr_free(rmr), OK);
        assert_eq!(dat_lmr_free(lmr), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
    Dead {
        ia,
        pz,
        lmr,
        rmr,
        srq,
        ep,
    }
}

/// Calls `f` with NULL, garbage, a freed handle of the right kind and a live handle of the
/// wrong kind, and expects `DAT_INVALID_HANDLE` with `sub` each time.
fn refuses(
    name: &str,
    sub: Sub,
    freed: DAT_HANDLE,
    wrong: DAT_HANDLE,
    mut f: impl FnMut(DAT_HANDLE) -> DAT_RETURN,
) {
    for (what, h) in [
        ("NULL", null_mut()),
        ("garbage", GARBAGE as DAT_HANDLE),
        ("freed", freed),
        ("wrong type", wrong),
    ] {
        assert_eq!(f(h), bad(sub), "{name}: {what} handle");
    }
}

#[test]
fn every_handle_parameter_refuses_bad_handles() {
    let d = dead();
    let ia = Ia::open();
    let pz = ia.pz();
    let mut buf = vec![0u8; 256];
    let (lmr, ctx) = ia.lmr(pz, &mut buf, ALL_PRIV);
    let rmr = ia.rmr(pz);
    let srq = ia.srq(pz, 4, 2);
    let (ep, _) = ia.ep(pz, false);
    let seg = triplet(&buf, 16, ctx);
    let (w_ia, w_other) = (pz as DAT_HANDLE, ia.0);
    use dat::abi::dat_return_subtype::*;
    unsafe {
        let mut h: DAT_HANDLE = null_mut();
        let (mut c1, mut c2, mut len, mut addr) = (0u32, 0u32, 0u64, 0u64);
        refuses("pz_create", DAT_INVALID_HANDLE_IA, d.ia, w_ia, |x| {
            dat_pz_create(x, &mut h)
        });
        refuses("pz_query", DAT_INVALID_HANDLE_PZ, d.pz, w_other, |x| {
            dat_pz_query(x, DAT_PZ_FIELD_ALL, &mut zero())
        });
        refuses("pz_free", DAT_INVALID_HANDLE_PZ, d.pz, w_other, |x| {
            dat_pz_free(x)
        });
        refuses("lmr_create ia", DAT_INVALID_HANDLE_IA, d.ia, w_ia, |x| {
            dat_lmr_create(
                x,
                VIRTUAL,
                va(&mut [0u8; 8]),
                8,
                pz,
                ALL_PRIV,
                VA,
                &mut h,
                &mut c1,
                &mut c2,
                &mut len,
                &mut addr,
            )
        });
        let mut b8 = [0u8; 8];
        refuses("lmr_create pz", DAT_INVALID_HANDLE_PZ, d.pz, w_other, |x| {
            dat_lmr_create(
                ia.0,
                VIRTUAL,
                va(&mut b8),
                8,
                x,
                ALL_PRIV,
                VA,
                &mut h,
                &mut c1,
                &mut c2,
                &mut len,
                &mut addr,
            )
        });
        refuses(
            "lmr_create region lmr",
            DAT_INVALID_HANDLE_LMR,
            d.lmr,
            w_other,
            |x| {
                let region = DAT_REGION_DESCRIPTION { for_lmr_handle: x };
                dat_lmr_create(
                    ia.0, MEM_LMR, region, 0, pz, ALL_PRIV, VA, &mut h, &mut c1, &mut c2, &mut len,
                    &mut addr,
                )
            },
        );
        refuses("lmr_query", DAT_INVALID_HANDLE_LMR, d.lmr, w_other, |x| {
            dat_lmr_query(x, dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32, &mut zero())
        });
        refuses("lmr_free", DAT_INVALID_HANDLE_LMR, d.lmr, w_other, |x| {
            dat_lmr_free(x)
        });
        refuses(
            "lmr_sync_rdma_read",
            DAT_INVALID_HANDLE_IA,
            d.ia,
            w_ia,
            |x| dat_lmr_sync_rdma_read(x, &seg, 1),
        );
        refuses(
            "lmr_sync_rdma_write",
            DAT_INVALID_HANDLE_IA,
            d.ia,
            w_ia,
            |x| dat_lmr_sync_rdma_write(x, &seg, 1),
        );
        refuses("rmr_create", DAT_INVALID_HANDLE_PZ, d.pz, w_other, |x| {
            dat_rmr_create(x, &mut h)
        });
        refuses(
            "rmr_create_for_ep",
            DAT_INVALID_HANDLE_PZ,
            d.pz,
            w_other,
            |x| dat_rmr_create_for_ep(x, &mut h),
        );
        refuses("rmr_query", DAT_INVALID_HANDLE_RMR, d.rmr, w_other, |x| {
            dat_rmr_query(x, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, &mut zero())
        });
        refuses(
            "rmr_bind rmr",
            DAT_INVALID_HANDLE_RMR,
            d.rmr,
            w_other,
            |x| dat_rmr_bind(x, lmr, &seg, ALL_PRIV, VA, ep, cookie(1), 0, &mut c1),
        );
        refuses(
            "rmr_bind lmr",
            DAT_INVALID_HANDLE_LMR,
            d.lmr,
            w_other,
            |x| dat_rmr_bind(rmr, x, &seg, ALL_PRIV, VA, ep, cookie(1), 0, &mut c1),
        );
        refuses("rmr_bind ep", DAT_INVALID_HANDLE_EP, d.ep, w_other, |x| {
            dat_rmr_bind(rmr, lmr, &seg, ALL_PRIV, VA, x, cookie(1), 0, &mut c1)
        });
        refuses("rmr_free", DAT_INVALID_HANDLE_RMR, d.rmr, w_other, |x| {
            dat_rmr_free(x)
        });
        let mut attr = DAT_SRQ_ATTR {
            max_recv_dtos: 4,
            max_recv_iov: 1,
            low_watermark: 0,
        };
        refuses("srq_create ia", DAT_INVALID_HANDLE_IA, d.ia, w_ia, |x| {
            dat_srq_create(x, pz, &mut attr, &mut h)
        });
        let mut attr = DAT_SRQ_ATTR {
            max_recv_dtos: 4,
            max_recv_iov: 1,
            low_watermark: 0,
        };
        refuses("srq_create pz", DAT_INVALID_HANDLE_PZ, d.pz, w_other, |x| {
            dat_srq_create(ia.0, x, &mut attr, &mut h)
        });
        refuses("srq_free", DAT_INVALID_HANDLE_SRQ, d.srq, w_other, |x| {
            dat_srq_free(x)
        });
        let mut s = seg;
        refuses(
            "srq_post_recv",
            DAT_INVALID_HANDLE_SRQ,
            d.srq,
            w_other,
            |x| dat_srq_post_recv(x, 1, &mut s, cookie(1)),
        );
        refuses("srq_query", DAT_INVALID_HANDLE_SRQ, d.srq, w_other, |x| {
            dat_srq_query(x, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, &mut zero())
        });
        refuses("srq_resize", DAT_INVALID_HANDLE_SRQ, d.srq, w_other, |x| {
            dat_srq_resize(x, 4)
        });
        refuses("srq_set_lw", DAT_INVALID_HANDLE_SRQ, d.srq, w_other, |x| {
            dat_srq_set_lw(x, 0)
        });
        // A handle of another kind for each object parameter, not only the IA's.
        assert_eq!(dat_pz_free(lmr), bad(DAT_INVALID_HANDLE_PZ));
        assert_eq!(dat_lmr_free(rmr), bad(DAT_INVALID_HANDLE_LMR));
        assert_eq!(dat_rmr_free(srq), bad(DAT_INVALID_HANDLE_RMR));
        assert_eq!(dat_srq_free(pz), bad(DAT_INVALID_HANDLE_SRQ));
        assert_eq!(
            dat_rmr_bind(rmr, lmr, &seg, ALL_PRIV, VA, srq, cookie(1), 0, &mut c1),
            bad(DAT_INVALID_HANDLE_EP)
        );
        // Nothing was freed by the refused calls.
        assert_eq!(dat_ep_free(ep), OK);
        assert_eq!(dat_srq_free(srq), OK);
        assert_eq!(dat_rmr_free(rmr), OK);
        assert_eq!(dat_lmr_free(lmr), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}

#[test]
fn pz_create_query_free_and_in_use() {
    let ia = Ia::open();
    unsafe {
        assert_eq!(dat_pz_create(ia.0, null_mut()), arg(2));
        let pz = ia.pz();
        let mut p: DAT_PZ_PARAM = zero();
        assert_eq!(dat_pz_query(pz, DAT_PZ_FIELD_ALL, null_mut()), arg(3));
        assert_eq!(dat_pz_query(pz, DAT_PZ_FIELD_ALL << 1, &mut p), arg(2));
        assert_eq!(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &mut p), OK);
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(dat_pz_query(pz, 0, &mut p), OK);

        let in_use = state(Sub::DAT_INVALID_STATE_PZ_IN_USE);
        let mut buf = vec![0u8; 64];
        let (lmr, _) = ia.lmr(pz, &mut buf, ALL_PRIV);
        assert_eq!(dat_pz_free(pz), in_use);
        assert_eq!(dat_lmr_free(lmr), OK);
        let rmr = ia.rmr(pz);
        assert_eq!(dat_pz_free(pz), in_use);
        assert_eq!(dat_rmr_free(rmr), OK);
        let srq = ia.srq(pz, 4, 1);
        assert_eq!(dat_pz_free(pz), in_use);
        assert_eq!(dat_srq_free(srq), OK);
        let (ep, _) = ia.ep(pz, false);
        assert_eq!(dat_pz_free(pz), in_use);
        assert_eq!(dat_ep_free(ep), OK);
        assert_eq!(dat_pz_free(pz), OK);
        assert_eq!(dat_pz_free(pz), bad(Sub::DAT_INVALID_HANDLE_PZ));
        assert_eq!(
            dat_pz_query(pz, DAT_PZ_FIELD_ALL, &mut p),
            bad(Sub::DAT_INVALID_HANDLE_PZ)
        );
    }
}

#[test]
fn lmr_create_checks_every_parameter() {
    let ia = Ia::open();
    let other = Ia::open();
    let pz = ia.pz();
    let other_pz = other.pz();
    let mut buf = vec![0u8; 4096];
    let region = va(&mut buf);
    let mut h = null_mut();
    unsafe {
        let create = |mem_type, region, length, pz, privileges, va_type, h: *mut DAT_LMR_HANDLE| {
            dat_lmr_create(
                ia.0,
                mem_type,
                region,
                length,
                pz,
                privileges,
                va_type,
                h,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(create(7, region, 4096, pz, ALL_PRIV, VA, &mut h), arg(2));
        assert_eq!(
            create(
                VIRTUAL,
                DAT_REGION_DESCRIPTION { for_va: null_mut() },
                4096,
                pz,
                ALL_PRIV,
                VA,
                &mut h
            ),
            arg(3)
        );
        assert_eq!(create(VIRTUAL, region, 0, pz, ALL_PRIV, VA, &mut h), arg(4));
        assert_eq!(
            create(VIRTUAL, region, u64::MAX, pz, ALL_PRIV, VA, &mut h),
            arg(4)
        );
        assert_eq!(
            create(VIRTUAL, region, 1 << 40, pz, ALL_PRIV, VA, &mut h),
            arg(4)
        );
        assert_eq!(create(VIRTUAL, region, 4096, pz, 0x04, VA, &mut h), arg(6));
        assert_eq!(create(VIRTUAL, region, 4096, pz, 0x80, VA, &mut h), arg(6));
        assert_eq!(
            create(VIRTUAL, region, 4096, pz, ALL_PRIV, 5, &mut h),
            arg(7)
        );
        assert_eq!(
            create(VIRTUAL, region, 4096, pz, ALL_PRIV, VA, null_mut()),
            arg(8)
        );
        // A PZ of another IA is not a PZ of this one.
        assert_eq!(
            create(VIRTUAL, region, 4096, other_pz, ALL_PRIV, VA, &mut h),
            bad(Sub::DAT_INVALID_HANDLE_PZ)
        );
        // What we do not support is a model question.
        let shared = dat_mem_type::DAT_MEM_TYPE_SHARED_VIRTUAL as DAT_MEM_TYPE;
        assert_eq!(
            create(shared, region, 4096, pz, ALL_PRIV, VA, &mut h),
            bare(Type::DAT_MODEL_NOT_SUPPORTED)
        );
        assert_eq!(
            create(VIRTUAL, region, 4096, pz, ALL_PRIV, ZB, &mut h),
            bare(Type::DAT_MODEL_NOT_SUPPORTED)
        );
        // An LMR of another IA cannot describe a region of this one.
        let mut obuf = vec![0u8; 64];
        let (olmr, _) = other.lmr(other_pz, &mut obuf, ALL_PRIV);
        assert_eq!(
            create(
                MEM_LMR,
                DAT_REGION_DESCRIPTION {
                    for_lmr_handle: olmr
                },
                0,
                pz,
                ALL_PRIV,
                VA,
                &mut h
            ),
            bad(Sub::DAT_INVALID_HANDLE_LMR)
        );
        assert_eq!(ia_children_ok(&ia), 1);
    }
}

/// The IA holds only the PZ the test made: refused creations left nothing behind.
fn ia_children_ok(ia: &Ia) -> usize {
    dat::handle::get::<dat::objects::ia::Ia>(ia.0)
        .unwrap()
        .live_children()
}

#[test]
fn lmr_create_query_contexts_and_free() {
    let ia = Ia::open();
    let pz = ia.pz();
    let pz2 = ia.pz();
    let mut buf = vec![0u8; 4096];
    unsafe {
        let (mut lmr, mut lctx, mut rctx, mut len, mut addr) = (null_mut(), 0, 0, 0, 0);
        let rc = dat_lmr_create(
            ia.0,
            VIRTUAL,
            va(&mut buf),
            4096,
            pz,
            ALL_PRIV,
            VA,
            &mut lmr,
            &mut lctx,
            &mut rctx,
            &mut len,
            &mut addr,
        );
        assert_eq!(rc, OK);
        assert_ne!(lctx, 0);
        assert_ne!(rctx, 0);
        assert_eq!((len, addr), (4096, buf.as_ptr() as u64));
        let mut p: DAT_LMR_PARAM = zero();
        assert_eq!(
            dat_lmr_query(
                lmr,
                dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32,
                null_mut()
            ),
            arg(3)
        );
        assert_eq!(dat_lmr_query(lmr, 1 << 11, &mut p), arg(2));
        assert_eq!(
            dat_lmr_query(lmr, dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(p.mem_type, VIRTUAL);
        assert_eq!(p.region_desc.for_va, buf.as_mut_ptr() as DAT_PVOID);
        assert_eq!(p.length, 4096);
        assert_eq!(p.pz_handle, pz);
        assert_eq!(p.mem_priv, ALL_PRIV);
        assert_eq!(p.va_type, VA);
        assert_eq!((p.lmr_context, p.rmr_context), (lctx, rctx));
        assert_eq!(
            (p.registered_size, p.registered_address),
            (4096, buf.as_ptr() as u64)
        );

        // Without a remote privilege no rmr_context is generated.
        let (mut local, mut lctx2, mut rctx2) = (null_mut(), 0, 7);
        let rc = dat_lmr_create(
            ia.0,
            VIRTUAL,
            va(&mut buf[..64]),
            64,
            pz,
            LOCAL_PRIV,
            VA,
            &mut local,
            &mut lctx2,
            &mut rctx2,
            null_mut(),
            null_mut(),
        );
        assert_eq!(rc, OK);
        assert_eq!(rctx2, 0);
        assert_ne!(lctx2, 0);
        assert_ne!(lctx2, lctx);
        assert!(Lmr::lookup_rmr_context(lctx2).is_none());
        assert!(Lmr::by_context(lctx2).is_some());

        // The transports find and check regions by key.
        let region = Lmr::lookup_rmr_context(rctx).unwrap();
        let zone: Arc<Pz> = dat::handle::get::<Pz>(pz).unwrap();
        let zone2: Arc<Pz> = dat::handle::get::<Pz>(pz2).unwrap();
        let base = buf.as_ptr() as u64;
        assert_eq!(
            region.check_local(base, 4096, lmr_obj::PRIV_LOCAL_WRITE, &zone),
            Ok(())
        );
        assert_eq!(
            region.check_local(base + 1, 4096, lmr_obj::PRIV_LOCAL_WRITE, &zone),
            Err(AccessError::Bounds)
        );
        assert_eq!(
            region.check_local(base - 1, 1, lmr_obj::PRIV_LOCAL_READ, &zone),
            Err(AccessError::Bounds)
        );
        assert_eq!(
            region.check_local(u64::MAX, 2, lmr_obj::PRIV_LOCAL_READ, &zone),
            Err(AccessError::Bounds)
        );
        assert_eq!(
            region.check_local(base, 1, lmr_obj::PRIV_LOCAL_READ, &zone2),
            Err(AccessError::Protection)
        );
        assert_eq!(
            region.check_remote(base, 8, lmr_obj::PRIV_REMOTE_WRITE, &zone),
            Ok(())
        );
        let local_region = Lmr::by_context(lctx2).unwrap();
        assert_eq!(
            local_region.check_remote(base, 8, lmr_obj::PRIV_REMOTE_READ, &zone),
            Err(AccessError::Privilege)
        );
        assert_eq!(
            Lmr::check_segment(lctx ^ 0x5a5a, base, 1, 0, &zone).err(),
            Some(AccessError::UnknownContext)
        );
        drop((region, local_region, zone, zone2));

        // An LMR over an LMR: the parent's region, its own zone, privileges and keys.
        let (mut child, mut cctx, mut crctx, mut clen, mut caddr) = (null_mut(), 0, 0, 0, 0);
        let region = DAT_REGION_DESCRIPTION {
            for_lmr_handle: lmr,
        };
        let rc = dat_lmr_create(
            ia.0,
            MEM_LMR,
            region,
            12345,
            pz2,
            lmr_obj::PRIV_LOCAL_READ,
            VA,
            &mut child,
            &mut cctx,
            &mut crctx,
            &mut clen,
            &mut caddr,
        );
        assert_eq!(rc, OK);
        assert_eq!((clen, caddr), (4096, buf.as_ptr() as u64));
        assert_ne!(cctx, lctx);
        assert_eq!(crctx, 0);
        assert_eq!(
            dat_lmr_query(child, dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.mem_type, MEM_LMR);
        assert_eq!(p.region_desc.for_lmr_handle, lmr);
        assert_eq!(p.pz_handle, pz2);
        assert_eq!(p.mem_priv, lmr_obj::PRIV_LOCAL_READ);
        assert_eq!(dat_lmr_free(lmr), state(Sub::DAT_INVALID_STATE_LMR_IN_USE));

        // Freed regions are gone from the key map too.
        assert_eq!(dat_lmr_free(child), OK);
        assert_eq!(dat_lmr_free(local), OK);
        assert_eq!(dat_lmr_free(lmr), OK);
        assert!(Lmr::by_context(lctx).is_none());
        assert!(Lmr::lookup_rmr_context(rctx).is_none());
        assert_eq!(dat_lmr_free(lmr), bad(Sub::DAT_INVALID_HANDLE_LMR));
        assert_eq!(
            dat_lmr_query(lmr, 0, &mut p),
            bad(Sub::DAT_INVALID_HANDLE_LMR)
        );
        assert_eq!(dat_pz_free(pz2), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}

#[test]
fn lmr_sync_checks_segments() {
    let ia = Ia::open();
    let other = Ia::open();
    let pz = ia.pz();
    let pz2 = ia.pz();
    let mut a = vec![0u8; 256];
    let mut b = vec![0u8; 256];
    let (la, ca) = ia.lmr(pz, &mut a, ALL_PRIV);
    let (lb, cb) = ia.lmr(pz2, &mut b, lmr_obj::PRIV_LOCAL_READ);
    let opz = other.pz();
    let mut o = vec![0u8; 64];
    let (_, co) = other.lmr(opz, &mut o, ALL_PRIV);
    for sync in [dat_lmr_sync_rdma_read, dat_lmr_sync_rdma_write] {
        unsafe {
            // Segments of several regions and zones in one call.
            let segs = [triplet(&a, 256, ca), triplet(&b[16..], 32, cb)];
            assert_eq!(sync(ia.0, segs.as_ptr(), 2), OK);
            assert_eq!(sync(ia.0, null_mut(), 0), OK);
            assert_eq!(sync(ia.0, null_mut(), 1), arg(2));
            assert_eq!(sync(ia.0, &triplet(&a, 257, ca), 1), arg(2));
            assert_eq!(sync(ia.0, &triplet(&a[1..], 256, ca), 1), arg(2));
            assert_eq!(sync(ia.0, &triplet(&a, 1, ca ^ 0x1111), 1), arg(2));
            // Another IA's region is not ours to sync.
            assert_eq!(sync(ia.0, &triplet(&o, 1, co), 1), arg(2));
            assert_eq!(sync(ia.0, segs.as_ptr(), u64::MAX), arg(3));
        }
    }
    unsafe {
        assert_eq!(dat_lmr_free(la), OK);
        assert_eq!(dat_lmr_free(lb), OK);
        assert_eq!(dat_lmr_sync_rdma_read(ia.0, &triplet(&a, 1, ca), 1), arg(2));
    }
}

#[test]
fn rmr_create_query_free() {
    let ia = Ia::open();
    let pz = ia.pz();
    unsafe {
        assert_eq!(dat_rmr_create(pz, null_mut()), arg(2));
        assert_eq!(dat_rmr_create_for_ep(pz, null_mut()), arg(2));
        let rmr = ia.rmr(pz);
        let mut for_ep = null_mut();
        assert_eq!(dat_rmr_create_for_ep(pz, &mut for_ep), OK);
        assert_ne!(rmr, for_ep);
        let mut p: DAT_RMR_PARAM = zero();
        assert_eq!(
            dat_rmr_query(
                rmr,
                dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32,
                null_mut()
            ),
            arg(3)
        );
        assert_eq!(dat_rmr_query(rmr, 0x80, &mut p), arg(2));
        assert_eq!(
            dat_rmr_query(rmr, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(p.pz_handle, pz);
        assert_eq!(p.rmr_context, 0, "unbound");
        assert_eq!(dat_pz_free(pz), state(Sub::DAT_INVALID_STATE_PZ_IN_USE));
        assert_eq!(dat_rmr_free(rmr), OK);
        assert_eq!(dat_rmr_free(rmr), bad(Sub::DAT_INVALID_HANDLE_RMR));
        assert_eq!(
            dat_rmr_query(rmr, 0, &mut p),
            bad(Sub::DAT_INVALID_HANDLE_RMR)
        );
        assert_eq!(dat_rmr_free(for_ep), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}

#[test]
fn rmr_bind_checks_everything_before_the_transport() {
    let ia = Ia::open();
    let other = Ia::open();
    let pz = ia.pz();
    let pz2 = ia.pz();
    let mut buf = vec![0u8; 256];
    let (lmr, ctx) = ia.lmr(pz, &mut buf, ALL_PRIV);
    let (read_only, rctx) = ia.lmr(pz, &mut buf[..128], lmr_obj::PRIV_LOCAL_READ);
    let (lmr2, ctx2) = ia.lmr(pz2, &mut buf[..64], ALL_PRIV);
    let rmr = ia.rmr(pz);
    let (ep, evd) = ia.ep(pz, false);
    let (ep_pz2, _) = ia.ep(pz2, false);
    let (ep_unsig, _) = ia.ep(pz, true);
    let seg = triplet(&buf, 64, ctx);
    let remote = lmr_obj::PRIV_REMOTE_READ | lmr_obj::PRIV_REMOTE_WRITE;
    let mut c = 0u32;
    let invalid_state_unconnected = DatError::invalid_state(dat::objects::ep_state::subtype(
        dat_ep_state::DAT_EP_STATE_UNCONNECTED,
    ))
    .code();
    unsafe {
        let bind =
            |rmr, lmr, seg: *const DAT_LMR_TRIPLET, privs, va_type, ep, flags, c: *mut u32| {
                dat_rmr_bind(rmr, lmr, seg, privs, va_type, ep, cookie(9), flags, c)
            };
        assert_eq!(
            bind(rmr, lmr, null_mut(), remote, VA, ep, 0, &mut c),
            arg(3)
        );
        assert_eq!(bind(rmr, lmr, &seg, 0x04, VA, ep, 0, &mut c), arg(4));
        assert_eq!(bind(rmr, lmr, &seg, remote, 9, ep, 0, &mut c), arg(5));
        let solicited = dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32;
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, ep, solicited, &mut c),
            arg(8)
        );
        assert_eq!(bind(rmr, lmr, &seg, remote, VA, ep, 0x1000, &mut c), arg(8));
        assert_eq!(bind(rmr, lmr, &seg, remote, VA, ep, 0, null_mut()), arg(9));
        // The triplet must lie inside the LMR and name it.
        assert_eq!(
            bind(
                rmr,
                lmr,
                &triplet(&buf, 257, ctx),
                remote,
                VA,
                ep,
                0,
                &mut c
            ),
            arg(3)
        );
        assert_eq!(
            bind(
                rmr,
                lmr,
                &triplet(&buf[1..], 256, ctx),
                remote,
                VA,
                ep,
                0,
                &mut c
            ),
            arg(3)
        );
        assert_eq!(
            bind(rmr, lmr, &triplet(&buf, 8, rctx), remote, VA, ep, 0, &mut c),
            arg(3)
        );
        assert_eq!(
            bind(rmr, lmr, &seg, remote, ZB, ep, 0, &mut c),
            bare(Type::DAT_MODEL_NOT_SUPPORTED)
        );
        // Remote read needs local read, remote write local write, and so do the remote
        // atomics (which write).
        assert_eq!(
            bind(
                rmr,
                read_only,
                &triplet(&buf, 8, rctx),
                lmr_obj::PRIV_REMOTE_WRITE,
                VA,
                ep,
                0,
                &mut c
            ),
            DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()
        );
        assert_eq!(
            bind(
                rmr,
                read_only,
                &triplet(&buf, 8, rctx),
                lmr_obj::PRIV_REMOTE_ATOMIC,
                VA,
                ep,
                0,
                &mut c
            ),
            DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()
        );
        // Zones: the LMR's and the EP's must be the RMR's.
        assert_eq!(
            bind(
                rmr,
                lmr2,
                &triplet(&buf, 8, ctx2),
                remote,
                VA,
                ep,
                0,
                &mut c
            ),
            bare(Type::DAT_PROTECTION_VIOLATION)
        );
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, ep_pz2, 0, &mut c),
            bare(Type::DAT_PROTECTION_VIOLATION)
        );
        // UNSIGNALLED only where the EP's request completion flags allow it.
        let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, ep, unsignalled, &mut c),
            arg(8)
        );
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, ep_unsig, unsignalled, &mut c),
            invalid_state_unconnected
        );
        // An unconnected EP cannot carry a bind.
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, ep, 0, &mut c),
            invalid_state_unconnected
        );
        assert_eq!(
            bind(
                rmr,
                read_only,
                &triplet(&buf, 8, rctx),
                lmr_obj::PRIV_REMOTE_READ,
                VA,
                ep,
                0,
                &mut c
            ),
            invalid_state_unconnected
        );
        // A zero length unbinds: the triplet is not checked against the region.
        let unbind = DAT_LMR_TRIPLET {
            segment_length: 0,
            ..triplet(&buf, 0, 0)
        };
        assert_eq!(
            bind(rmr, lmr, &unbind, 0, VA, ep, 0, &mut c),
            invalid_state_unconnected
        );
        // An LMR or EP of another IA.
        let opz = other.pz();
        let mut obuf = vec![0u8; 64];
        let (olmr, octx) = other.lmr(opz, &mut obuf, ALL_PRIV);
        let (oep, _) = other.ep(opz, false);
        assert_eq!(
            bind(
                rmr,
                olmr,
                &triplet(&obuf, 8, octx),
                remote,
                VA,
                ep,
                0,
                &mut c
            ),
            bad(Sub::DAT_INVALID_HANDLE_LMR)
        );
        assert_eq!(
            bind(rmr, lmr, &seg, remote, VA, oep, 0, &mut c),
            bad(Sub::DAT_INVALID_HANDLE_EP)
        );

        // On a DISCONNECTED EP the bind is flushed to the request EVD, as a bind completion
        // (OpenFabrics' event for binds).
        let ep_obj = dat::handle::get::<Ep>(ep).unwrap();
        ep_obj.inner.lock().state = dat_ep_state::DAT_EP_STATE_DISCONNECTED;
        c = 77;
        assert_eq!(bind(rmr, lmr, &seg, remote, VA, ep, 0, &mut c), OK);
        assert_eq!(c, 0, "the RMR stays unbound");
        let mut event: DAT_EVENT = zero();
        assert_eq!(dat_evd_dequeue(evd, &mut event), OK);
        assert_eq!(
            event.event_number,
            dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as DAT_EVENT_NUMBER
        );
        let data = event.event_data.rmr_completion_event_data;
        assert_eq!(data.rmr_handle, rmr);
        assert_eq!(data.user_cookie.as_64, 9);
        assert_eq!(
            data.status,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED as DAT_DTO_COMPLETION_STATUS
        );
        let mut p: DAT_RMR_PARAM = zero();
        assert_eq!(
            dat_rmr_query(rmr, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.rmr_context, 0);

        // On a CONNECTED EP of the TCP transport the window is bound at once: a new context,
        // the completion, and the LMR in use by the RMR until it is freed.
        ep_obj.inner.lock().state = dat_ep_state::DAT_EP_STATE_CONNECTED;
        assert_eq!(bind(rmr, lmr, &seg, remote, VA, ep, 0, &mut c), OK);
        assert_ne!(c, 0);
        assert_eq!(dat_evd_dequeue(evd, &mut event), OK);
        assert_eq!(
            event.event_number,
            dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as DAT_EVENT_NUMBER
        );
        assert_eq!(
            event.event_data.rmr_completion_event_data.status,
            dat_dto_completion_status::DAT_DTO_SUCCESS as DAT_DTO_COMPLETION_STATUS
        );
        assert_eq!(
            dat_rmr_query(rmr, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.rmr_context, c);
        ep_obj.inner.lock().state = dat_ep_state::DAT_EP_STATE_UNCONNECTED;
        drop(ep_obj);
        assert_eq!(
            dat_lmr_free(lmr),
            DatError::invalid_state(Sub::DAT_INVALID_STATE_LMR_IN_USE).code()
        );
        assert_eq!(dat_rmr_free(rmr), OK);
        assert_eq!(dat_lmr_free(lmr), OK);
    }
}

#[test]
fn srq_create_checks_attributes() {
    let ia = Ia::open();
    let other = Ia::open();
    let pz = ia.pz();
    let opz = other.pz();
    let mut srq = null_mut();
    unsafe {
        let create = |dtos, iov, lw, out: *mut DAT_SRQ_HANDLE| {
            let mut attr = DAT_SRQ_ATTR {
                max_recv_dtos: dtos,
                max_recv_iov: iov,
                low_watermark: lw,
            };
            dat_srq_create(ia.0, pz, &mut attr, out)
        };
        assert_eq!(create(0, 1, 0, &mut srq), arg(3));
        assert_eq!(create(-1, 1, 0, &mut srq), arg(3));
        assert_eq!(
            create(dat::objects::limits::MAX_RECV_PER_SRQ + 1, 1, 0, &mut srq),
            arg(3)
        );
        assert_eq!(create(4, 0, 0, &mut srq), arg(3));
        assert_eq!(
            create(4, dat::objects::limits::MAX_IOV_SEGMENTS + 1, 0, &mut srq),
            arg(3)
        );
        assert_eq!(create(4, 1, 5, &mut srq), arg(3));
        assert_eq!(create(4, 1, -1, &mut srq), arg(3));
        assert_eq!(create(4, 1, 0, null_mut()), arg(4));
        assert_eq!(dat_srq_create(ia.0, pz, null_mut(), &mut srq), arg(3));
        let mut attr = DAT_SRQ_ATTR {
            max_recv_dtos: 4,
            max_recv_iov: 1,
            low_watermark: 0,
        };
        assert_eq!(
            dat_srq_create(ia.0, opz, &mut attr, &mut srq),
            bad(Sub::DAT_INVALID_HANDLE_PZ)
        );
        assert_eq!(create(4, 3, 0, &mut srq), OK);
        let mut p: DAT_SRQ_PARAM = zero();
        assert_eq!(
            dat_srq_query(
                srq,
                dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32,
                null_mut()
            ),
            arg(3)
        );
        assert_eq!(dat_srq_query(srq, 0x100, &mut p), arg(2));
        assert_eq!(
            dat_srq_query(srq, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(p.pz_handle, pz);
        assert_eq!(
            p.srq_state,
            dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as DAT_SRQ_STATE
        );
        assert_eq!(
            (p.max_recv_dtos, p.max_recv_iov, p.low_watermark),
            (4, 3, 0)
        );
        assert_eq!((p.available_dto_count, p.outstanding_dto_count), (0, 0));
        assert_eq!(dat_srq_free(srq), OK);
        assert_eq!(dat_srq_free(srq), bad(Sub::DAT_INVALID_HANDLE_SRQ));
    }
}

#[test]
fn srq_post_resize_watermark_and_in_use() {
    let ia = Ia::open();
    let pz = ia.pz();
    let pz2 = ia.pz();
    let mut buf = vec![0u8; 256];
    let (lmr, ctx) = ia.lmr(pz, &mut buf, ALL_PRIV);
    let (read_only, rctx) = ia.lmr(pz, &mut buf[..64], lmr_obj::PRIV_LOCAL_READ);
    let (lmr2, ctx2) = ia.lmr(pz2, &mut buf[..64], ALL_PRIV);
    let srq = ia.srq(pz, 3, 2);
    unsafe {
        let mut iov = [triplet(&buf, 128, ctx), triplet(&buf[128..], 128, ctx)];
        assert_eq!(
            dat_srq_post_recv(srq, -1, iov.as_mut_ptr(), cookie(1)),
            arg(2)
        );
        assert_eq!(
            dat_srq_post_recv(srq, 3, iov.as_mut_ptr(), cookie(1)),
            arg(2)
        );
        assert_eq!(dat_srq_post_recv(srq, 1, null_mut(), cookie(1)), arg(3));
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut triplet(&buf, 257, ctx), cookie(1)),
            arg(3)
        );
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut triplet(&buf, 8, rctx), cookie(1)),
            DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()
        );
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut triplet(&buf, 8, ctx ^ 0x77), cookie(1)),
            DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()
        );
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut triplet(&buf, 8, ctx2), cookie(1)),
            DatError::new(Type::DAT_PROTECTION_VIOLATION, Sub::DAT_PROTECTION_WRITE).code()
        );
        assert_eq!(dat_srq_post_recv(srq, 2, iov.as_mut_ptr(), cookie(1)), OK);
        assert_eq!(
            dat_srq_post_recv(srq, 0, null_mut(), cookie(2)),
            OK,
            "a zero-size receive"
        );
        let mut p: DAT_SRQ_PARAM = zero();
        assert_eq!(
            dat_srq_query(srq, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.available_dto_count, 2);
        // Resize: a valid count, never below what is outstanding or the low watermark.
        assert_eq!(dat_srq_resize(srq, 0), arg(2));
        assert_eq!(dat_srq_resize(srq, -5), arg(2));
        assert_eq!(
            dat_srq_resize(srq, dat::objects::limits::MAX_RECV_PER_SRQ + 1),
            arg(2)
        );
        assert_eq!(dat_srq_resize(srq, 1), state(Sub::DAT_NO_SUBTYPE));
        assert_eq!(dat_srq_resize(srq, 2), OK);
        assert_eq!(
            dat_srq_post_recv(srq, 1, iov.as_mut_ptr(), cookie(3)),
            DatError::resources(Sub::DAT_RESOURCE_SRQ).code()
        );
        assert_eq!(dat_srq_resize(srq, 6), OK);
        assert_eq!(dat_srq_post_recv(srq, 1, iov.as_mut_ptr(), cookie(3)), OK);
        // Low watermark: 0 ..= max_recv_dtos.
        assert_eq!(dat_srq_set_lw(srq, -1), arg(2));
        assert_eq!(dat_srq_set_lw(srq, 7), arg(2));
        assert_eq!(dat_srq_set_lw(srq, 5), OK);
        assert_eq!(dat_srq_resize(srq, 4), state(Sub::DAT_NO_SUBTYPE));
        assert_eq!(
            dat_srq_query(srq, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(
            (p.max_recv_dtos, p.low_watermark, p.available_dto_count),
            (6, 5, 3)
        );
        // The posted receives wait in order for the EPs that draw from the queue.
        let queue = dat::handle::get::<dat::objects::srq::Srq>(srq).unwrap();
        assert_eq!(
            queue.take().map(|r| (r.cookie, r.segments.len())),
            Some((1, 2))
        );
        assert_eq!(
            queue.take().map(|r| (r.cookie, r.segments.len())),
            Some((2, 0))
        );
        drop(queue);
        // In use by an EP.
        let mut ep = null_mut();
        assert_eq!(
            dat_ep_create_with_srq(
                ia.0,
                pz,
                null_mut(),
                null_mut(),
                null_mut(),
                srq,
                &dat::objects::ep::default_attr(),
                &mut ep
            ),
            OK
        );
        assert_eq!(dat_srq_free(srq), state(Sub::DAT_INVALID_STATE_SRQ_IN_USE));
        assert_eq!(dat_ep_free(ep), OK);
        assert_eq!(dat_srq_free(srq), OK);
        assert_eq!(
            dat_srq_post_recv(srq, 0, null_mut(), cookie(1)),
            bad(Sub::DAT_INVALID_HANDLE_SRQ)
        );
        for h in [lmr, read_only, lmr2] {
            assert_eq!(dat_lmr_free(h), OK);
        }
    }
}
