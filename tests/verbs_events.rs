//! DAT events and faults that only an RDMA device gives, through the exported functions on the
//! RDMA IA (`LIBDAT_TEST_IA`, `LIBDAT_TEST_ADDR`): an address no neighbour answers for is
//! UNREACHABLE, a host that never answers TIMED_OUT, a port that goes down an IA catastrophic
//! error on the async EVD; a registration beyond RLIMIT_MEMLOCK is refused with a hint, a
//! process that forks after registering keeps working, an EVD resized for the receives of four
//! connections takes all their completions (its CQ grows with it), and without the resize its
//! CQ's overrun is the EVD's overflow. The connection events both transports give are
//! tests/connections.rs, which `make test-rdma` runs on the RDMA IA too.
//! Needs an RDMA device: `make test-rdma` runs these in the soft-RoCE guest (as root: two tests
//! change the interface's settings for their time).

use std::net::Ipv4Addr;
use std::process::Command;
use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*};
use dat::error::{DatError, Sub};

mod common;
use common::*;

/// An address on the device's subnet that no host has (the last byte flipped).
fn nobody() -> libc::sockaddr_in {
    let mut sin = loopback();
    let [a, b, c, d] = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)).octets();
    sin.sin_addr.s_addr = u32::from(Ipv4Addr::new(a, b, c, d ^ 0x80)).to_be();
    sin
}

/// Runs `ip link set NETDEV SETTING...` now and `ip link set NETDEV UNDO...` however the test
/// ends.
struct Link(String, &'static [&'static str]);

impl Link {
    fn set(netdev: &str, setting: &[&str], undo: &'static [&'static str]) -> Link {
        assert!(Command::new("ip")
            .args(["link", "set", netdev])
            .args(setting)
            .status()
            .unwrap()
            .success());
        Link(netdev.into(), undo)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "set", &self.0])
            .args(self.1)
            .status();
    }
}

fn netdev() -> String {
    std::env::var("RXE_VM_NETDEV").expect("RXE_VM_NETDEV: the device's network interface")
}

#[test]
#[ignore = "needs an RDMA device and root: make test-rdma runs it in the soft-RoCE guest"]
fn an_address_nobody_answers_arp_for_is_unreachable() {
    // The guest's interface resolves no neighbour (NOARP) until told to ask.
    let _arp = Link::set(&netdev(), &["arp", "on"], &["arp", "off"]);
    let a = Side::new(ALL_PRIV);
    assert_eq!(a.connect_at(nobody(), 4791, b"", WAIT_US), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_UNREACHABLE
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_host_that_never_answers_times_out() {
    let a = Side::new(ALL_PRIV);
    // The interface (NOARP) sends the request into nothing.
    assert_eq!(a.connect_at(nobody(), 4791, b"", 1_000_000), OK);
    assert_eq!(
        a.conn_event().0,
        dat_event_number::DAT_CONNECTION_EVENT_TIMED_OUT
    );
    assert_eq!(a.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
}

#[test]
#[ignore = "needs an RDMA device and root: make test-rdma runs it in the soft-RoCE guest"]
fn a_port_that_goes_down_is_an_ia_catastrophic_error() {
    let a = Side::new(ALL_PRIV);
    let mut async_evd = null_mut();
    let mut attr: DAT_IA_ATTR = zero();
    assert_eq!(
        unsafe { dat_ia_query(a.ia, &mut async_evd, 0, &mut attr, 0, null_mut()) },
        OK
    );
    let _down = Link::set(&netdev(), &["down"], &["up"]);
    let e = wait(async_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_ASYNC_ERROR_IA_CATASTROPHIC as DAT_EVENT_NUMBER
    );
    assert_eq!(
        unsafe { e.event_data.asynch_error_event_data.dat_handle },
        a.ia
    );
}

/// Takes CAP_IPC_LOCK out of this process's capabilities (root's registrations ignore
/// RLIMIT_MEMLOCK while it has it). For a child process alone: it cannot be undone.
fn drop_ipc_lock() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_IPC_LOCK: u32 = 14;
    let mut header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget/capset with a version-3 header and its two data words.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()),
            0
        );
        data[0].effective &= !(1 << CAP_IPC_LOCK);
        data[0].permitted &= !(1 << CAP_IPC_LOCK);
        assert_eq!(
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()),
            0
        );
    }
}

/// Runs `test` of this binary alone in a child process with `LIBDAT_TEST_CHILD` set; its
/// exit status and standard error.
fn in_child(test: &str) -> (bool, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LIBDAT_TEST_CHILD", "1")
        .env("LIBDAT_DEBUG", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "the child of registration_beyond_the_memlock_limit_is_insufficient_resources"]
fn memlock_child() {
    if std::env::var_os("LIBDAT_TEST_CHILD").is_none() {
        return;
    }
    drop_ipc_lock();
    let limit = libc::rlimit {
        rlim_cur: 64 << 10,
        rlim_max: 64 << 10,
    };
    // SAFETY: a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) }, 0);
    let (ia, pz) = open_ia_and_pz();
    let mut buf = vec![1u8; 4 << 20];
    let (mut lmr, mut lmr_ctx, mut rmr_ctx) = (null_mut(), 0, 0);
    let region = DAT_REGION_DESCRIPTION {
        for_va: buf.as_mut_ptr() as DAT_PVOID,
    };
    let rc = unsafe {
        dat_lmr_create(
            ia,
            0,
            region,
            buf.len() as u64,
            pz,
            ALL_PRIV,
            0,
            &mut lmr,
            &mut lmr_ctx,
            &mut rmr_ctx,
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(
        rc,
        DatError::resources(Sub::DAT_RESOURCE_MEMORY_REGION).code()
    );
    // What fits under the limit still registers.
    let rc = unsafe {
        dat_lmr_create(
            ia,
            0,
            region,
            4096,
            pz,
            ALL_PRIV,
            0,
            &mut lmr,
            &mut lmr_ctx,
            &mut rmr_ctx,
            null_mut(),
            null_mut(),
        )
    };
    assert_eq!(rc, OK);
    buf[0] = 0;
}

#[test]
#[ignore = "needs an RDMA device and root: make test-rdma runs it in the soft-RoCE guest"]
fn registration_beyond_the_memlock_limit_is_insufficient_resources() {
    let (ok, stderr) = in_child("memlock_child");
    assert!(ok, "the child failed:\n{stderr}");
    assert!(
        stderr.contains("RLIMIT_MEMLOCK"),
        "no hint under LIBDAT_DEBUG:\n{stderr}"
    );
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_process_that_forks_after_registering_keeps_working() {
    let (mut a, mut p) = connected(ALL_PRIV);
    // The child touches the registered buffers and ends; the parent goes on using them.
    // SAFETY: the child only writes to its copy of the buffers and exits without unwinding.
    let child = unsafe { libc::fork() };
    assert!(child >= 0);
    if child == 0 {
        a.buf[..4096].fill(0x5a);
        p.buf[..4096].fill(0x5a);
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
    for round in 0..4u8 {
        // The parent writes its pages after the fork (copy-on-write moves them, unless the
        // kernel keeps pinned pages with the parent).
        a.buf[..64].fill(round + 1);
        p.post_recv(&[p.iov(1024, 64)], u64::from(round));
        assert_eq!(a.post_send(&[a.iov(0, 64)], 100 + u64::from(round)), OK);
        assert_eq!(
            dto(p.recv_evd),
            (
                u64::from(round),
                dat_dto_completion_status::DAT_DTO_SUCCESS,
                64,
                dat_dtos::DAT_DTO_RECEIVE
            )
        );
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
        assert!(
            p.buf[1024..1088].iter().all(|&b| b == round + 1),
            "round {round}: the message did not land in the parent's buffer"
        );
        let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
        let local = [a.iov(0, 64)];
        let remote = p.rmr(2048, 64);
        assert_eq!(
            unsafe {
                dat_ep_post_rdma_write(
                    a.ep,
                    1,
                    local.as_ptr() as *mut _,
                    cookie(200),
                    &remote,
                    flags,
                )
            },
            OK
        );
        assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
        assert!(
            p.buf[2048..2112].iter().all(|&b| b == round + 1),
            "round {round}: the write did not land in the parent's buffer"
        );
        p.buf[1024] = 0;
    }
}

/// Connects `conns` peers to `p`, each to an EP of its own whose receives complete on p's
/// receive EVD (the first is p's own EP), with `msgs` receives posted on each. Returns the
/// peers and the PSP.
fn peers_sharing_a_receive_evd(p: &Side, conns: usize, msgs: u64) -> (Vec<Side>, DAT_PSP_HANDLE) {
    let (psp, port) = p.listen();
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let mut actives = Vec::new();
    for c in 0..conns {
        let ep = if c == 0 {
            p.ep
        } else {
            p.ep_sharing_receives(p.req_evd, p.conn_evd)
        };
        for m in 0..msgs {
            let iov = [p.iov(0, 8)];
            assert_eq!(
                unsafe { dat_ep_post_recv(ep, 1, iov.as_ptr() as *mut _, cookie(m), flags) },
                OK
            );
        }
        let a = Side::new(ALL_PRIV);
        assert_eq!(a.connect(port, b"", WAIT_US), OK);
        let (cr, _) = p.request();
        assert_eq!(unsafe { dat_cr_accept(cr, ep, 0, null_mut()) }, OK);
        assert_eq!(
            wait(p.conn_evd).event_number,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED as DAT_EVENT_NUMBER
        );
        assert_eq!(
            a.conn_event().0,
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED
        );
        actives.push(a);
    }
    (actives, psp)
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn an_evd_resized_takes_the_completions_of_all_its_eps() {
    // Four connections' receives complete on one receive EVD, which nobody polls until every
    // message is in: 1024 completions, more than the EVD's first CQ holds, so the CQ must
    // grow with dat_evd_resize.
    const CONNS: usize = 4;
    const MSGS: u64 = 256; // each EP's default receive queue
    let p = Side::new(ALL_PRIV);
    assert_eq!(
        unsafe { dat_evd_resize(p.recv_evd, (CONNS as u64 * MSGS) as DAT_COUNT) },
        OK
    );
    let (actives, psp) = peers_sharing_a_receive_evd(&p, CONNS, MSGS);
    for a in &actives {
        for m in 0..MSGS {
            assert_eq!(a.post_send(&[a.iov(0, 8)], m), OK);
            assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
        }
    }
    for _ in 0..CONNS as u64 * MSGS {
        assert_eq!(
            polled(p.recv_evd).1,
            dat_dto_completion_status::DAT_DTO_SUCCESS
        );
    }
    assert!(empty(p.recv_evd));
    unsafe { dat_psp_free(psp) };
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn more_completions_than_an_evd_holds_are_its_overflow() {
    // The same four connections without the resize: the EVD (64 events, a CQ of 256) takes
    // 1024 completions nobody reaps. The device reports its CQ's overrun; the IA's async EVD
    // reports the EVD's overflow.
    const CONNS: usize = 4;
    const MSGS: u64 = 256;
    let p = Side::new(ALL_PRIV);
    let mut async_evd = null_mut();
    let mut attr: DAT_IA_ATTR = zero();
    assert_eq!(
        unsafe { dat_ia_query(p.ia, &mut async_evd, 0, &mut attr, 0, null_mut()) },
        OK
    );
    let (actives, psp) = peers_sharing_a_receive_evd(&p, CONNS, MSGS);
    'sending: for a in &actives {
        for m in 0..MSGS {
            // The overrun breaks the connection its completion was for: its sends fail, or
            // wait for acknowledgements that do not come.
            let mut e: DAT_EVENT = zero();
            let mut more = 0;
            if a.post_send(&[a.iov(0, 8)], m) != OK
                || unsafe { dat_evd_wait(a.req_evd, WAIT_US, 1, &mut e, &mut more) } != OK
                || unsafe { e.event_data.dto_completion_event_data.status }
                    != dat_dto_completion_status::DAT_DTO_SUCCESS as u32
            {
                break 'sending;
            }
        }
    }
    let e = wait(async_evd);
    assert_eq!(
        e.event_number,
        dat_event_number::DAT_ASYNC_ERROR_EVD_OVERFLOW as DAT_EVENT_NUMBER
    );
    assert_eq!(
        unsafe { e.event_data.asynch_error_event_data.dat_handle },
        p.recv_evd
    );
    unsafe { dat_psp_free(psp) };
}
