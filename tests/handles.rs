//! Every exported function that takes a handle refuses NULL, garbage, freed, freed-and-reused
//! and wrong-type handles with DAT_INVALID_HANDLE and the subtype naming that parameter, and
//! never crashes.

use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cm::*, cno::*, ep::*, evd::*, ia::*, lmr::*, misc::*, pz::*, rmr::*, srq::*};
use dat::error::{DatError, Sub};

const OK: DAT_RETURN = 0;

struct World {
    ia: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    evd: DAT_EVD_HANDLE,
    /// Handles that were live once and are freed now (one of each kind we can free).
    freed: Vec<DAT_HANDLE>,
}

fn open() -> World {
    let mut async_evd: DAT_EVD_HANDLE = null_mut();
    let mut ia: DAT_IA_HANDLE = null_mut();
    unsafe {
        assert_eq!(
            dat_ia_openv(
                c"tcp-lo".as_ptr() as DAT_NAME_PTR,
                8,
                &mut async_evd,
                &mut ia,
                2,
                0,
                1
            ),
            OK
        );
        let mut pz = null_mut();
        assert_eq!(dat_pz_create(ia, &mut pz), OK);
        let flags = dat_evd_flags::DAT_EVD_DTO_FLAG as u32
            | dat_evd_flags::DAT_EVD_CONNECTION_FLAG as u32
            | dat_evd_flags::DAT_EVD_CR_FLAG as u32;
        let mut evd = null_mut();
        assert_eq!(dat_evd_create(ia, 8, null_mut(), flags, &mut evd), OK);
        // Freed handles: a PZ and an EVD, then new objects that may reuse their slots.
        let mut freed = Vec::new();
        let mut pz2 = null_mut();
        assert_eq!(dat_pz_create(ia, &mut pz2), OK);
        assert_eq!(dat_pz_free(pz2), OK);
        freed.push(pz2);
        let mut evd2 = null_mut();
        assert_eq!(dat_evd_create(ia, 8, null_mut(), flags, &mut evd2), OK);
        assert_eq!(dat_evd_free(evd2), OK);
        freed.push(evd2);
        let mut reuse = null_mut();
        assert_eq!(dat_pz_create(ia, &mut reuse), OK);
        World { ia, pz, evd, freed }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        unsafe {
            dat_ia_close(
                self.ia,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        };
    }
}

/// Every kind of handle that is not a live object of the expected type.
fn bad_handles(w: &World, wrong_type: DAT_HANDLE) -> Vec<DAT_HANDLE> {
    static MEMORY: [u64; 4] = [0; 4];
    let mut v = vec![
        null_mut(),
        0x1 as DAT_HANDLE,
        0xdead_beef as DAT_HANDLE,
        usize::MAX as DAT_HANDLE,
        MEMORY.as_ptr() as DAT_HANDLE,
        wrong_type,
    ];
    v.extend(w.freed.iter().copied());
    v
}

fn expect(sub: Sub) -> DAT_RETURN {
    DatError::invalid_handle(sub).code()
}

macro_rules! check {
    ($w:expr, $wrong:expr, $sub:expr, |$h:ident| $call:expr) => {{
        for $h in bad_handles(&$w, $wrong) {
            let got = unsafe { $call };
            assert_eq!(
                got,
                expect($sub),
                "{} with handle {:?}",
                stringify!($call),
                $h
            );
        }
    }};
}

fn zero<T>() -> T {
    unsafe { std::mem::zeroed() }
}

#[test]
fn ia_handles() {
    let w = open();
    let s = Sub::DAT_INVALID_HANDLE_IA;
    let wrong = w.pz;
    check!(w, wrong, s, |h| dat_ia_query(
        h,
        null_mut(),
        0,
        null_mut(),
        0,
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_ia_close(h, 0));
    check!(w, wrong, s, |h| dat_pz_create(h, &mut null_mut()));
    check!(w, wrong, s, |h| dat_evd_create(
        h,
        4,
        null_mut(),
        1,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_cno_create(h, zero(), &mut null_mut()));
    check!(w, wrong, s, |h| dat_cno_fd_create(
        h,
        &mut 0,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_lmr_create(
        h,
        0,
        DAT_REGION_DESCRIPTION { for_va: 8 as _ },
        8,
        w.pz,
        0x33,
        0,
        &mut null_mut(),
        null_mut(),
        null_mut(),
        null_mut(),
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_lmr_sync_rdma_read(h, null_mut(), 0));
    check!(w, wrong, s, |h| dat_lmr_sync_rdma_write(h, null_mut(), 0));
    check!(w, wrong, s, |h| dat_ep_create(
        h,
        w.pz,
        null_mut(),
        null_mut(),
        null_mut(),
        null_mut(),
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_ep_create_with_srq(
        h,
        w.pz,
        null_mut(),
        null_mut(),
        null_mut(),
        null_mut(),
        null_mut(),
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_psp_create(
        h,
        1,
        w.evd,
        0,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_psp_create_any(
        h,
        &mut 0,
        w.evd,
        0,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_rsp_create(
        h,
        1,
        null_mut(),
        w.evd,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_csp_create(
        h,
        null_mut(),
        null_mut(),
        w.evd,
        &mut null_mut()
    ));
    check!(w, wrong, s, |h| dat_srq_create(
        h,
        w.pz,
        null_mut(),
        &mut null_mut()
    ));
}

#[test]
fn pz_handles() {
    let w = open();
    let s = Sub::DAT_INVALID_HANDLE_PZ;
    let wrong = w.evd;
    check!(w, wrong, s, |h| dat_pz_query(h, 1, &mut zero()));
    check!(w, wrong, s, |h| dat_pz_free(h));
    check!(w, wrong, s, |h| dat_rmr_create(h, &mut null_mut()));
    check!(w, wrong, s, |h| dat_rmr_create_for_ep(h, &mut null_mut()));
    check!(w, wrong, s, |h| dat_lmr_create(
        w.ia,
        0,
        DAT_REGION_DESCRIPTION { for_va: 8 as _ },
        8,
        h,
        0x33,
        0,
        &mut null_mut(),
        null_mut(),
        null_mut(),
        null_mut(),
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_srq_create(
        w.ia,
        h,
        &mut DAT_SRQ_ATTR {
            max_recv_dtos: 4,
            max_recv_iov: 1,
            low_watermark: 0
        },
        &mut null_mut()
    ));
    // NULL is a valid "no PZ" for dat_ep_create; every other bad PZ is refused.
    for h in bad_handles(&w, wrong).into_iter().filter(|h| !h.is_null()) {
        let got = unsafe {
            dat_ep_create(
                w.ia,
                h,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
                &mut null_mut(),
            )
        };
        assert_eq!(got, expect(s));
    }
}

#[test]
fn evd_handles_name_their_stream() {
    let w = open();
    let wrong = w.pz;
    check!(
        w,
        wrong,
        Sub::DAT_INVALID_HANDLE_EVD_CR,
        |h| dat_psp_create(w.ia, 1, h, 0, &mut null_mut())
    );
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_EVD_CR, |h| {
        dat_psp_create_any(w.ia, &mut 0, h, 0, &mut null_mut())
    });
    check!(w, wrong, Sub::DAT_INVALID_HANDLE1, |h| dat_evd_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE1, |h| dat_evd_post_se(
        h,
        &zero()
    ));
    for (position, sub) in [
        (2, Sub::DAT_INVALID_HANDLE_EVD_RECV),
        (3, Sub::DAT_INVALID_HANDLE_EVD_REQUEST),
        (4, Sub::DAT_INVALID_HANDLE_EVD_CONN),
    ] {
        for h in bad_handles(&w, wrong).into_iter().filter(|h| !h.is_null()) {
            let mut evds = [null_mut(); 3];
            evds[position - 2] = h;
            let got = unsafe {
                dat_ep_create(
                    w.ia,
                    w.pz,
                    evds[0],
                    evds[1],
                    evds[2],
                    null_mut(),
                    &mut null_mut(),
                )
            };
            assert_eq!(got, expect(sub), "EVD position {position}");
        }
    }
    // An EVD without the stream an EP needs is the wrong EVD.
    let mut sw = null_mut();
    unsafe {
        assert_eq!(
            dat_evd_create(
                w.ia,
                4,
                null_mut(),
                dat_evd_flags::DAT_EVD_SOFTWARE_FLAG as u32,
                &mut sw
            ),
            OK
        );
        assert_eq!(
            dat_ep_create(
                w.ia,
                w.pz,
                sw,
                null_mut(),
                null_mut(),
                null_mut(),
                &mut null_mut()
            ),
            expect(Sub::DAT_INVALID_HANDLE_EVD_RECV)
        );
        assert_eq!(
            dat_ep_create(
                w.ia,
                w.pz,
                null_mut(),
                null_mut(),
                sw,
                null_mut(),
                &mut null_mut()
            ),
            expect(Sub::DAT_INVALID_HANDLE_EVD_CONN)
        );
        assert_eq!(
            dat_psp_create(w.ia, 1, sw, 0, &mut null_mut()),
            expect(Sub::DAT_INVALID_HANDLE_EVD_CR)
        );
    }
}

#[test]
fn ep_handles() {
    let w = open();
    let s = Sub::DAT_INVALID_HANDLE_EP;
    let wrong = w.pz;
    let mut param: DAT_EP_PARAM = zero();
    check!(w, wrong, s, |h| dat_ep_query(h, 0, &mut param));
    check!(w, wrong, s, |h| dat_ep_modify(h, 0, &param));
    check!(w, wrong, s, |h| dat_ep_free(h));
    check!(w, wrong, s, |h| dat_ep_reset(h));
    check!(w, wrong, s, |h| dat_ep_get_status(
        h,
        &mut 0,
        null_mut(),
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_ep_recv_query(
        h,
        null_mut(),
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_ep_set_watermark(h, 0, 0));
    check!(w, wrong, s, |h| dat_ep_connect(
        h,
        null_mut(),
        1,
        0,
        0,
        null_mut(),
        0,
        0
    ));
    check!(w, wrong, s, |h| dat_ep_dup_connect(
        h,
        null_mut(),
        0,
        0,
        null_mut(),
        0
    ));
    check!(w, wrong, s, |h| dat_ep_common_connect(
        h,
        null_mut(),
        0,
        0,
        null_mut()
    ));
    check!(w, wrong, s, |h| dat_ep_disconnect(h, 0));
    check!(w, wrong, s, |h| dat_ep_post_send(
        h,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        0
    ));
    check!(w, wrong, s, |h| dat_ep_post_send_with_invalidate(
        h,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        0,
        0,
        0
    ));
    check!(w, wrong, s, |h| dat_ep_post_recv(
        h,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        0
    ));
    check!(w, wrong, s, |h| dat_ep_post_rdma_read(
        h,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        &zero(),
        0
    ));
    check!(w, wrong, s, |h| dat_ep_post_rdma_write(
        h,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        &zero(),
        0
    ));
    check!(w, wrong, s, |h| dat_ep_post_rdma_read_to_rmr(
        h,
        &zero(),
        DAT_CONTEXT { as_64: 0 },
        &zero(),
        0
    ));
    check!(w, wrong, s, |h| dat_rsp_create(
        w.ia,
        1,
        h,
        w.evd,
        &mut null_mut()
    ));
}

#[test]
fn memory_handles() {
    let w = open();
    let wrong = w.pz;
    let mut lp: DAT_LMR_PARAM = zero();
    let mut rp: DAT_RMR_PARAM = zero();
    let mut sp: DAT_SRQ_PARAM = zero();
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_LMR, |h| dat_lmr_query(
        h, 1, &mut lp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_LMR, |h| dat_lmr_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_RMR, |h| dat_rmr_query(
        h, 1, &mut rp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_RMR, |h| dat_rmr_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_RMR, |h| dat_rmr_bind(
        h,
        null_mut(),
        null_mut(),
        0,
        0,
        null_mut(),
        DAT_CONTEXT { as_64: 0 },
        0,
        null_mut()
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_SRQ, |h| dat_srq_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_SRQ, |h| dat_srq_query(
        h, 1, &mut sp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_SRQ, |h| dat_srq_resize(
        h, 4
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_SRQ, |h| dat_srq_set_lw(
        h, 0
    ));
    check!(
        w,
        wrong,
        Sub::DAT_INVALID_HANDLE_SRQ,
        |h| dat_srq_post_recv(h, 0, null_mut(), DAT_CONTEXT { as_64: 0 })
    );
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_SRQ, |h| {
        dat_ep_create_with_srq(
            w.ia,
            w.pz,
            null_mut(),
            null_mut(),
            null_mut(),
            h,
            null_mut(),
            &mut null_mut(),
        )
    });
}

#[test]
fn service_point_and_cr_handles() {
    let w = open();
    let wrong = w.pz;
    let mut pp: DAT_PSP_PARAM = zero();
    let mut rp: DAT_RSP_PARAM = zero();
    let mut cp: DAT_CR_PARAM = zero();
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_PSP, |h| dat_psp_query(
        h, 1, &mut pp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_PSP, |h| dat_psp_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_RSP, |h| dat_rsp_query(
        h, 1, &mut rp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_RSP, |h| dat_rsp_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CSP, |h| dat_csp_query(
        h,
        1,
        null_mut()
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CSP, |h| dat_csp_free(h));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CR, |h| dat_cr_query(
        h, 1, &mut cp
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CR, |h| dat_cr_accept(
        h,
        null_mut(),
        0,
        null_mut()
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CR, |h| dat_cr_reject(
        h,
        0,
        null_mut()
    ));
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CR, |h| dat_cr_handoff(
        h, 1
    ));
}

#[test]
fn cno_and_any_handles() {
    let w = open();
    let wrong = w.pz;
    check!(w, wrong, Sub::DAT_INVALID_HANDLE_CNO, |h| {
        dat_evd_modify_cno(w.evd, if h.is_null() { 0x1 as DAT_HANDLE } else { h })
    });
    // The functions on any handle accept every live kind, so only dead handles are refused.
    for h in bad_handles(&w, null_mut()) {
        unsafe {
            assert_eq!(
                dat_get_handle_type(h, &mut 0),
                expect(Sub::DAT_INVALID_HANDLE1)
            );
            assert_eq!(
                dat_set_consumer_context(h, DAT_CONTEXT { as_64: 1 }),
                expect(Sub::DAT_INVALID_HANDLE1)
            );
            assert_eq!(
                dat_get_consumer_context(h, &mut zero()),
                expect(Sub::DAT_INVALID_HANDLE1)
            );
        }
    }
}

#[test]
fn a_handle_the_thread_just_used_is_refused_once_freed() {
    // The data-transfer calls remember the EP or EVD the thread used last: a free, even of
    // that very object, must show at once, and must let go of what the object held.
    let w = open();
    let flags =
        dat_evd_flags::DAT_EVD_DTO_FLAG as u32 | dat_evd_flags::DAT_EVD_CONNECTION_FLAG as u32;
    let empty = DatError::bare(dat::error::Type::DAT_QUEUE_EMPTY).code();
    unsafe {
        let mut cno = null_mut();
        assert_eq!(dat_cno_create(w.ia, zero(), &mut cno), OK);
        let mut evd = null_mut();
        assert_eq!(dat_evd_create(w.ia, 8, cno, flags, &mut evd), OK);
        let mut event: DAT_EVENT = zero();
        assert_eq!(dat_evd_dequeue(evd, &mut event), empty);
        let mut ep = null_mut();
        assert_eq!(
            dat_ep_create(w.ia, w.pz, evd, evd, evd, null_mut(), &mut ep),
            OK
        );
        assert_eq!(
            dat_ep_post_recv(ep, 0, null_mut(), DAT_CONTEXT { as_64: 1 }, 0),
            OK
        );
        assert_eq!(dat_ep_free(ep), OK);
        let s = Sub::DAT_INVALID_HANDLE_EP;
        assert_eq!(
            dat_ep_post_recv(ep, 0, null_mut(), DAT_CONTEXT { as_64: 2 }, 0),
            expect(s)
        );
        assert_eq!(
            dat_ep_post_send(ep, 0, null_mut(), DAT_CONTEXT { as_64: 3 }, 0),
            expect(s)
        );
        // The flushed receive of the freed EP, then nothing.
        assert_eq!(dat_evd_dequeue(evd, &mut event), OK);
        assert_eq!(dat_evd_free(evd), OK);
        assert_eq!(
            dat_evd_dequeue(evd, &mut event),
            expect(Sub::DAT_INVALID_HANDLE1)
        );
        assert_eq!(
            dat_evd_wait(evd, 0, 1, &mut event, &mut 0),
            expect(Sub::DAT_INVALID_HANDLE1)
        );
        // The freed EVD no longer keeps its CNO in use.
        assert_eq!(dat_cno_free(cno), OK);
        // A new EVD, which may take the old one's slot, is found; the old handle still is not.
        let mut again = null_mut();
        assert_eq!(dat_evd_create(w.ia, 8, null_mut(), flags, &mut again), OK);
        assert_eq!(dat_evd_dequeue(again, &mut event), empty);
        assert_eq!(
            dat_evd_dequeue(evd, &mut event),
            expect(Sub::DAT_INVALID_HANDLE1)
        );
        assert_eq!(dat_evd_free(again), OK);
    }
}
