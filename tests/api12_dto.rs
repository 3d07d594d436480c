//! The DAT 1.2 entry points of endpoints, data transfers and memory over a real connection:
//! the objects are made and the completions read through the 2.0 functions (one handle
//! table serves both APIs), the transfers posted and the objects queried through the 1.2
//! ones, with 1.2's triplets and params; every byte and completion checked, and the 1.2
//! codes of the error paths.

mod common;

use std::ptr::null_mut;

use common::*;
use dat::abi::*;
use dat::abi12 as v1;
use dat::api12::returns::return12;
use dat::api12::{dto, ep as ep12, memory, srq as srq12};
use dat::error::{DatError, Sub, Type};

fn t12(s: &Side, offset: usize, len: u64) -> v1::DAT_LMR_TRIPLET {
    v1::DAT_LMR_TRIPLET {
        lmr_context: s.lmr_ctx,
        pad: 0,
        virtual_address: s.addr(offset),
        segment_length: len,
    }
}

fn r12(s: &Side, offset: usize, len: u64) -> v1::DAT_RMR_TRIPLET {
    v1::DAT_RMR_TRIPLET {
        rmr_context: s.rmr_ctx,
        pad: 0,
        target_address: s.addr(offset),
        segment_length: len,
    }
}

/// The 1.2 code of a 2.0 error.
fn code12(e: DatError) -> v1::DAT_RETURN {
    return12(e.code())
}

const OK12: v1::DAT_RETURN = 0;
const FLAGS: DAT_COMPLETION_FLAGS = 0;

fn fill(s: &mut Side, seed: u8) {
    for (i, b) in s.buf.iter_mut().enumerate() {
        *b = seed.wrapping_add((i * 7) as u8);
    }
}

#[test]
fn send_recv_rdma_write_and_read_with_several_segments() {
    let (mut a, mut p) = connected(ALL_PRIV);
    fill(&mut a, 1);
    p.buf.fill(0);
    // Three receive segments, two send segments, of uneven lengths.
    let recv = [t12(&p, 100, 10), t12(&p, 300, 20), t12(&p, 500, 100)];
    let rc = unsafe { dto::dat_ep_post_recv(p.ep, 3, recv.as_ptr() as *mut _, cookie(11), FLAGS) };
    assert_eq!(rc, OK12);
    let send = [t12(&a, 0, 25), t12(&a, 1000, 15)];
    let rc = unsafe { dto::dat_ep_post_send(a.ep, 2, send.as_ptr() as *mut _, cookie(22), FLAGS) };
    assert_eq!(rc, OK12);
    assert_eq!(
        dto(a.req_evd),
        (
            22,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            40,
            dat_dtos::DAT_DTO_SEND
        )
    );
    assert_eq!(
        dto(p.recv_evd),
        (
            11,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            40,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    let sent: Vec<u8> = a.buf[0..25]
        .iter()
        .chain(&a.buf[1000..1015])
        .copied()
        .collect();
    let got: Vec<u8> = p.buf[100..110]
        .iter()
        .chain(&p.buf[300..320])
        .chain(&p.buf[500..510])
        .copied()
        .collect();
    assert_eq!(got, sent);
    assert!(
        p.buf[510..600].iter().all(|&b| b == 0),
        "no byte beyond the message"
    );

    // RDMA write: two local segments into the peer's buffer at 2048 (target_address).
    p.buf.fill(0);
    let local = [t12(&a, 10, 30), t12(&a, 2000, 50)];
    let remote = r12(&p, 2048, 80);
    let rc = unsafe {
        dto::dat_ep_post_rdma_write(
            a.ep,
            2,
            local.as_ptr() as *mut _,
            cookie(33),
            &remote,
            FLAGS,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!(
        dto(a.req_evd),
        (
            33,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            80,
            dat_dtos::DAT_DTO_RDMA_WRITE
        )
    );
    let written: Vec<u8> = a.buf[10..40]
        .iter()
        .chain(&a.buf[2000..2050])
        .copied()
        .collect();
    assert_eq!(&p.buf[2048..2128], &written[..]);
    assert!(p.buf[..2048].iter().chain(&p.buf[2128..]).all(|&b| b == 0));

    // RDMA read: the peer's 60 bytes at 3000 into two local segments.
    fill(&mut p, 99);
    a.buf.fill(0);
    let local = [t12(&a, 64, 24), t12(&a, 512, 36)];
    let remote = r12(&p, 3000, 60);
    let rc = unsafe {
        dto::dat_ep_post_rdma_read(
            a.ep,
            2,
            local.as_ptr() as *mut _,
            cookie(44),
            &remote,
            FLAGS,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!(
        dto(a.req_evd),
        (
            44,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            60,
            dat_dtos::DAT_DTO_RDMA_READ
        )
    );
    assert_eq!(&a.buf[64..88], &p.buf[3000..3024]);
    assert_eq!(&a.buf[512..548], &p.buf[3024..3060]);
    assert!(empty(a.req_evd) && empty(p.recv_evd));
}

#[test]
fn error_paths_name_their_argument() {
    let (a, p) = connected(ALL_PRIV);
    let one = [t12(&a, 0, 8)];
    let garbage = 0x1234 as DAT_EP_HANDLE;
    let rc = unsafe { dto::dat_ep_post_send(garbage, 1, one.as_ptr() as *mut _, cookie(1), FLAGS) };
    assert_eq!(
        rc,
        code12(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))
    );
    // An lmr_context no region has.
    let unknown = [v1::DAT_LMR_TRIPLET {
        lmr_context: a.lmr_ctx ^ 0x5a5a_0000,
        ..one[0]
    }];
    let rc =
        unsafe { dto::dat_ep_post_send(a.ep, 1, unknown.as_ptr() as *mut _, cookie(2), FLAGS) };
    assert_eq!(
        rc,
        code12(DatError::new(
            Type::DAT_PRIVILEGES_VIOLATION,
            Sub::DAT_PRIVILEGES_READ
        ))
    );
    // A segment longer than 32 bits can say: the local IOV, argument 3.
    let long = [t12(&a, 0, 8), t12(&a, 0, 1 << 32)];
    let rc = unsafe { dto::dat_ep_post_send(a.ep, 2, long.as_ptr() as *mut _, cookie(3), FLAGS) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    let rc = unsafe { dto::dat_ep_post_recv(p.ep, 2, long.as_ptr() as *mut _, cookie(3), FLAGS) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    // Outside its region: as 2.0 says.
    let outside = [t12(&a, 4000, 200)];
    let rc =
        unsafe { dto::dat_ep_post_send(a.ep, 1, outside.as_ptr() as *mut _, cookie(4), FLAGS) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    // A remote length beyond 32 bits: a read's is a length error, a write's names the IOV.
    let remote = r12(&p, 0, 1 << 33);
    let rc = unsafe {
        dto::dat_ep_post_rdma_read(a.ep, 1, one.as_ptr() as *mut _, cookie(5), &remote, FLAGS)
    };
    assert_eq!(rc, code12(DatError::bare(Type::DAT_LENGTH_ERROR)));
    let rc = unsafe {
        dto::dat_ep_post_rdma_write(a.ep, 1, one.as_ptr() as *mut _, cookie(6), &remote, FLAGS)
    };
    assert_eq!(rc, code12(DatError::invalid_arg(5)));
    let rc = unsafe {
        dto::dat_ep_post_rdma_write(
            a.ep,
            1,
            one.as_ptr() as *mut _,
            cookie(6),
            std::ptr::null(),
            FLAGS,
        )
    };
    assert_eq!(rc, code12(DatError::invalid_arg(5)));
    // The 1.2 code really is renumbered (DAT_INVALID_ARG3 moved).
    assert_ne!(
        code12(DatError::invalid_arg(3)),
        DatError::invalid_arg(3).code()
    );
    // Nothing of these reached the wire.
    assert!(empty(a.req_evd) && empty(p.recv_evd));
    // Syncs: the same checks, argument 2.
    let rc = unsafe { dto::dat_lmr_sync_rdma_read(a.ia, one.as_ptr(), 1) };
    assert_eq!(rc, OK12);
    let rc = unsafe { dto::dat_lmr_sync_rdma_write(a.ia, long.as_ptr(), 2) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));
    let rc = unsafe { dto::dat_lmr_sync_rdma_write(a.ia, unknown.as_ptr(), 1) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));
}

#[test]
fn ep_create_query_modify_in_1_2_layouts() {
    let (ia, pz) = open_ia_and_pz();
    let evd = create_evd(ia, 8, dat_evd_flags::DAT_EVD_DTO_FLAG);
    let a20 = default_ep_attr(ia);
    let mut attr = v1::DAT_EP_ATTR {
        service_type: a20.service_type,
        max_message_size: u64::from(a20.max_message_size),
        max_rdma_size: u64::from(a20.max_rdma_size),
        qos: 0,
        recv_completion_flags: a20.recv_completion_flags,
        request_completion_flags: a20.request_completion_flags,
        max_recv_dtos: 8,
        max_request_dtos: 9,
        max_recv_iov: 4,
        max_request_iov: 5,
        max_rdma_read_in: a20.max_rdma_read_in,
        max_rdma_read_out: a20.max_rdma_read_out,
        srq_soft_hw: a20.srq_soft_hw,
        max_rdma_read_iov: a20.max_rdma_read_iov,
        max_rdma_write_iov: a20.max_rdma_write_iov,
        ep_transport_specific_count: 0,
        ep_transport_specific: null_mut(),
        ep_provider_specific_count: 0,
        ep_provider_specific: null_mut(),
    };
    let mut ep = null_mut();
    attr.max_message_size = 1 << 32;
    let rc = unsafe { ep12::dat_ep_create(ia, pz, evd, evd, null_mut(), &attr, &mut ep) };
    assert_eq!(rc, code12(DatError::invalid_arg(6)));
    // A bad handle still comes first, as in 2.0.
    let rc = unsafe { ep12::dat_ep_create(0x77 as _, pz, evd, evd, null_mut(), &attr, &mut ep) };
    assert_eq!(
        rc,
        code12(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_IA))
    );
    attr.max_message_size = u64::from(a20.max_message_size);
    let rc = unsafe { ep12::dat_ep_create(ia, pz, evd, evd, null_mut(), &attr, &mut ep) };
    assert_eq!(rc, OK12);

    let mut q: v1::DAT_EP_PARAM = zero();
    let rc = unsafe { ep12::dat_ep_query(ep, v1::DAT_EP_FIELD_ALL, &mut q) };
    assert_eq!(rc, OK12);
    assert_eq!(
        (
            q.ia_handle,
            q.pz_handle,
            q.recv_evd_handle,
            q.request_evd_handle
        ),
        (ia, pz, evd, evd)
    );
    assert!(q.connect_evd_handle.is_null() && q.srq_handle.is_null());
    assert_eq!(
        q.ep_state,
        v1::dat_ep_state::DAT_EP_STATE_UNCONNECTED as u32
    );
    // What a 2.0 caller reads of the same EP, widened.
    let mut q20: DAT_EP_PARAM = zero();
    assert_eq!(
        unsafe { dat::api::ep::dat_ep_query(ep, DAT_EP_FIELD_ALL, &mut q20) },
        OK
    );
    let sizes = |a: &v1::DAT_EP_ATTR| (a.max_message_size, a.max_rdma_size);
    assert_eq!(
        sizes(&q.ep_attr),
        (
            u64::from(q20.ep_attr.max_message_size),
            u64::from(q20.ep_attr.max_rdma_size)
        )
    );
    assert!(q.ep_attr.max_message_size > 0);
    assert_eq!(
        (
            q.ep_attr.max_recv_dtos,
            q.ep_attr.max_request_dtos,
            q.ep_attr.max_recv_iov,
            q.ep_attr.max_request_iov
        ),
        (8, 9, 4, 5)
    );
    let rc = unsafe { ep12::dat_ep_query(ep, v1::DAT_EP_FIELD_ALL, null_mut()) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    let rc = unsafe { ep12::dat_ep_query(ep, 0x800, &mut q) };
    assert_eq!(
        rc,
        code12(DatError::invalid_arg(2)),
        "a bit 1.2 does not define"
    );

    // Modify by 1.2's bits: the connect EVD (0x200 in 1.2, 0x400 in 2.0) and max_recv_dtos.
    let conn = create_evd(ia, 8, dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let mut m = q;
    m.connect_evd_handle = conn;
    m.ep_attr.max_recv_dtos = 12;
    m.ep_attr.max_message_size = 1 << 40; // not named: ignored
    let mask = v1::DAT_EP_FIELD_CONNECT_EVD_HANDLE | v1::DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS;
    assert_eq!(unsafe { ep12::dat_ep_modify(ep, mask, &m) }, OK12);
    let rc = unsafe { ep12::dat_ep_query(ep, v1::DAT_EP_FIELD_ALL, &mut q) };
    assert_eq!(rc, OK12);
    assert_eq!((q.connect_evd_handle, q.ep_attr.max_recv_dtos), (conn, 12));
    assert_eq!(
        q.ep_attr.max_message_size,
        u64::from(q20.ep_attr.max_message_size)
    );
    // Named and too long: the param, argument 3.
    let rc = unsafe { ep12::dat_ep_modify(ep, v1::DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, &m) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    // Read-only by 1.2's bit for the SRQ handle (0x400).
    let rc = unsafe { ep12::dat_ep_modify(ep, v1::DAT_EP_FIELD_SRQ_HANDLE, &m) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));
    unsafe { dat::api::ia::dat_ia_close(ia, 0) };
}

#[test]
fn lmr_and_rmr_in_1_2_layouts() {
    let (a, p) = connected(ALL_PRIV);
    let mut buf = vec![0u8; 8192];
    let region = DAT_REGION_DESCRIPTION {
        for_va: buf.as_mut_ptr() as DAT_PVOID,
    };
    let (mut lmr, mut lctx, mut rctx, mut len, mut addr) = (null_mut(), 0, 0, 0, 0);
    let rc = unsafe {
        memory::dat_lmr_create(
            a.ia, 0, region, 8192, a.pz, ALL_PRIV, &mut lmr, &mut lctx, &mut rctx, &mut len,
            &mut addr,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!((len, addr), (8192, buf.as_ptr() as u64));
    let rc = unsafe {
        memory::dat_lmr_create(
            a.ia,
            0,
            region,
            8192,
            a.pz,
            ALL_PRIV,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(
        rc,
        code12(DatError::invalid_arg(7)),
        "the handle is argument 7 in 1.2"
    );
    let mut q: v1::DAT_LMR_PARAM = zero();
    let rc = unsafe {
        memory::dat_lmr_query(
            lmr,
            v1::dat_lmr_param_mask::DAT_LMR_FIELD_ALL as u32,
            &mut q,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!(
        (q.ia_handle, q.pz_handle, q.length, q.mem_priv),
        (a.ia, a.pz, 8192, ALL_PRIV)
    );
    assert_eq!(
        (
            q.lmr_context,
            q.rmr_context,
            q.registered_size,
            q.registered_address
        ),
        (lctx, rctx, 8192, addr)
    );
    assert_eq!(unsafe { q.region_desc.for_va } as u64, addr);
    let rc = unsafe { memory::dat_lmr_query(lmr, 0x400, &mut q) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));

    // Bind an RMR on part of it, found by its context alone.
    let mut rmr = null_mut();
    assert_eq!(unsafe { dat::api::rmr::dat_rmr_create(a.pz, &mut rmr) }, OK);
    let part = v1::DAT_LMR_TRIPLET {
        lmr_context: lctx,
        pad: 0,
        virtual_address: addr + 4096,
        segment_length: 1024,
    };
    let write = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_WRITE_FLAG as u32;
    let mut ctx = 0;
    let rc = unsafe { memory::dat_rmr_bind(rmr, &part, write, a.ep, cookie(7), FLAGS, &mut ctx) };
    assert_eq!(rc, OK12);
    let e = wait(a.req_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as u32
    );
    let mut r: v1::DAT_RMR_PARAM = zero();
    let rc = unsafe {
        memory::dat_rmr_query(
            rmr,
            v1::dat_rmr_param_mask::DAT_RMR_FIELD_ALL as u32,
            &mut r,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!(
        (r.ia_handle, r.pz_handle, r.mem_priv, r.rmr_context),
        (a.ia, a.pz, write, ctx)
    );
    let t = r.lmr_triplet;
    assert_eq!(
        (t.lmr_context, t.virtual_address, t.segment_length),
        (lctx, addr + 4096, 1024)
    );
    let rc = unsafe { memory::dat_rmr_query(rmr, 64, &mut r) };
    assert_eq!(
        rc,
        code12(DatError::invalid_arg(2)),
        "2.0's va_type bit is unknown to 1.2"
    );

    // The peer writes through the window.
    let mut pbuf = p.buf.clone();
    pbuf.iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = i as u8 ^ 0x3c);
    let src = [v1::DAT_LMR_TRIPLET {
        lmr_context: p.lmr_ctx,
        pad: 0,
        virtual_address: p.addr(0),
        segment_length: 100,
    }];
    unsafe { std::ptr::copy_nonoverlapping(pbuf.as_ptr(), p.addr(0) as *mut u8, 100) };
    let target = v1::DAT_RMR_TRIPLET {
        rmr_context: ctx,
        pad: 0,
        target_address: addr + 4096 + 24,
        segment_length: 100,
    };
    let rc = unsafe {
        dto::dat_ep_post_rdma_write(p.ep, 1, src.as_ptr() as *mut _, cookie(8), &target, FLAGS)
    };
    assert_eq!(rc, OK12);
    assert_eq!(dto(p.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert_eq!(&buf[4096 + 24..4096 + 124], &pbuf[..100]);

    // No region has this context: the triplet, argument 2.
    let stranger = v1::DAT_LMR_TRIPLET {
        lmr_context: lctx ^ 0x7777_0000,
        ..part
    };
    let rc =
        unsafe { memory::dat_rmr_bind(rmr, &stranger, write, a.ep, cookie(9), FLAGS, &mut ctx) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));
    let long = v1::DAT_LMR_TRIPLET {
        segment_length: 1 << 32,
        ..part
    };
    let rc = unsafe { memory::dat_rmr_bind(rmr, &long, write, a.ep, cookie(9), FLAGS, &mut ctx) };
    assert_eq!(rc, code12(DatError::invalid_arg(2)));
    let rc = unsafe { memory::dat_rmr_bind(rmr, &part, write, a.ep, cookie(9), 0x40, &mut ctx) };
    assert_eq!(rc, code12(DatError::invalid_arg(6)));
    // An unbind needs no region: any context.
    let unbind = v1::DAT_LMR_TRIPLET {
        lmr_context: 0,
        pad: 0,
        virtual_address: 0,
        segment_length: 0,
    };
    let rc =
        unsafe { memory::dat_rmr_bind(rmr, &unbind, write, a.ep, cookie(10), FLAGS, &mut ctx) };
    assert_eq!(rc, OK12);
    assert_eq!(
        wait(a.req_evd).event_number,
        dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as u32
    );
    unsafe { dat::api::rmr::dat_rmr_free(rmr) };
    unsafe { dat::api::lmr::dat_lmr_free(lmr) };
}

#[test]
fn srq_query_and_post_in_1_2_layouts() {
    let (ia, pz) = open_ia_and_pz();
    let mut attr = DAT_SRQ_ATTR {
        max_recv_dtos: 8,
        max_recv_iov: 2,
        low_watermark: 0,
    };
    let mut srq = null_mut();
    let rc = unsafe { dat::api::srq::dat_srq_create(ia, pz, &mut attr, &mut srq) };
    if rc == DatError::not_implemented().code() {
        return; // a transport without SRQs
    }
    assert_eq!(rc, OK);
    let mut buf = vec![0u8; 256];
    let region = DAT_REGION_DESCRIPTION {
        for_va: buf.as_mut_ptr() as DAT_PVOID,
    };
    let (mut lmr, mut lctx) = (null_mut(), 0);
    let rc = unsafe {
        memory::dat_lmr_create(
            ia,
            0,
            region,
            256,
            pz,
            ALL_PRIV,
            &mut lmr,
            &mut lctx,
            null_mut(),
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(rc, OK12);
    let segs = [
        v1::DAT_LMR_TRIPLET {
            lmr_context: lctx,
            pad: 0,
            virtual_address: buf.as_ptr() as u64,
            segment_length: 64,
        },
        v1::DAT_LMR_TRIPLET {
            lmr_context: lctx,
            pad: 0,
            virtual_address: buf.as_ptr() as u64 + 64,
            segment_length: 64,
        },
    ];
    assert_eq!(
        unsafe { dto::dat_srq_post_recv(srq, 2, segs.as_ptr() as *mut _, cookie(1)) },
        OK12
    );
    let long = [v1::DAT_LMR_TRIPLET {
        segment_length: 1 << 32,
        ..segs[0]
    }];
    let rc = unsafe { dto::dat_srq_post_recv(srq, 1, long.as_ptr() as *mut _, cookie(2)) };
    assert_eq!(rc, code12(DatError::invalid_arg(3)));
    let mut q: v1::DAT_SRQ_PARAM = zero();
    let rc = unsafe {
        srq12::dat_srq_query(
            srq,
            v1::dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32,
            &mut q,
        )
    };
    assert_eq!(rc, OK12);
    assert_eq!(
        q.srq_state,
        v1::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as u32
    );
    assert_eq!(
        (q.ia_handle, q.pz_handle, q.max_recv_dtos, q.max_recv_iov),
        (ia, pz, 8, 2)
    );
    assert_eq!(q.available_dto_count, 1);
    unsafe { dat::api::ia::dat_ia_close(ia, 0) };
}
