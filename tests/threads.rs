//! Threads: 4 threads post sends (and some RDMA writes) on their own EPs and reap the request
//! EVD that all 4 EPs share; on the other side, reaper threads take the completions of the
//! receive EVD the 4 peer EPs share and post each receive again. 10^5 messages in all: every
//! message arrives exactly once with its payload, every request completes exactly once with
//! its cookie, every RDMA write's bytes are where it put them. A deadline fails the test with
//! the counts instead of hanging.
//!
//! Reapers of one EVD use both dat_evd_dequeue and dat_evd_wait: while one thread waits, the
//! others' calls return DAT_INVALID_STATE (one waiter per EVD, dat_evd_wait(3DAT)) and they
//! try again. `THREADS_MESSAGES` changes the number of messages, `THREADS_DEADLINE_S` the
//! bound (120 s), `THREADS_VERBOSE=1` prints the counts every 2 s.

use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dat::abi::*;
use dat::api::{cm::*, ep::*, evd::*, ia::*, lmr::*};
use dat::error::Type;

mod common;
use common::{cookie, create_evd, loopback, open_ia_and_pz, zero, OK};

const EPS: usize = 4;
/// Requests in flight per EP (sends and writes), and so send slots per EP.
const WINDOW: usize = 64;
/// Receives posted per EP.
const RECVS: usize = 32;
const SLOT: usize = 256;
/// Every this many requests of an EP, one is an RDMA write.
const WRITE_EVERY: u64 = 8;
/// RDMA write target slots per EP.
const TARGETS: usize = 64;
const TARGET: usize = 64;
/// The bound on the whole run (`THREADS_DEADLINE_S` changes it).
fn bound() -> Duration {
    Duration::from_secs(
        std::env::var("THREADS_DEADLINE_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(120),
    )
}

/// The length of message `seq` of EP `i`: 16 to 256 bytes.
fn msg_len(i: usize, seq: u64) -> usize {
    16 + ((seq * 7 + i as u64 * 13) % 241) as usize
}

/// Byte `j` of message `seq` of EP `i` (after its 16-byte header: EP, sequence number, length).
fn msg_byte(i: usize, seq: u64, j: usize) -> u8 {
    (seq.wrapping_mul(31)
        .wrapping_add(j as u64 * 7)
        .wrapping_add(i as u64 * 101)
        % 251) as u8
}

fn message(i: usize, seq: u64) -> Vec<u8> {
    let len = msg_len(i, seq);
    let mut m = vec![0u8; len];
    m[0..4].copy_from_slice(&(i as u32).to_le_bytes());
    m[4..12].copy_from_slice(&seq.to_le_bytes());
    m[12..16].copy_from_slice(&(len as u32).to_le_bytes());
    for (j, b) in m.iter_mut().enumerate().skip(16) {
        *b = msg_byte(i, seq, j);
    }
    m
}

fn write_byte(i: usize, wseq: u64, j: usize) -> u8 {
    (wseq
        .wrapping_mul(17)
        .wrapping_add(j as u64)
        .wrapping_add(i as u64 * 53)
        % 253) as u8
        | 1
}

/// A request's cookie: EP, whether it is a write, its index among the EP's requests.
fn req_cookie(i: usize, write: bool, k: u64) -> u64 {
    ((i as u64) << 56) | (u64::from(write) << 48) | k
}

/// Memory registered with one IA: a leaked buffer (the library writes it from its threads).
struct Mem {
    base: usize,
    len: usize,
    lmr_ctx: u32,
    rmr_ctx: u32,
}

impl Mem {
    fn new(ia: DAT_IA_HANDLE, pz: DAT_PZ_HANDLE, len: usize) -> Mem {
        let buf: &'static mut [u8] = Box::leak(vec![0u8; len].into_boxed_slice());
        let base = buf.as_mut_ptr() as usize;
        let mut lmr = null_mut();
        let (mut lmr_ctx, mut rmr_ctx) = (0, 0);
        let region = DAT_REGION_DESCRIPTION {
            for_va: base as DAT_PVOID,
        };
        let privs = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
        let rc = unsafe {
            dat_lmr_create(
                ia,
                0,
                region,
                len as u64,
                pz,
                privs,
                0,
                &mut lmr,
                &mut lmr_ctx,
                &mut rmr_ctx,
                null_mut(),
                null_mut(),
            )
        };
        assert_eq!(rc, OK);
        Mem {
            base,
            len,
            lmr_ctx,
            rmr_ctx,
        }
    }
    fn at(&self, off: usize) -> *mut u8 {
        assert!(off < self.len);
        (self.base + off) as *mut u8
    }
    fn iov(&self, off: usize, len: usize) -> DAT_LMR_TRIPLET {
        DAT_LMR_TRIPLET {
            lmr_context: self.lmr_ctx,
            virtual_address: (self.base + off) as DAT_VADDR,
            segment_length: len as u32,
        }
    }
    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|j| unsafe { std::ptr::read_volatile(self.at(off + j)) })
            .collect()
    }
}

/// One side: an IA, its PZ and EVDs, 4 EPs sharing them.
struct Side {
    ia: usize,
    pz: usize,
    recv_evd: usize,
    req_evd: usize,
    conn_evd: usize,
    cr_evd: usize,
    eps: Vec<usize>,
}

fn side() -> Side {
    unsafe {
        let (ia, pz) = open_ia_and_pz();
        let evd = |flags, qlen: i32| create_evd(ia, qlen, flags) as usize;
        // Room for every completion that can be outstanding at once.
        let recv_evd = evd(dat_evd_flags::DAT_EVD_DTO_FLAG, (EPS * RECVS * 2) as i32);
        let req_evd = evd(dat_evd_flags::DAT_EVD_DTO_FLAG, (EPS * WINDOW * 2) as i32);
        let conn_evd = evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG, 64);
        let cr_evd = evd(dat_evd_flags::DAT_EVD_CR_FLAG, 64);
        let mut eps = Vec::new();
        for _ in 0..EPS {
            let mut ep = null_mut();
            let rc = dat_ep_create(
                ia,
                pz,
                recv_evd as _,
                req_evd as _,
                conn_evd as _,
                std::ptr::null(),
                &mut ep,
            );
            assert_eq!(rc, OK);
            eps.push(ep as usize);
        }
        Side {
            ia: ia as usize,
            pz: pz as usize,
            recv_evd,
            req_evd,
            conn_evd,
            cr_evd,
            eps,
        }
    }
}

fn wait_event(evd: usize) -> DAT_EVENT {
    let mut e: DAT_EVENT = zero();
    let mut more = 0;
    assert_eq!(
        unsafe { dat_evd_wait(evd as _, 10_000_000, 1, &mut e, &mut more) },
        OK,
        "no event within 10 s"
    );
    e
}

/// Connects each of a's EPs to the p EP of the same index.
fn connect_all(a: &Side, p: &Side) {
    let mut psp = null_mut();
    let mut port = 0;
    let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
    assert_eq!(
        unsafe { dat_psp_create_any(p.ia as _, &mut port, p.cr_evd as _, flags, &mut psp) },
        OK
    );
    for i in 0..EPS {
        let mut sin = loopback();
        let rc = unsafe {
            dat_ep_connect(
                a.eps[i] as _,
                &mut sin as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
                port,
                10_000_000,
                0,
                null_mut(),
                dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS,
                dat_connect_flags::DAT_CONNECT_DEFAULT_FLAG as DAT_CONNECT_FLAGS,
            )
        };
        assert_eq!(rc, OK);
        let e = wait_event(p.cr_evd);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
        );
        let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle };
        assert_eq!(
            unsafe { dat_cr_accept(cr, p.eps[i] as _, 0, null_mut()) },
            OK
        );
        for s in [p, a] {
            let e = wait_event(s.conn_evd);
            assert_eq!(
                e.event_number,
                dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED as DAT_EVENT_NUMBER
            );
        }
    }
    assert_eq!(unsafe { dat_psp_free(psp) }, OK);
}

/// What every thread shares: the counts, and the first error.
struct Shared {
    stop: AtomicBool,
    error: Mutex<Option<String>>,
    /// Per EP: requests posted, requests completed (sends and writes), messages received.
    posted: [AtomicU64; EPS],
    completed: [AtomicU64; EPS],
    received: [AtomicU64; EPS],
    /// Per EP and request index: completed; per EP and message: received.
    req_done: Vec<Vec<AtomicBool>>,
    msg_seen: Vec<Vec<AtomicBool>>,
    /// Completions taken per reaping thread, and DAT_INVALID_STATE answers (another waiter).
    reaped: Vec<AtomicUsize>,
    busy: AtomicUsize,
}

impl Shared {
    fn fail(&self, e: String) {
        self.error.lock().unwrap().get_or_insert(e);
        self.stop.store(true, Ordering::SeqCst);
    }
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

const INVALID_STATE: u32 = Type::DAT_INVALID_STATE as u32;
const QUEUE_EMPTY: DAT_RETURN = Type::DAT_QUEUE_EMPTY as DAT_RETURN;
const TIMEOUT: DAT_RETURN = Type::DAT_TIMEOUT_EXPIRED as DAT_RETURN;

/// One event from `evd`, by dequeue or by a short wait; None when there was none (or another
/// thread waits on it).
fn reap(evd: usize, wait: bool, shared: &Shared) -> Option<DAT_EVENT> {
    let mut e: DAT_EVENT = zero();
    let rc = if wait {
        let mut more = 0;
        unsafe { dat_evd_wait(evd as _, 2_000, 1, &mut e, &mut more) }
    } else {
        unsafe { dat_evd_dequeue(evd as _, &mut e) }
    };
    match rc {
        OK => Some(e),
        QUEUE_EMPTY | TIMEOUT => None,
        rc if rc & 0x3fff_0000 == INVALID_STATE => {
            shared.busy.fetch_add(1, Ordering::Relaxed);
            std::thread::yield_now();
            None
        }
        rc => {
            shared.fail(format!(
                "{} on the shared EVD: {rc:#x}",
                if wait {
                    "dat_evd_wait"
                } else {
                    "dat_evd_dequeue"
                }
            ));
            None
        }
    }
}

/// A request completion from the shared request EVD.
fn request_done(e: &DAT_EVENT, a_eps: &[usize], shared: &Shared) {
    if e.event_number != dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER {
        return shared.fail(format!("event {:#x} on the request EVD", e.event_number));
    }
    let d = unsafe { e.event_data.dto_completion_event_data };
    let c = unsafe { d.user_cookie.as_64 };
    let (i, write, k) = ((c >> 56) as usize, (c >> 48) & 1 == 1, c & ((1 << 48) - 1));
    if i >= EPS || a_eps[i] != d.ep_handle as usize {
        return shared.fail(format!(
            "a completion with cookie {c:#x} for EP {:p}",
            d.ep_handle
        ));
    }
    if d.status != dat_dto_completion_status::DAT_DTO_SUCCESS as u32 {
        return shared.fail(format!(
            "request {k} of EP {i} completed with status {}",
            d.status
        ));
    }
    let (op, len) = if write {
        (dat_dtos::DAT_DTO_RDMA_WRITE, TARGET)
    } else {
        (dat_dtos::DAT_DTO_SEND, msg_len(i, send_seq(k)))
    };
    if d.operation != op as u32 || d.transfered_length as usize != len {
        return shared.fail(format!(
            "request {k} of EP {i}: operation {}, {} bytes",
            d.operation, d.transfered_length
        ));
    }
    match shared.req_done[i].get(k as usize) {
        Some(done) if !done.swap(true, Ordering::SeqCst) => {
            shared.completed[i].fetch_add(1, Ordering::SeqCst);
        }
        Some(_) => shared.fail(format!("request {k} of EP {i} completed twice")),
        None => shared.fail(format!(
            "a completion for request {k} of EP {i}, never posted"
        )),
    }
}

/// Request `k` of an EP is a write when `k % WRITE_EVERY == WRITE_EVERY - 1`; the others are
/// sends, numbered in order.
fn is_write(k: u64) -> bool {
    k % WRITE_EVERY == WRITE_EVERY - 1
}
fn send_seq(k: u64) -> u64 {
    k - k / WRITE_EVERY
}
fn write_seq(k: u64) -> u64 {
    k / WRITE_EVERY
}

#[test]
fn four_threads_post_and_reap_on_shared_evds_nothing_lost_nothing_duplicated() {
    let messages: u64 = std::env::var("THREADS_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let per_ep = messages / EPS as u64;
    // Requests per EP: the sends, and a write after every WRITE_EVERY - 1 of them; the last
    // one a send.
    let req_count = (per_ep..).find(|&k| k - k / WRITE_EVERY == per_ep).unwrap();

    let a = Arc::new(side());
    let p = Arc::new(side());
    connect_all(&a, &p);
    let send_mem = Arc::new(Mem::new(a.ia as _, a.pz as _, EPS * WINDOW * SLOT));
    let recv_mem = Arc::new(Mem::new(p.ia as _, p.pz as _, EPS * RECVS * SLOT));
    let target_mem = Arc::new(Mem::new(p.ia as _, p.pz as _, EPS * TARGETS * TARGET));
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let post_recv = move |mem: &Mem, ep: usize, j: usize, s: usize| -> DAT_RETURN {
        let iov = [mem.iov((j * RECVS + s) * SLOT, SLOT)];
        unsafe {
            dat_ep_post_recv(
                ep as _,
                1,
                iov.as_ptr() as *mut _,
                cookie(((j as u64) << 32) | s as u64),
                flags,
            )
        }
    };
    for j in 0..EPS {
        for s in 0..RECVS {
            assert_eq!(post_recv(&recv_mem, p.eps[j], j, s), OK);
        }
    }
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        posted: Default::default(),
        completed: Default::default(),
        received: Default::default(),
        req_done: (0..EPS)
            .map(|_| (0..req_count).map(|_| AtomicBool::new(false)).collect())
            .collect(),
        msg_seen: (0..EPS)
            .map(|_| (0..per_ep).map(|_| AtomicBool::new(false)).collect())
            .collect(),
        reaped: (0..EPS + 3).map(|_| AtomicUsize::new(0)).collect(),
        busy: AtomicUsize::new(0),
    });
    let start = Instant::now();
    let deadline = start + bound();
    let mut threads = Vec::new();

    // The senders: each posts on its own EP and, while its window is full, reaps the request
    // EVD all four share (threads 0 and 1 by dequeue, 2 and 3 by wait).
    for i in 0..EPS {
        let (a, p, shared, send_mem, target_mem) = (
            a.clone(),
            p.clone(),
            shared.clone(),
            send_mem.clone(),
            target_mem.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let wait = i >= 2;
            for k in 0..req_count {
                // The slot of request k - WINDOW is free once that many requests completed
                // (an EP's requests complete in order).
                while shared.completed[i].load(Ordering::SeqCst) + (WINDOW as u64) <= k {
                    if shared.stopped() || Instant::now() > deadline {
                        return;
                    }
                    if let Some(e) = reap(a.req_evd, wait, &shared) {
                        shared.reaped[i].fetch_add(1, Ordering::Relaxed);
                        request_done(&e, &a.eps, &shared);
                    }
                }
                let slot = (i * WINDOW + (k as usize % WINDOW)) * SLOT;
                let rc = if is_write(k) {
                    let w = write_seq(k);
                    for j in 0..TARGET {
                        unsafe { *send_mem.at(slot + j) = write_byte(i, w, j) };
                    }
                    let local = [send_mem.iov(slot, TARGET)];
                    let t = (i * TARGETS + (w as usize % TARGETS)) * TARGET;
                    let remote = DAT_RMR_TRIPLET {
                        rmr_context: target_mem.rmr_ctx,
                        virtual_address: (target_mem.base + t) as DAT_VADDR,
                        segment_length: TARGET as u32,
                    };
                    unsafe {
                        dat_ep_post_rdma_write(
                            a.eps[i] as _,
                            1,
                            local.as_ptr() as *mut _,
                            cookie(req_cookie(i, true, k)),
                            &remote,
                            flags,
                        )
                    }
                } else {
                    let m = message(i, send_seq(k));
                    for (j, b) in m.iter().enumerate() {
                        unsafe { *send_mem.at(slot + j) = *b };
                    }
                    let iov = [send_mem.iov(slot, m.len())];
                    unsafe {
                        dat_ep_post_send(
                            a.eps[i] as _,
                            1,
                            iov.as_ptr() as *mut _,
                            cookie(req_cookie(i, false, k)),
                            flags,
                        )
                    }
                };
                if rc != OK {
                    return shared.fail(format!("EP {i}: posting request {k}: {rc:#x}"));
                }
                shared.posted[i].fetch_add(1, Ordering::SeqCst);
            }
            // Reap until every request of every EP completed (others' too: the EVD is shared).
            while (0..EPS).any(|x| shared.completed[x].load(Ordering::SeqCst) < req_count) {
                if shared.stopped() || Instant::now() > deadline {
                    return;
                }
                if let Some(e) = reap(a.req_evd, wait, &shared) {
                    shared.reaped[i].fetch_add(1, Ordering::Relaxed);
                    request_done(&e, &a.eps, &shared);
                }
            }
            let _ = p;
        }));
    }

    // The receive reapers: three threads on the receive EVD the four peer EPs share (two by
    // dequeue, one by wait); each checks the message and posts its receive again.
    for r in 0..3 {
        let (p, shared, recv_mem) = (p.clone(), shared.clone(), recv_mem.clone());
        threads.push(std::thread::spawn(move || {
            let wait = r == 2;
            while (0..EPS).any(|x| shared.received[x].load(Ordering::SeqCst) < per_ep) {
                if shared.stopped() || Instant::now() > deadline {
                    return;
                }
                let Some(e) = reap(p.recv_evd, wait, &shared) else {
                    continue;
                };
                shared.reaped[EPS + r].fetch_add(1, Ordering::Relaxed);
                if e.event_number != dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER
                {
                    return shared.fail(format!("event {:#x} on the receive EVD", e.event_number));
                }
                let d = unsafe { e.event_data.dto_completion_event_data };
                let c = unsafe { d.user_cookie.as_64 };
                let (j, s) = ((c >> 32) as usize, (c & 0xffff_ffff) as usize);
                if j >= EPS || s >= RECVS || p.eps[j] != d.ep_handle as usize {
                    return shared.fail(format!(
                        "a receive completion with cookie {c:#x} for EP {:p}",
                        d.ep_handle
                    ));
                }
                if d.status != dat_dto_completion_status::DAT_DTO_SUCCESS as u32
                    || d.operation != dat_dtos::DAT_DTO_RECEIVE as u32
                {
                    return shared.fail(format!(
                        "receive {s} of EP {j}: status {}, operation {}",
                        d.status, d.operation
                    ));
                }
                let off = (j * RECVS + s) * SLOT;
                let head = recv_mem.read(off, 16);
                let i = u32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
                let seq = u64::from_le_bytes(head[4..12].try_into().unwrap());
                if i != j || seq >= per_ep {
                    return shared.fail(format!(
                        "receive {s} of EP {j} holds a message of EP {i}, number {seq}"
                    ));
                }
                let want = message(i, seq);
                if d.transfered_length as usize != want.len()
                    || recv_mem.read(off, want.len()) != want
                {
                    return shared.fail(format!(
                        "message {seq} of EP {i} arrived wrong ({} bytes)",
                        d.transfered_length
                    ));
                }
                if shared.msg_seen[i][seq as usize].swap(true, Ordering::SeqCst) {
                    return shared.fail(format!("message {seq} of EP {i} arrived twice"));
                }
                shared.received[i].fetch_add(1, Ordering::SeqCst);
                let rc = post_recv(&recv_mem, p.eps[j], j, s);
                if rc != OK {
                    return shared.fail(format!("posting receive {s} of EP {j} again: {rc:#x}"));
                }
            }
        }));
    }

    let mut last_report = Instant::now();
    for t in threads {
        while !t.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
            if Instant::now() > deadline + Duration::from_secs(15) {
                shared.fail("a thread did not stop after the deadline".into());
                break;
            }
            if std::env::var_os("THREADS_VERBOSE").is_some()
                && last_report.elapsed() > Duration::from_secs(2)
            {
                last_report = Instant::now();
                eprintln!(
                    "{:?}",
                    (0..EPS)
                        .map(|i| (
                            shared.posted[i].load(Ordering::SeqCst),
                            shared.completed[i].load(Ordering::SeqCst),
                            shared.received[i].load(Ordering::SeqCst)
                        ))
                        .collect::<Vec<_>>()
                );
            }
        }
        if t.is_finished() {
            if let Err(e) = t.join() {
                shared.fail(format!("a thread panicked: {e:?}"));
            }
        }
    }
    let elapsed = start.elapsed();
    let counts: Vec<String> = (0..EPS)
        .map(|i| {
            format!(
                "EP {i}: {} of {req_count} requests posted, {} completed, {} of {per_ep} messages received",
                shared.posted[i].load(Ordering::SeqCst),
                shared.completed[i].load(Ordering::SeqCst),
                shared.received[i].load(Ordering::SeqCst)
            )
        })
        .collect();
    let reaped: Vec<usize> = shared
        .reaped
        .iter()
        .map(|r| r.load(Ordering::Relaxed))
        .collect();
    println!(
        "threads: {messages} messages and {} RDMA writes over {EPS} EP pairs in {:.1} s; completions reaped per thread {reaped:?} (senders, then receive reapers); {} calls found another waiter",
        EPS as u64 * (req_count - per_ep),
        elapsed.as_secs_f64(),
        shared.busy.load(Ordering::Relaxed)
    );
    if let Some(e) = shared.error.lock().unwrap().clone() {
        panic!("{e}\n{}", counts.join("\n"));
    }
    if Instant::now() > deadline {
        panic!("not done within {:?}:\n{}", bound(), counts.join("\n"));
    }
    for i in 0..EPS {
        assert_eq!(
            shared.received[i].load(Ordering::SeqCst),
            per_ep,
            "{}",
            counts.join("\n")
        );
        assert_eq!(
            shared.completed[i].load(Ordering::SeqCst),
            req_count,
            "{}",
            counts.join("\n")
        );
        assert!(shared.msg_seen[i].iter().all(|m| m.load(Ordering::SeqCst)));
        assert!(shared.req_done[i].iter().all(|m| m.load(Ordering::SeqCst)));
        // Each target slot holds the last write to it.
        let writes = (0..req_count)
            .filter(|k| is_write(*k))
            .map(write_seq)
            .collect::<Vec<_>>();
        for t in 0..TARGETS {
            if let Some(&w) = writes.iter().rev().find(|w| **w as usize % TARGETS == t) {
                let got = target_mem.read((i * TARGETS + t) * TARGET, TARGET);
                let want: Vec<u8> = (0..TARGET).map(|j| write_byte(i, w, j)).collect();
                assert_eq!(got, want, "EP {i}: target slot {t} does not hold write {w}");
            }
        }
    }
    // Nothing more came: no completion was left over, none arrives late.
    std::thread::sleep(Duration::from_millis(100));
    let mut e: DAT_EVENT = zero();
    for evd in [a.req_evd, a.recv_evd, p.req_evd, p.recv_evd] {
        assert_eq!(
            unsafe { dat_evd_dequeue(evd as _, &mut e) },
            QUEUE_EMPTY,
            "an event left over"
        );
    }
    for s in [&a, &p] {
        unsafe {
            dat_ia_close(
                s.ia as _,
                dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
            )
        };
    }
}
