//! A thousand connected EPs in one process (500 connections over tcp-lo, both ends here) run on
//! a handful of library threads: the progress engine's, not one or two per connection. Every
//! EP then carries a message both ways. Prints the memory each connected EP costs (resident
//! set growth from before the connections to after the messages, divided by 1000).
//! In its own test binary, because it counts the process's threads and memory.

use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*};

mod common;
use common::{cookie, create_evd, loopback, open_ia_and_pz, zero, OK, WAIT_US};

const PAIRS: usize = 500;
const SLOT: usize = 64;

struct End {
    ia: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    recv_evd: DAT_EVD_HANDLE,
    req_evd: DAT_EVD_HANDLE,
    conn_evd: DAT_EVD_HANDLE,
    cr_evd: DAT_EVD_HANDLE,
    eps: Vec<DAT_EP_HANDLE>,
    buf: Vec<u8>,
    lmr_ctx: DAT_LMR_CONTEXT,
}

impl End {
    /// An IA with shared EVDs (deep enough for every EP) and `PAIRS` EPs on them.
    fn new() -> End {
        unsafe {
            let (ia, pz) = open_ia_and_pz();
            let evd = |flags| create_evd(ia, (PAIRS * 4) as DAT_COUNT, flags);
            let (recv_evd, req_evd) = (
                evd(dat_evd_flags::DAT_EVD_DTO_FLAG),
                evd(dat_evd_flags::DAT_EVD_DTO_FLAG),
            );
            let (conn_evd, cr_evd) = (
                evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG),
                evd(dat_evd_flags::DAT_EVD_CR_FLAG),
            );
            let mut eps = Vec::new();
            for _ in 0..PAIRS {
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
                eps.push(ep);
            }
            let mut buf = vec![0u8; PAIRS * SLOT * 2];
            let (mut lmr, mut lmr_ctx, mut rmr_ctx) = (null_mut(), 0, 0);
            let region = DAT_REGION_DESCRIPTION {
                for_va: buf.as_mut_ptr() as DAT_PVOID,
            };
            let privileges = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
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
            End {
                ia,
                pz,
                recv_evd,
                req_evd,
                conn_evd,
                cr_evd,
                eps,
                buf,
                lmr_ctx,
            }
        }
    }

    /// Slot `i` for receiving (even) or sending (odd).
    fn iov(&self, i: usize, sending: bool) -> DAT_LMR_TRIPLET {
        let at = (2 * i + usize::from(sending)) * SLOT;
        DAT_LMR_TRIPLET {
            lmr_context: self.lmr_ctx,
            virtual_address: self.buf.as_ptr() as u64 + at as u64,
            segment_length: SLOT as DAT_SEG_LENGTH,
        }
    }

    fn slot(&self, i: usize) -> &[u8] {
        &self.buf[2 * i * SLOT..(2 * i + 1) * SLOT]
    }
}

impl Drop for End {
    fn drop(&mut self) {
        let _ = self.pz;
        unsafe {
            dat_ia_close(
                self.ia,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        };
    }
}

/// The next event on `evd`, waited for at most 10 s.
fn next(evd: DAT_EVD_HANDLE) -> DAT_EVENT {
    let mut e: DAT_EVENT = zero();
    let mut more = 0;
    assert_eq!(
        unsafe { dat_evd_wait(evd, WAIT_US, 1, &mut e, &mut more) },
        OK,
        "no event within 10 s"
    );
    e
}

/// The library's threads (they are named `dat-*`).
fn library_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("dat-"))
        .count()
}

/// The resident set, in bytes.
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("resident pages");
    // SAFETY: sysconf takes an integer and returns one.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

fn payload(i: usize, from_active: bool) -> [u8; SLOT] {
    let mut p = [0u8; SLOT];
    for (k, b) in p.iter_mut().enumerate() {
        *b = (i * 7 + k * 13 + usize::from(from_active) * 101) as u8;
    }
    p
}

#[test]
fn a_thousand_connected_eps_run_on_a_handful_of_library_threads() {
    let mut a = End::new();
    let mut p = End::new();
    let before = resident();
    let mut psp = null_mut();
    let mut port = 0;
    unsafe {
        let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
        assert_eq!(
            dat_psp_create_any(p.ia, &mut port, p.cr_evd, flags, &mut psp),
            OK
        );
        let mut sin = loopback();
        for (i, ep) in a.eps.iter().enumerate() {
            let pd = (i as u32).to_le_bytes();
            let rc = dat_ep_connect(
                *ep,
                &mut sin as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
                port,
                WAIT_US,
                4,
                pd.as_ptr() as DAT_PVOID,
                dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS,
                dat_connect_flags::DAT_CONNECT_DEFAULT_FLAG as DAT_CONNECT_FLAGS,
            );
            assert_eq!(rc, OK);
        }
        // Each request names its active EP's index: it is accepted onto the passive EP of the
        // same index, so the pairs are known.
        for _ in 0..PAIRS {
            let e = next(p.cr_evd);
            assert_eq!(
                e.event_number,
                dat_event_number::DAT_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
            );
            let cr = e.event_data.cr_arrival_event_data.cr_handle;
            let mut param: DAT_CR_PARAM = zero();
            assert_eq!(
                dat_cr_query(cr, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, &mut param),
                OK
            );
            let i = u32::from_le_bytes(
                std::slice::from_raw_parts(param.private_data as *const u8, 4)
                    .try_into()
                    .unwrap(),
            ) as usize;
            assert_eq!(dat_cr_accept(cr, p.eps[i], 0, null_mut()), OK);
        }
        for end in [&p, &a] {
            for _ in 0..PAIRS {
                let e = next(end.conn_evd);
                assert_eq!(
                    e.event_number,
                    dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED as DAT_EVENT_NUMBER
                );
            }
        }
        assert_eq!(dat_psp_free(psp), OK);
    }
    let threads = library_threads();
    assert!(
        threads <= 8,
        "{threads} library threads for {} connected EPs",
        2 * PAIRS
    );

    // A message both ways on every EP.
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    for (end, from_active) in [(&mut a, false), (&mut p, true)] {
        for i in 0..PAIRS {
            let r = [end.iov(i, false)];
            assert_eq!(
                unsafe {
                    dat_ep_post_recv(end.eps[i], 1, r.as_ptr() as *mut _, cookie(i as u64), flags)
                },
                OK
            );
        }
        let _ = from_active;
    }
    for (end, from_active) in [(&mut a, true), (&mut p, false)] {
        for i in 0..PAIRS {
            let at = (2 * i + 1) * SLOT;
            end.buf[at..at + SLOT].copy_from_slice(&payload(i, from_active));
            let s = [end.iov(i, true)];
            assert_eq!(
                unsafe {
                    dat_ep_post_send(end.eps[i], 1, s.as_ptr() as *mut _, cookie(i as u64), flags)
                },
                OK
            );
        }
    }
    for (end, from_active) in [(&a, false), (&p, true)] {
        let mut got = vec![false; PAIRS];
        for _ in 0..PAIRS {
            let e = next(end.recv_evd);
            let d = unsafe { e.event_data.dto_completion_event_data };
            assert_eq!(
                d.status,
                dat_dto_completion_status::DAT_DTO_SUCCESS as DAT_DTO_COMPLETION_STATUS
            );
            let i = unsafe { d.user_cookie.as_64 } as usize;
            assert!(!got[i], "EP {i} received twice");
            got[i] = true;
            assert_eq!(
                end.slot(i),
                &payload(i, from_active)[..],
                "EP {i}'s message"
            );
        }
        let mut sent = vec![false; PAIRS];
        for _ in 0..PAIRS {
            let e = next(end.req_evd);
            let d = unsafe { e.event_data.dto_completion_event_data };
            assert_eq!(
                d.status,
                dat_dto_completion_status::DAT_DTO_SUCCESS as DAT_DTO_COMPLETION_STATUS
            );
            let i = unsafe { d.user_cookie.as_64 } as usize;
            assert!(!sent[i], "EP {i}'s send completed twice");
            sent[i] = true;
        }
    }
    let grown = resident().saturating_sub(before);
    println!(
        "many_connections: {} connected EPs, {threads} library threads, {} KiB resident per connected EP",
        2 * PAIRS,
        grown / (2 * PAIRS) / 1024
    );
    assert!(library_threads() <= 8);
}
