//! PZ, LMR, RMR, SRQ, EP, PSP/RSP and CR through the exported functions: parameter checks,
//! states, in-use rules, and what works without a connection.

use std::ptr::null_mut;
use std::time::Duration;

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*, pz::*, rmr::*, srq::*};
use dat::error::{DatError, Sub, Type};

const OK: DAT_RETURN = 0;

fn arg(n: u8) -> DAT_RETURN {
    DatError::invalid_arg(n).code()
}
fn state(s: Sub) -> DAT_RETURN {
    DatError::invalid_state(s).code()
}
fn zero<T>() -> T {
    unsafe { std::mem::zeroed() }
}
fn cookie(v: u64) -> DAT_DTO_COOKIE {
    DAT_CONTEXT { as_64: v }
}

struct Ia(DAT_IA_HANDLE);

impl Ia {
    fn open() -> Ia {
        let mut a: DAT_EVD_HANDLE = null_mut();
        let mut ia = null_mut();
        assert_eq!(
            unsafe {
                dat_ia_openv(
                    c"tcp-lo".as_ptr() as DAT_NAME_PTR,
                    8,
                    &mut a,
                    &mut ia,
                    2,
                    0,
                    1,
                )
            },
            OK
        );
        Ia(ia)
    }
    fn pz(&self) -> DAT_PZ_HANDLE {
        let mut pz = null_mut();
        assert_eq!(unsafe { dat_pz_create(self.0, &mut pz) }, OK);
        pz
    }
    fn evd(&self, flags: dat_evd_flags) -> DAT_EVD_HANDLE {
        let mut evd = null_mut();
        assert_eq!(
            unsafe { dat_evd_create(self.0, 16, null_mut(), flags as u32, &mut evd) },
            OK
        );
        evd
    }
    fn lmr(
        &self,
        pz: DAT_PZ_HANDLE,
        buf: &mut [u8],
        privileges: u32,
    ) -> (DAT_LMR_HANDLE, DAT_LMR_CONTEXT) {
        let mut lmr = null_mut();
        let mut ctx = 0;
        let region = DAT_REGION_DESCRIPTION {
            for_va: buf.as_mut_ptr() as DAT_PVOID,
        };
        let rc = unsafe {
            dat_lmr_create(
                self.0,
                0,
                region,
                buf.len() as u64,
                pz,
                privileges,
                0,
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

const ALL_PRIV: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;

#[test]
fn pz_in_use_by_an_lmr_is_not_freed() {
    let ia = Ia::open();
    let pz = ia.pz();
    let mut buf = vec![0u8; 64];
    let (lmr, _) = ia.lmr(pz, &mut buf, ALL_PRIV);
    unsafe {
        assert_eq!(dat_pz_free(pz), state(Sub::DAT_INVALID_STATE_PZ_IN_USE));
        let mut p: DAT_PZ_PARAM = zero();
        assert_eq!(dat_pz_query(pz, DAT_PZ_FIELD_ALL, &mut p), OK);
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(dat_pz_query(pz, 0x100, &mut p), arg(2));
        assert_eq!(dat_pz_query(pz, 1, null_mut()), arg(3));
        assert_eq!(dat_pz_create(ia.0, null_mut()), arg(2));
        assert_eq!(dat_lmr_free(lmr), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}

#[test]
fn lmr_create_checks_and_query_reports() {
    let ia = Ia::open();
    let pz = ia.pz();
    let mut buf = vec![0u8; 4096];
    let region = DAT_REGION_DESCRIPTION {
        for_va: buf.as_mut_ptr() as DAT_PVOID,
    };
    let mut lmr = null_mut();
    let (mut lctx, mut rctx, mut len, mut addr) = (0, 0, 0, 0);
    unsafe {
        assert_eq!(
            dat_lmr_create(
                ia.0,
                9,
                region,
                4096,
                pz,
                ALL_PRIV,
                0,
                &mut lmr,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            arg(2)
        );
        assert_eq!(
            dat_lmr_create(
                ia.0,
                0,
                region,
                4096,
                pz,
                0x4000,
                0,
                &mut lmr,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            arg(6)
        );
        assert_eq!(
            dat_lmr_create(
                ia.0,
                0,
                region,
                4096,
                pz,
                ALL_PRIV,
                7,
                &mut lmr,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            arg(7)
        );
        assert_eq!(
            dat_lmr_create(
                ia.0,
                0,
                region,
                4096,
                pz,
                ALL_PRIV,
                0,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            arg(8)
        );
        let null_region = DAT_REGION_DESCRIPTION { for_va: null_mut() };
        assert_eq!(
            dat_lmr_create(
                ia.0,
                0,
                null_region,
                4096,
                pz,
                ALL_PRIV,
                0,
                &mut lmr,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            arg(3)
        );
        assert_eq!(
            dat_lmr_create(
                ia.0,
                2,
                region,
                4096,
                pz,
                ALL_PRIV,
                0,
                &mut lmr,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code()
        );
        assert_eq!(
            dat_lmr_create(
                ia.0, 0, region, 4096, pz, ALL_PRIV, 0, &mut lmr, &mut lctx, &mut rctx, &mut len,
                &mut addr
            ),
            OK
        );
        assert_ne!(lctx, 0);
        assert_eq!(len, 4096);
        assert_eq!(addr, buf.as_ptr() as u64);
        let mut p: DAT_LMR_PARAM = zero();
        assert_eq!(
            dat_lmr_query(lmr, dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(p.pz_handle, pz);
        assert_eq!(p.length, 4096);
        assert_eq!(p.lmr_context, lctx);
        assert_eq!(p.mem_priv, ALL_PRIV);
        // An LMR over an LMR keeps its parent in use.
        let sub_region = DAT_REGION_DESCRIPTION {
            for_lmr_handle: lmr,
        };
        let mut child = null_mut();
        assert_eq!(
            dat_lmr_create(
                ia.0,
                1,
                sub_region,
                0,
                pz,
                ALL_PRIV,
                0,
                &mut child,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut()
            ),
            OK
        );
        assert_eq!(dat_lmr_free(lmr), state(Sub::DAT_INVALID_STATE_LMR_IN_USE));
        assert_eq!(dat_lmr_free(child), OK);
        assert_eq!(dat_lmr_free(lmr), OK);
        assert_eq!(
            dat_lmr_free(lmr),
            DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_LMR).code()
        );
    }
}

#[test]
fn srq_attributes_posts_and_in_use() {
    let ia = Ia::open();
    let pz = ia.pz();
    let mut buf = vec![0u8; 256];
    let (lmr, ctx) = ia.lmr(pz, &mut buf, ALL_PRIV);
    let mut srq = null_mut();
    unsafe {
        let mut bad = DAT_SRQ_ATTR {
            max_recv_dtos: 0,
            max_recv_iov: 1,
            low_watermark: 0,
        };
        assert_eq!(dat_srq_create(ia.0, pz, &mut bad, &mut srq), arg(3));
        assert_eq!(dat_srq_create(ia.0, pz, null_mut(), &mut srq), arg(3));
        let mut attr = DAT_SRQ_ATTR {
            max_recv_dtos: 2,
            max_recv_iov: 2,
            low_watermark: 0,
        };
        assert_eq!(dat_srq_create(ia.0, pz, &mut attr, null_mut()), arg(4));
        assert_eq!(dat_srq_create(ia.0, pz, &mut attr, &mut srq), OK);
        let mut iov = DAT_LMR_TRIPLET {
            virtual_address: buf.as_ptr() as u64,
            segment_length: 256,
            lmr_context: ctx,
        };
        assert_eq!(dat_srq_post_recv(srq, 1, &mut iov, cookie(1)), OK);
        let mut outside = DAT_LMR_TRIPLET {
            segment_length: 257,
            ..iov
        };
        assert_eq!(dat_srq_post_recv(srq, 1, &mut outside, cookie(2)), arg(3));
        let mut unknown = DAT_LMR_TRIPLET {
            lmr_context: ctx.wrapping_add(77),
            ..iov
        };
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut unknown, cookie(2)),
            DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()
        );
        assert_eq!(dat_srq_post_recv(srq, 3, &mut iov, cookie(2)), arg(2));
        assert_eq!(dat_srq_post_recv(srq, 1, &mut iov, cookie(2)), OK);
        assert_eq!(
            dat_srq_post_recv(srq, 1, &mut iov, cookie(3)),
            DatError::resources(Sub::DAT_RESOURCE_SRQ).code()
        );
        let mut p: DAT_SRQ_PARAM = zero();
        assert_eq!(
            dat_srq_query(srq, dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.max_recv_dtos, 2);
        assert_eq!(p.available_dto_count, 2);
        assert_eq!(dat_srq_resize(srq, 1), state(Sub::DAT_NO_SUBTYPE));
        assert_eq!(dat_srq_resize(srq, 8), OK);
        assert_eq!(dat_srq_set_lw(srq, 9), arg(2));
        assert_eq!(dat_srq_set_lw(srq, 4), OK);
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
        assert_eq!(dat_lmr_free(lmr), OK);
    }
}

#[test]
fn ep_create_defaults_query_and_modify() {
    let ia = Ia::open();
    let pz = ia.pz();
    let dto = ia.evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
    let conn = ia.evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let mut ep = null_mut();
    unsafe {
        let mut attr: DAT_EP_ATTR = zero();
        attr.service_type = 7;
        assert_eq!(
            dat_ep_create(ia.0, pz, dto, dto, conn, &attr, &mut ep),
            arg(6)
        );
        // The IB extension's unreliable datagrams: a UD EP needs its zone from the start (its
        // QP is made with it), takes no SRQ, and is not modified.
        let mut ud = dat::objects::ep::default_attr();
        ud.service_type = dat_ib_service_type::DAT_IB_SERVICE_TYPE_UD as DAT_SERVICE_TYPE;
        assert_eq!(
            dat_ep_create(ia.0, null_mut(), dto, dto, conn, &ud, &mut ep),
            DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ).code()
        );
        assert_eq!(dat_ep_create(ia.0, pz, dto, dto, conn, &ud, &mut ep), OK);
        let mut p: DAT_EP_PARAM = zero();
        assert_eq!(dat_ep_query(ep, DAT_EP_FIELD_ALL, &mut p), OK);
        assert_eq!(p.ep_attr.service_type, ud.service_type);
        assert_eq!(
            dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
            DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code()
        );
        assert_eq!(dat_ep_free(ep), OK);
        let (mut srq, mut srq_attr): (DAT_SRQ_HANDLE, DAT_SRQ_ATTR) = (null_mut(), zero());
        srq_attr.max_recv_dtos = 4;
        srq_attr.max_recv_iov = 1;
        assert_eq!(
            dat::api::srq::dat_srq_create(ia.0, pz, &mut srq_attr, &mut srq),
            OK
        );
        assert_eq!(
            dat_ep_create_with_srq(ia.0, pz, dto, dto, conn, srq, &ud, &mut ep),
            DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code()
        );
        assert_eq!(dat::api::srq::dat_srq_free(srq), OK);
        assert_eq!(
            dat_ep_create(ia.0, pz, dto, dto, conn, null_mut(), null_mut()),
            arg(7)
        );
        assert_eq!(
            dat_ep_create(ia.0, pz, dto, dto, conn, null_mut(), &mut ep),
            OK
        );
        let mut p: DAT_EP_PARAM = zero();
        assert_eq!(dat_ep_query(ep, DAT_EP_FIELD_ALL, &mut p), OK);
        assert_eq!(p.ia_handle, ia.0);
        assert_eq!(
            p.ep_state,
            dat_ep_state::DAT_EP_STATE_UNCONNECTED as DAT_EP_STATE
        );
        assert_eq!(p.pz_handle, pz);
        assert_eq!(p.recv_evd_handle, dto);
        assert_eq!(p.connect_evd_handle, conn);
        assert!(p.ep_attr.max_recv_dtos > 0 && p.ep_attr.max_request_iov > 0);
        assert_eq!(dat_ep_query(ep, DAT_EP_FIELD_ALL, null_mut()), arg(3));
        // The PZ and EVDs are in use while the EP holds them.
        assert_eq!(dat_pz_free(pz), state(Sub::DAT_INVALID_STATE_PZ_IN_USE));
        assert_eq!(dat_evd_free(dto), state(Sub::DAT_INVALID_STATE_EVD_IN_USE));
        // Modify: attributes of a quiescent EP; read-only fields are refused.
        p.ep_attr.max_recv_dtos = 7;
        assert_eq!(
            dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, &p),
            OK
        );
        assert_eq!(dat_ep_query(ep, DAT_EP_FIELD_ALL, &mut p), OK);
        assert_eq!(p.ep_attr.max_recv_dtos, 7);
        assert_eq!(dat_ep_modify(ep, DAT_EP_FIELD_EP_STATE, &p), arg(2));
        let mut st = 99;
        assert_eq!(dat_ep_get_status(ep, &mut st, null_mut(), null_mut()), OK);
        assert_eq!(st, dat_ep_state::DAT_EP_STATE_UNCONNECTED as DAT_EP_STATE);
        // Every output is optional (the man page names no invalid parameter).
        let mut idle = 99;
        assert_eq!(dat_ep_get_status(ep, null_mut(), &mut idle, null_mut()), OK);
        assert_eq!(idle, dat_boolean::DAT_TRUE as DAT_BOOLEAN);
        assert_eq!(
            dat_ep_reset(ep),
            state(Sub::DAT_INVALID_STATE_EP_UNCONNECTED)
        );
        assert_eq!(
            dat_ep_disconnect(ep, 0),
            state(Sub::DAT_INVALID_STATE_EP_UNCONNECTED)
        );
        assert_eq!(dat_ep_free(ep), OK);
        assert_eq!(dat_evd_free(dto), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}

#[test]
fn dto_checks_before_any_connection() {
    let ia = Ia::open();
    let pz = ia.pz();
    let dto = ia.evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
    let conn = ia.evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let mut buf = vec![0u8; 128];
    let (_lmr, ctx) = ia.lmr(pz, &mut buf, ALL_PRIV);
    let mut ep = null_mut();
    unsafe {
        assert_eq!(
            dat_ep_create(ia.0, pz, dto, dto, conn, null_mut(), &mut ep),
            OK
        );
        let mut iov = DAT_LMR_TRIPLET {
            virtual_address: buf.as_ptr() as u64,
            segment_length: 128,
            lmr_context: ctx,
        };
        // Sends need a connected (or disconnected) EP.
        assert_eq!(
            dat_ep_post_send(ep, 1, &mut iov, cookie(1), 0),
            state(Sub::DAT_INVALID_STATE_EP_UNCONNECTED)
        );
        assert_eq!(dat_ep_post_send(ep, -1, &mut iov, cookie(1), 0), arg(2));
        assert_eq!(dat_ep_post_send(ep, 1, null_mut(), cookie(1), 0), arg(3));
        // UNSIGNALLED only where the EP's attributes allow it.
        let unsignalled = dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32;
        assert_eq!(
            dat_ep_post_send(ep, 1, &mut iov, cookie(1), unsignalled),
            arg(5)
        );
        assert_eq!(dat_ep_post_send(ep, 1, &mut iov, cookie(1), 0x8000), arg(5));
        // Receives may be posted before the connection exists.
        assert_eq!(dat_ep_post_recv(ep, 1, &mut iov, cookie(2), 0), OK);
        let mut outside = DAT_LMR_TRIPLET {
            segment_length: 129,
            ..iov
        };
        assert_eq!(dat_ep_post_recv(ep, 1, &mut outside, cookie(3), 0), arg(3));
        let mut idle = 9;
        assert_eq!(dat_ep_get_status(ep, &mut 0, &mut idle, null_mut()), OK);
        assert_eq!(idle, dat_boolean::DAT_FALSE as DAT_BOOLEAN);
        // Freeing the EP flushes its posted receive.
        assert_eq!(dat_ep_free(ep), OK);
        let mut e: DAT_EVENT = zero();
        assert_eq!(dat_evd_dequeue(dto, &mut e), OK);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER
        );
        assert_eq!(
            e.event_data.dto_completion_event_data.status,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED as u32
        );
        assert_eq!(e.event_data.dto_completion_event_data.user_cookie.as_64, 2);
    }
}

#[test]
fn connect_checks_its_parameters() {
    let ia = Ia::open();
    let pz = ia.pz();
    let dto = ia.evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
    let conn = ia.evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let mut ep = null_mut();
    let mut sin: libc::sockaddr_in = zero();
    sin.sin_family = libc::AF_INET as u16;
    sin.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    let addr = &mut sin as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR;
    let pd = [0u8; 100];
    const WAIT: DAT_TIMEOUT = 1_000_000;
    unsafe {
        assert_eq!(
            dat_ep_create(ia.0, pz, dto, dto, conn, null_mut(), &mut ep),
            OK
        );
        assert_eq!(
            dat_ep_connect(ep, null_mut(), 1, 0, 0, null_mut(), 0, 0),
            DatError::new(
                Type::DAT_INVALID_ADDRESS,
                Sub::DAT_INVALID_ADDRESS_MALFORMED
            )
            .code()
        );
        // Qualifier 0 names no listener; any other 64-bit value does.
        assert_eq!(
            dat_ep_connect(ep, addr, 0, WAIT, 0, null_mut(), 0, 0),
            arg(3)
        );
        // "Values must be positive": a timeout of 0 is none.
        assert_eq!(dat_ep_connect(ep, addr, 1, 0, 0, null_mut(), 0, 0), arg(4));
        assert_eq!(
            dat_ep_connect(ep, addr, 1, WAIT, 57, pd.as_ptr() as _, 0, 0),
            arg(5)
        );
        assert_eq!(
            dat_ep_connect(ep, addr, 1, WAIT, -1, pd.as_ptr() as _, 0, 0),
            arg(5)
        );
        assert_eq!(
            dat_ep_connect(ep, addr, 1, WAIT, 4, null_mut(), 0, 0),
            arg(5)
        );
        assert_eq!(
            dat_ep_connect(ep, addr, 1, WAIT, 0, null_mut(), 99, 0),
            arg(7)
        );
        assert_eq!(
            dat_ep_connect(ep, addr, 1, WAIT, 0, null_mut(), 0, 9),
            arg(8)
        );
        assert_eq!(
            dat_ep_connect(
                ep,
                addr,
                1,
                WAIT,
                0,
                null_mut(),
                dat_qos::DAT_QOS_PREMIUM as u32,
                0
            ),
            DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code()
        );
    }
}

#[test]
fn psp_listens_on_its_port_and_a_request_becomes_a_cr() {
    let ia = Ia::open();
    let cr_evd = ia.evd(dat_evd_flags::DAT_EVD_CR_FLAG);
    let mut psp = null_mut();
    let mut port = 0;
    unsafe {
        assert_eq!(dat_psp_create_any(ia.0, &mut port, cr_evd, 0, &mut psp), OK);
        assert!(port > 0);
        let mut second = null_mut();
        assert_eq!(
            dat_psp_create(ia.0, port, cr_evd, 0, &mut second),
            DatError::bare(Type::DAT_CONN_QUAL_IN_USE).code()
        );
        // Any 64-bit qualifier listens, on the port it folds into; another that folds into the
        // same port finds it in use.
        let large: DAT_CONN_QUAL = (7 << 35) + 12345;
        let mut large_psp = null_mut();
        assert_eq!(dat_psp_create(ia.0, large, cr_evd, 0, &mut large_psp), OK);
        assert_eq!(
            dat_psp_create(ia.0, large + 32001, cr_evd, 0, &mut second),
            DatError::unclassed(Type::DAT_CONN_QUAL_IN_USE).code()
        );
        let mut p: DAT_PSP_PARAM = zero();
        assert_eq!(
            dat_psp_query(
                large_psp,
                dat_psp_param_mask::DAT_PSP_FIELD_ALL as u32,
                &mut p
            ),
            OK
        );
        assert_eq!(p.conn_qual, large);
        assert_eq!(dat_psp_free(large_psp), OK);
        assert_eq!(dat_psp_create(ia.0, port, cr_evd, 5, &mut second), arg(4));
        let mut p: DAT_PSP_PARAM = zero();
        assert_eq!(
            dat_psp_query(psp, dat_psp_param_mask::DAT_PSP_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.conn_qual, port);
        assert_eq!(p.evd_handle, cr_evd);
        assert_eq!(
            dat_evd_free(cr_evd),
            state(Sub::DAT_INVALID_STATE_EVD_IN_USE)
        );
    }
    // A peer's request arrives as a connection request event with its private data.
    use dat::transport::tcp::{cm, wire::Limits, wire::ReadLimits};
    let limits = Limits {
        max_private_data: 56,
        max_message: 1 << 20,
    };
    let reads = ReadLimits {
        inbound: 4,
        outbound: 4,
    };
    let target = std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port as u16);
    let (tx, client) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    cm::connect(
        target,
        port,
        b"hello".to_vec(),
        Some(Duration::from_secs(10)),
        Duration::from_secs(10),
        limits,
        None,
        reads,
        move |r| {
            let _ = tx.lock().unwrap().send(r);
        },
    );
    let mut e: DAT_EVENT = zero();
    unsafe {
        assert_eq!(dat_evd_wait(cr_evd, 10_000_000, 1, &mut e, null_mut()), OK);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
        );
        let arrival = e.event_data.cr_arrival_event_data;
        assert_eq!(arrival.conn_qual, port);
        assert_eq!(arrival.sp_handle.psp_handle, psp);
        let cr = arrival.cr_handle;
        let mut p: DAT_CR_PARAM = zero();
        assert_eq!(
            dat_cr_query(cr, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.private_data_size, 5);
        assert_eq!(
            std::slice::from_raw_parts(p.private_data as *const u8, 5),
            b"hello"
        );
        assert!(p.local_ep_handle.is_null());
        let sin = &*(p.remote_ia_address_ptr as *const libc::sockaddr_in);
        assert_eq!(
            u32::from_be(sin.sin_addr.s_addr),
            u32::from(std::net::Ipv4Addr::LOCALHOST)
        );
        assert_eq!(dat_cr_reject(cr, 57, b"x".as_ptr() as _), arg(2));
        assert_eq!(dat_cr_reject(cr, 2, b"no".as_ptr() as _), OK);
        assert_eq!(
            dat_cr_reject(cr, 0, null_mut()),
            DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR).code()
        );
    }
    match client.recv_timeout(Duration::from_secs(10)).unwrap() {
        Err(cm::ConnectFailure::Rejected(pd)) => assert_eq!(pd, b"no"),
        Err(other) => panic!("expected a reject, got {other:?}"),
        Ok(_) => panic!("expected a reject, got a connection"),
    }
    unsafe {
        assert_eq!(dat_psp_free(psp), OK);
        assert_eq!(
            dat_psp_free(psp),
            DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PSP).code()
        );
    }
}

#[test]
fn rsp_reserves_its_ep() {
    let ia = Ia::open();
    let pz = ia.pz();
    let cr_evd = ia.evd(dat_evd_flags::DAT_EVD_CR_FLAG);
    let mut ep = null_mut();
    let mut rsp = null_mut();
    unsafe {
        assert_eq!(
            dat_ep_create(
                ia.0,
                pz,
                null_mut(),
                null_mut(),
                null_mut(),
                null_mut(),
                &mut ep
            ),
            OK
        );
        assert_eq!(dat_rsp_create(ia.0, 0, ep, cr_evd, &mut rsp), OK);
        let mut st = 0;
        assert_eq!(dat_ep_get_status(ep, &mut st, null_mut(), null_mut()), OK);
        assert_eq!(st, dat_ep_state::DAT_EP_STATE_RESERVED as DAT_EP_STATE);
        let mut p: DAT_RSP_PARAM = zero();
        assert_eq!(
            dat_rsp_query(rsp, dat_rsp_param_mask::DAT_RSP_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ep_handle, ep);
        let mut again = null_mut();
        assert_eq!(
            dat_rsp_create(ia.0, 0, ep, cr_evd, &mut again),
            state(Sub::DAT_INVALID_STATE_EP_RESERVED)
        );
        assert_eq!(dat_rsp_free(rsp), OK);
        assert_eq!(dat_ep_get_status(ep, &mut st, null_mut(), null_mut()), OK);
        assert_eq!(st, dat_ep_state::DAT_EP_STATE_UNCONNECTED as DAT_EP_STATE);
    }
}

#[test]
fn rmr_create_query_free() {
    let ia = Ia::open();
    let pz = ia.pz();
    let mut rmr = null_mut();
    unsafe {
        assert_eq!(dat_rmr_create(pz, null_mut()), arg(2));
        assert_eq!(dat_rmr_create(pz, &mut rmr), OK);
        let mut p: DAT_RMR_PARAM = zero();
        assert_eq!(
            dat_rmr_query(rmr, dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.pz_handle, pz);
        assert_eq!(dat_pz_free(pz), state(Sub::DAT_INVALID_STATE_PZ_IN_USE));
        assert_eq!(dat_rmr_free(rmr), OK);
        assert_eq!(dat_pz_free(pz), OK);
    }
}
