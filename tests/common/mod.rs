//! What the connection tests share: one side of a connection (an IA, its PZ, EVDs, EP and a
//! registered buffer), connecting two of them, and waiting for their events.
//!
//! The IA is the built-in `tcp-lo` unless `LIBDAT_TEST_IA` names another and
//! `LIBDAT_TEST_ADDR` its IPv4 address (`make test-rdma` runs the transport-neutral tests on the
//! soft-RoCE guest's RDMA IA so).
#![allow(dead_code)] // each test binary uses its own part

use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*, pz::*, srq::*};
use dat::error::Type;

pub const OK: DAT_RETURN = 0;
pub const WAIT_US: DAT_TIMEOUT = 10_000_000;
pub const ALL_PRIV: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
pub const LOCAL_PRIV: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_READ_FLAG as u32
    | dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_WRITE_FLAG as u32;

/// The attributes an EP of `ia` gets when the consumer gives none: the largest message and
/// RDMA are its transport's (`dat_ia_query`; soft-RoCE's are smaller than TCP's).
pub fn default_ep_attr(ia: DAT_IA_HANDLE) -> DAT_EP_ATTR {
    let mut ia_attr: DAT_IA_ATTR = zero();
    let mut async_evd = null_mut();
    // SAFETY: a live IA and out-pointers to live locals.
    let rc = unsafe { dat_ia_query(ia, &mut async_evd, 0, &mut ia_attr, 0, null_mut()) };
    assert_eq!(rc, OK);
    let mut attr = dat::objects::ep::default_attr();
    attr.max_message_size = ia_attr.max_message_size;
    attr.max_rdma_size = ia_attr.max_rdma_size;
    attr
}

pub fn zero<T>() -> T {
    unsafe { std::mem::zeroed() }
}
pub fn cookie(v: u64) -> DAT_DTO_COOKIE {
    DAT_CONTEXT { as_64: v }
}
/// The IA the tests open: `LIBDAT_TEST_IA`, or the built-in `tcp-lo`.
pub fn test_ia() -> std::ffi::CString {
    std::ffi::CString::new(std::env::var("LIBDAT_TEST_IA").unwrap_or_else(|_| "tcp-lo".into()))
        .unwrap()
}

/// Whether the tests run on an RDMA IA (`make test-rdma`), where a few outcomes are the
/// device's to decide.
pub fn on_rdma() -> bool {
    std::env::var("LIBDAT_TEST_IA").is_ok_and(|ia| ia != "tcp-lo" && !ia.starts_with("tcp-"))
}

/// The address of the IA the tests open, where its listeners are reached.
pub fn loopback() -> libc::sockaddr_in {
    let ip: std::net::Ipv4Addr = std::env::var("LIBDAT_TEST_ADDR")
        .map(|a| a.parse().expect("LIBDAT_TEST_ADDR is an IPv4 address"))
        .unwrap_or(std::net::Ipv4Addr::LOCALHOST);
    let mut sin: libc::sockaddr_in = zero();
    sin.sin_family = libc::AF_INET as libc::sa_family_t;
    sin.sin_addr.s_addr = u32::from(ip).to_be();
    sin
}

/// One side: an IA (`test_ia`) with a PZ, its EVDs, one EP, and a registered buffer.
pub struct Side {
    pub ia: DAT_IA_HANDLE,
    pub recv_evd: DAT_EVD_HANDLE,
    pub req_evd: DAT_EVD_HANDLE,
    pub conn_evd: DAT_EVD_HANDLE,
    pub cr_evd: DAT_EVD_HANDLE,
    pub pz: DAT_PZ_HANDLE,
    pub ep: DAT_EP_HANDLE,
    pub buf: Vec<u8>,
    pub lmr: DAT_LMR_HANDLE,
    pub lmr_ctx: DAT_LMR_CONTEXT,
    pub rmr_ctx: DAT_RMR_CONTEXT,
}

/// An IA (`test_ia`) and a protection zone in it.
pub fn open_ia_and_pz() -> (DAT_IA_HANDLE, DAT_PZ_HANDLE) {
    let mut async_evd: DAT_EVD_HANDLE = null_mut();
    let (mut ia, mut pz) = (null_mut(), null_mut());
    // SAFETY: valid name and out-pointers for the calls.
    unsafe {
        assert_eq!(
            dat_ia_openv(
                test_ia().as_ptr() as DAT_NAME_PTR,
                8,
                &mut async_evd,
                &mut ia,
                2,
                0,
                1
            ),
            OK
        );
        assert_eq!(dat_pz_create(ia, &mut pz), OK);
    }
    (ia, pz)
}

/// An EVD of `ia` with room for `qlen` events of the kinds `flags` names.
pub fn create_evd(ia: DAT_IA_HANDLE, qlen: DAT_COUNT, flags: dat_evd_flags) -> DAT_EVD_HANDLE {
    let mut e = null_mut();
    // SAFETY: a live IA and a valid out-pointer.
    assert_eq!(
        unsafe { dat_evd_create(ia, qlen, null_mut(), flags as u32, &mut e) },
        OK
    );
    e
}

impl Side {
    pub fn new(privileges: u32) -> Side {
        Side::with_buffer(privileges, 4096)
    }

    /// A side whose registered buffer holds `len` bytes.
    pub fn with_buffer(privileges: u32, len: usize) -> Side {
        unsafe {
            let (ia, pz) = open_ia_and_pz();
            let evd = |flags| create_evd(ia, 64, flags);
            let recv_evd = evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
            let req_evd = evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
            let conn_evd = evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
            let cr_evd = evd(dat_evd_flags::DAT_EVD_CR_FLAG);
            let mut ep = null_mut();
            assert_eq!(
                dat_ep_create(
                    ia,
                    pz,
                    recv_evd,
                    req_evd,
                    conn_evd,
                    std::ptr::null(),
                    &mut ep
                ),
                OK
            );
            let mut buf = vec![0u8; len];
            let mut lmr = null_mut();
            let (mut lmr_ctx, mut rmr_ctx) = (0, 0);
            let region = DAT_REGION_DESCRIPTION {
                for_va: buf.as_mut_ptr() as DAT_PVOID,
            };
            let rc = dat_lmr_create(
                ia,
                0,
                region,
                buf.len() as u64,
                pz,
                privileges,
                0,
                &mut lmr,
                &mut lmr_ctx,
                &mut rmr_ctx,
                null_mut(),
                null_mut(),
            );
            assert_eq!(rc, OK);
            Side {
                ia,
                recv_evd,
                req_evd,
                conn_evd,
                cr_evd,
                pz,
                ep,
                buf,
                lmr,
                lmr_ctx,
                rmr_ctx,
            }
        }
    }

    pub fn addr(&self, offset: usize) -> DAT_VADDR {
        self.buf.as_ptr() as DAT_VADDR + offset as DAT_VADDR
    }

    pub fn iov(&self, offset: usize, len: u32) -> DAT_LMR_TRIPLET {
        DAT_LMR_TRIPLET {
            lmr_context: self.lmr_ctx,
            virtual_address: self.addr(offset),
            segment_length: len,
        }
    }

    pub fn rmr(&self, offset: usize, len: u32) -> DAT_RMR_TRIPLET {
        DAT_RMR_TRIPLET {
            rmr_context: self.rmr_ctx,
            virtual_address: self.addr(offset),
            segment_length: len,
        }
    }

    /// A PSP on a free port.
    pub fn listen(&self) -> (DAT_PSP_HANDLE, DAT_CONN_QUAL) {
        let mut psp = null_mut();
        let mut port = 0;
        let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
        assert_eq!(
            unsafe { dat_psp_create_any(self.ia, &mut port, self.cr_evd, flags, &mut psp) },
            OK
        );
        (psp, port)
    }

    pub fn connect(&self, port: DAT_CONN_QUAL, pd: &[u8], timeout: DAT_TIMEOUT) -> DAT_RETURN {
        self.connect_at(loopback(), port, pd, timeout)
    }

    /// `dat_ep_connect` to `port` at the address `sin`.
    pub fn connect_at(
        &self,
        mut sin: libc::sockaddr_in,
        port: DAT_CONN_QUAL,
        pd: &[u8],
        timeout: DAT_TIMEOUT,
    ) -> DAT_RETURN {
        unsafe {
            dat_ep_connect(
                self.ep,
                &mut sin as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
                port,
                timeout,
                pd.len() as DAT_COUNT,
                pd.as_ptr() as DAT_PVOID,
                dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS,
                dat_connect_flags::DAT_CONNECT_DEFAULT_FLAG as DAT_CONNECT_FLAGS,
            )
        }
    }

    /// The next connection request: its CR and private data.
    pub fn request(&self) -> (DAT_CR_HANDLE, Vec<u8>) {
        let e = wait(self.cr_evd);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
        );
        let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle };
        (cr, cr_private_data(cr))
    }

    /// A child process's side of its parent's connection: tells the parent what it needs
    /// (`said`, one line on stdout, the port among it), then accepts the parent's request.
    pub fn tell_parent_and_accept(&self, said: &str) {
        use std::io::Write;
        println!("{said}");
        std::io::stdout().flush().unwrap();
        let (cr, _) = self.request();
        assert_eq!(unsafe { dat_cr_accept(cr, self.ep, 0, null_mut()) }, OK);
    }

    /// The next connection event's number and private data.
    pub fn conn_event(&self) -> (dat_event_number, Vec<u8>) {
        let e = wait(self.conn_evd);
        let data = unsafe { e.event_data.connect_event_data };
        assert_eq!(data.ep_handle, self.ep);
        let pd = if data.private_data_size > 0 {
            unsafe {
                std::slice::from_raw_parts(
                    data.private_data as *const u8,
                    data.private_data_size as usize,
                )
            }
            .to_vec()
        } else {
            Vec::new()
        };
        (dat_event_number::try_from(e.event_number).unwrap(), pd)
    }

    pub fn state(&self) -> dat_ep_state {
        let mut s = 0;
        assert_eq!(
            unsafe { dat_ep_get_status(self.ep, &mut s, null_mut(), null_mut()) },
            OK
        );
        dat_ep_state::try_from(s).unwrap()
    }

    /// The side's EP gives way to one that draws its receives from a new SRQ of `max_recv`
    /// receives of `max_iov` segments, in the side's zone; the SRQ is returned.
    pub fn move_to_srq(&mut self, max_recv: DAT_COUNT, max_iov: DAT_COUNT) -> DAT_SRQ_HANDLE {
        let mut srq = null_mut();
        let attr = DAT_SRQ_ATTR {
            max_recv_dtos: max_recv,
            max_recv_iov: max_iov,
            low_watermark: 0,
        };
        unsafe {
            assert_eq!(dat_ep_free(self.ep), OK);
            assert_eq!(
                dat_srq_create(self.ia, self.pz, &attr as *const _ as *mut _, &mut srq),
                OK
            );
        }
        self.ep = self.srq_ep(srq);
        srq
    }

    /// Another EP of the side's IA and zone whose receives complete on the side's receive
    /// EVD, its requests and connection events on `req_evd` and `conn_evd` (the side's own,
    /// or others of its IA).
    pub fn ep_sharing_receives(
        &self,
        req_evd: DAT_EVD_HANDLE,
        conn_evd: DAT_EVD_HANDLE,
    ) -> DAT_EP_HANDLE {
        let mut ep = null_mut();
        let rc = unsafe {
            dat_ep_create(
                self.ia,
                self.pz,
                self.recv_evd,
                req_evd,
                conn_evd,
                std::ptr::null(),
                &mut ep,
            )
        };
        assert_eq!(rc, OK);
        ep
    }

    /// Another EP of the side's IA, zone and EVDs, on `srq`.
    pub fn srq_ep(&self, srq: DAT_SRQ_HANDLE) -> DAT_EP_HANDLE {
        let mut ep = null_mut();
        let attr = default_ep_attr(self.ia);
        let rc = unsafe {
            dat_ep_create_with_srq(
                self.ia,
                self.pz,
                self.recv_evd,
                self.req_evd,
                self.conn_evd,
                srq,
                &attr,
                &mut ep,
            )
        };
        assert_eq!(rc, OK);
        ep
    }

    pub fn post_recv(&self, iov: &[DAT_LMR_TRIPLET], c: u64) {
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        assert_eq!(
            unsafe {
                dat_ep_post_recv(
                    self.ep,
                    iov.len() as DAT_COUNT,
                    iov.as_ptr() as *mut _,
                    cookie(c),
                    flags,
                )
            },
            OK
        );
    }

    pub fn post_send(&self, iov: &[DAT_LMR_TRIPLET], c: u64) -> DAT_RETURN {
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        unsafe {
            dat_ep_post_send(
                self.ep,
                iov.len() as DAT_COUNT,
                iov.as_ptr() as *mut _,
                cookie(c),
                flags,
            )
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        unsafe {
            dat_ia_close(
                self.ia,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        };
    }
}

/// A connection request's private data, as `dat_cr_query` gives it.
pub fn cr_private_data(cr: DAT_CR_HANDLE) -> Vec<u8> {
    let mut p: DAT_CR_PARAM = zero();
    assert_eq!(
        unsafe { dat_cr_query(cr, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, &mut p) },
        OK
    );
    unsafe { std::slice::from_raw_parts(p.private_data as *const u8, p.private_data_size as usize) }
        .to_vec()
}

/// Accepts `cr` (a request of `a`'s) on `p`'s EP, without private data: both sides
/// ESTABLISHED.
pub fn accept_established(a: &Side, p: &Side, cr: DAT_CR_HANDLE) {
    assert_eq!(unsafe { dat_cr_accept(cr, p.ep, 0, null_mut()) }, OK);
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
}

/// Accepts `cr` on `p`'s EP, both sides ESTABLISHED, and checks a message `a` sends lands
/// whole in a receive of `p`'s.
pub fn accept_and_exchange(a: &mut Side, p: &mut Side, cr: DAT_CR_HANDLE, message: &[u8]) {
    accept_established(a, p, cr);
    let n = message.len();
    p.post_recv(&[p.iov(0, 16)], 1);
    a.buf[..n].copy_from_slice(message);
    assert_eq!(a.post_send(&[a.iov(0, n as u32)], 2), OK);
    assert_eq!(
        dto(p.recv_evd),
        (
            1,
            dat_dto_completion_status::DAT_DTO_SUCCESS,
            n as u32,
            dat_dtos::DAT_DTO_RECEIVE
        )
    );
    assert_eq!(&p.buf[..n], message);
}

/// This test binary run again as a child process that runs test `name` alone (a test that
/// acts only when the environment the caller adds says so), its stdout piped to us.
pub fn test_child(name: &str) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .stdout(std::process::Stdio::piped());
    c
}

/// What the child prints after `marker`, on the first line that has it (libtest may print
/// its "test ... " prefix on the same line), trimmed. The child's stdout stays open.
pub fn child_says(child: &mut std::process::Child, marker: &str) -> String {
    use std::io::BufRead;
    let mut out =
        std::io::BufReader::new(child.stdout.take().expect("the child's stdout is piped"));
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(
            out.read_line(&mut line).unwrap(),
            0,
            "the child ended before it printed {marker:?}"
        );
        if let Some(rest) = line.split(marker).nth(1) {
            let said = rest.trim().to_owned();
            child.stdout = Some(out.into_inner());
            return said;
        }
    }
}

/// The next event on `evd` (failing the test after 10 s).
pub fn wait(evd: DAT_EVD_HANDLE) -> DAT_EVENT {
    let mut e: DAT_EVENT = zero();
    let mut more = 0;
    assert_eq!(
        unsafe { dat_evd_wait(evd, WAIT_US, 1, &mut e, &mut more) },
        OK,
        "no event within 10 s"
    );
    e
}

/// A DTO completion: (cookie, status, length, operation).
pub fn dto(evd: DAT_EVD_HANDLE) -> (u64, dat_dto_completion_status, u32, dat_dtos) {
    let e = wait(evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER
    );
    let d = unsafe { e.event_data.dto_completion_event_data };
    (
        unsafe { d.user_cookie.as_64 },
        dat_dto_completion_status::try_from(d.status).unwrap(),
        d.transfered_length,
        dat_dtos::try_from(d.operation).unwrap(),
    )
}

/// The next DTO completion, polled with `dat_evd_dequeue` (the library progresses the
/// connection in this thread): (cookie, status, length). At most 10 s.
pub fn polled(evd: DAT_EVD_HANDLE) -> (u64, dat_dto_completion_status, u32) {
    let mut e: DAT_EVENT = zero();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while unsafe { dat_evd_dequeue(evd, &mut e) } != OK {
        assert!(
            std::time::Instant::now() < deadline,
            "no completion within 10 s"
        );
    }
    let d = unsafe { e.event_data.dto_completion_event_data };
    (
        unsafe { d.user_cookie.as_64 },
        dat_dto_completion_status::try_from(d.status).unwrap(),
        d.transfered_length,
    )
}

pub fn empty(evd: DAT_EVD_HANDLE) -> bool {
    let mut e: DAT_EVENT = zero();
    unsafe { dat_evd_dequeue(evd, &mut e) == Type::DAT_QUEUE_EMPTY as DAT_RETURN }
}

/// A connected pair: (active, passive), both ESTABLISHED; the passive side's PSP is freed.
pub fn connected(privileges: u32) -> (Side, Side) {
    connected_with_buffers(privileges, 4096)
}

pub fn connected_with_buffers(privileges: u32, len: usize) -> (Side, Side) {
    connect_pair(
        Side::with_buffer(privileges, len),
        Side::with_buffer(privileges, len),
    )
}

/// Private data as received is what was sent, followed by nothing but zeros: rdma-cm
/// carries it in a fixed-size field of the CM message and pads it (TCP carries it exactly).
pub fn assert_private_data(received: &[u8], sent: &[u8]) {
    assert!(
        received.starts_with(sent) && received[sent.len()..].iter().all(|&b| b == 0),
        "private data {received:?} is not {sent:?} (padded with zeros)"
    );
}

/// Connects `a` (active) to `p` (passive).
pub fn connect_pair(a: Side, p: Side) -> (Side, Side) {
    let (psp, port) = p.listen();
    assert_eq!(a.connect(port, b"hello", WAIT_US), OK);
    assert_eq!(
        a.state(),
        dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING
    );
    let (cr, pd) = p.request();
    assert_private_data(&pd, b"hello");
    assert_eq!(
        unsafe { dat_cr_accept(cr, p.ep, 7, b"welcome".as_ptr() as DAT_PVOID) },
        OK
    );
    assert_eq!(
        p.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
    );
    let (event, pd) = a.conn_event();
    assert_eq!(event, dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED);
    assert_private_data(&pd, b"welcome");
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_CONNECTED);
    assert_eq!(p.state(), dat_ep_state::DAT_EP_STATE_CONNECTED);
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
    (a, p)
}
