//! Lock order under stress: the DAT calls that take two objects' locks (the order is written in
//! `docs/architecture.md`), run at once from several threads over `tcp-lo`, each scenario
//! checking what its calls returned and what its events carried:
//!
//! - accepting while the passive EPs' EVD (their receive and request EVD both) is polled;
//! - connecting while the active EPs' shared EVD is polled and waited on from two threads;
//! - EVDs freed while threads poll and wait on them, as their EPs come and go;
//! - EPs disconnected (both sides, gracefully and abruptly) and freed while messages stream
//!   through their EVDs;
//! - CNOs attached, detached, replaced and waited on while their EVDs fill;
//! - SRQ receives posted while the SRQ's EPs connect and end;
//! - LMRs and RMRs freed while RDMA writes land in them;
//! - PSPs and RSPs freed while connections arrive;
//! - `dat_ia_close` while all of that runs;
//! - receives of connections sharing one EVD taken (in the order filled) while they stream.
//!
//! No scenario can hang: a watchdog fails the run when a DAT call does not return within
//! `LOCK_ORDER_STALL_S` seconds (10) or a scenario outlives its bound, naming each thread and
//! the call it is in (and, where gdb is installed, their stacks: `LOCK_ORDER_GDB=0` skips
//! them); a deadlocked thread cannot be unwound, so the watchdog ends the process.
//! `LOCK_ORDER_SCALE=n` runs every scenario n times longer. The scenarios run one at a time:
//! 10 to 15 s in all on two cores (a debug build).
//!
//! Four problems these scenarios found have tests of their own, which failed (three hung) until
//! they were fixed: `regions_freed_as_a_message_lands_in_two_of_their_segments`,
//! `the_os_wait_proxy_agent_may_post_a_receive` (lock order), `lmrs_freed_while_writes_land_directly`
//! (a wait that outlived what it waited for), `posts_racing_the_free_of_their_ep_complete` (a
//! completion lost).

use std::collections::HashSet;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dat::abi::*;
use dat::api::{cm::*, cno::*, ep::*, evd::*, ia::*, lmr::*, rmr::*, srq::*};
use dat::error::Type;

mod common;
use common::{cookie, create_evd, loopback, open_ia_and_pz, zero, OK};

// ---------------------------------------------------------------------------------------------
// The harness: scenarios one at a time, a board of what each thread is doing, the watchdog.

/// How many times longer than the default each scenario runs (`LOCK_ORDER_SCALE`).
fn scale() -> u64 {
    std::env::var("LOCK_ORDER_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// How long one DAT call may take before the watchdog calls it stuck (`LOCK_ORDER_STALL_S`).
fn stall() -> Duration {
    Duration::from_secs_f64(
        std::env::var("LOCK_ORDER_STALL_S")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10.0),
    )
}

/// Scenarios share the machine's two cores and the watchdog ends the process: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// What one thread of a scenario is doing.
struct Track {
    name: String,
    /// The DAT call it is in (or was last in), what that call is about (a connection's
    /// number...), and since when (None: it returned).
    call: Mutex<(&'static str, u64, Option<Instant>)>,
    calls: AtomicU64,
    finished: AtomicBool,
}

impl Track {
    /// Runs `f`, a DAT call named `what` (about `detail`), on the board.
    fn call<R>(&self, what: &'static str, detail: u64, f: impl FnOnce() -> R) -> R {
        *self.call.lock().unwrap() = (what, detail, Some(Instant::now()));
        let r = f();
        self.call.lock().unwrap().2 = None;
        self.calls.fetch_add(1, SeqCst);
        r
    }
}

/// A scenario: its threads, their board, its first failure.
struct Scenario {
    name: &'static str,
    tracks: Mutex<Vec<Arc<Track>>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    failure: Mutex<Option<String>>,
    stop: AtomicBool,
    /// Notes printed with a stall report (what the scenario got to).
    progress: Mutex<String>,
    /// Past it, a scenario of many trials stops starting new ones (`out_of_time`).
    trials_until: Instant,
}

impl Scenario {
    /// A thread's entry on the board.
    fn track(&self, name: &str) -> Arc<Track> {
        let t = Arc::new(Track {
            name: name.to_string(),
            call: Mutex::new(("(none yet)", 0, None)),
            calls: AtomicU64::new(0),
            finished: AtomicBool::new(false),
        });
        self.tracks.lock().unwrap().push(t.clone());
        t
    }

    /// Starts a thread of the scenario; an error it returns, or a panic, is the scenario's
    /// failure.
    fn spawn(
        self: &Arc<Self>,
        name: &str,
        body: impl FnOnce(&Arc<Scenario>, &Track) -> Result<(), String> + Send + 'static,
    ) {
        let t = self.track(name);
        let s = self.clone();
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&s, &t))) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => s.fail(format!("{}: {e}", t.name)),
                    Err(e) => {
                        let msg = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                        s.fail(format!(
                            "thread {} panicked: {}",
                            t.name,
                            msg.unwrap_or_default()
                        ));
                    }
                }
                t.finished.store(true, SeqCst);
            })
            .expect("a thread");
        self.threads.lock().unwrap().push(h);
    }

    /// Records the scenario's first failure; every thread stops.
    fn fail(&self, why: String) {
        self.failure.lock().unwrap().get_or_insert(why);
        self.stop.store(true, SeqCst);
    }

    fn stopped(&self) -> bool {
        self.stop.load(SeqCst)
    }

    /// Whether a scenario of many trials should start no more: three quarters of its bound
    /// are spent. On a loaded machine it then ends with fewer trials instead of failing as
    /// late; a deadlock is still caught by the stall limit on every call.
    fn out_of_time(&self) -> bool {
        Instant::now() > self.trials_until
    }

    /// Fails the scenario with `why` unless `ok`; returns `ok`.
    fn check(&self, ok: bool, why: impl FnOnce() -> String) -> bool {
        if !ok {
            self.fail(why());
        }
        ok
    }

    fn note(&self, what: String) {
        *self.progress.lock().unwrap() = what;
    }
}

/// Runs scenario `name`: `body` starts its threads (and may run one itself, on the board as
/// `main`); every thread is joined; the first failure fails the test. Bounded by `bound`
/// (times `LOCK_ORDER_SCALE`) and by the watchdog's stall limit on every DAT call.
fn scenario(name: &'static str, bound: Duration, body: impl FnOnce(&Arc<Scenario>)) {
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s = Arc::new(Scenario {
        name,
        tracks: Mutex::new(Vec::new()),
        threads: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
        stop: AtomicBool::new(false),
        progress: Mutex::new(String::new()),
        trials_until: Instant::now() + bound * scale() as u32 * 3 / 4,
    });
    let bound = bound * scale() as u32;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watched = s.clone();
    let watchdog = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || watch(&watched, bound, done_rx))
        .unwrap();
    let started = Instant::now();
    body(&s);
    let threads = std::mem::take(&mut *s.threads.lock().unwrap());
    for t in threads {
        let _ = t.join();
    }
    drop(done_tx);
    let _ = watchdog.join();
    let calls: u64 = s
        .tracks
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.calls.load(SeqCst))
        .sum();
    println!(
        "lock_order: {name}: {calls} DAT calls in {:.1} s; {}",
        started.elapsed().as_secs_f64(),
        s.progress.lock().unwrap()
    );
    let failure = s.failure.lock().unwrap().take();
    if let Some(f) = failure {
        panic!("{name}: {f}");
    }
}

/// The watchdog: wakes every 100 ms until the scenario is done; a DAT call running longer than
/// the stall limit, or a scenario past its bound, is reported and ends the process.
fn watch(s: &Scenario, bound: Duration, done: mpsc::Receiver<()>) {
    let start = Instant::now();
    let limit = stall();
    loop {
        match done.recv_timeout(Duration::from_millis(100)) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            _ => return,
        }
        let now = Instant::now();
        let stuck = s
            .tracks
            .lock()
            .unwrap()
            .iter()
            .any(|t| t.call.lock().unwrap().2.is_some_and(|at| now - at > limit));
        let late = now - start > bound + limit;
        if stuck || late {
            report_and_exit(
                s,
                if stuck {
                    format!("a DAT call has not returned within {limit:?}")
                } else {
                    format!("not done within {bound:?}")
                },
            );
        }
    }
}

/// Says which thread is in which call since when, adds every thread's stack (gdb), and ends
/// the process: a thread stuck in a lock cannot be unwound.
fn report_and_exit(s: &Scenario, why: String) -> ! {
    let now = Instant::now();
    let mut out = format!("\nlock_order: scenario \"{}\" is stuck: {why}.\n", s.name);
    for t in s.tracks.lock().unwrap().iter() {
        let (what, detail, since) = *t.call.lock().unwrap();
        let calls = t.calls.load(SeqCst);
        let line = match (since, t.finished.load(SeqCst)) {
            (_, true) => format!("  {:<12} finished ({calls} calls)\n", t.name),
            (Some(at), _) => format!(
                "  {:<12} IN {what}({detail}) for {:.1} s, after {calls} calls\n",
                t.name,
                (now - at).as_secs_f64()
            ),
            (None, _) => format!(
                "  {:<12} running test code, last call {what}({detail}), after {calls} calls\n",
                t.name
            ),
        };
        out.push_str(&line);
    }
    out.push_str(&format!("  progress: {}\n", s.progress.lock().unwrap()));
    if let Some(f) = s.failure.lock().unwrap().as_ref() {
        out.push_str(&format!("  first failure: {f}\n"));
    }
    // Straight to the descriptor: the test harness captures `eprint!`, and the process ends
    // before it would show what it captured.
    use std::io::Write;
    let _ = std::io::stderr().write_all(out.as_bytes());
    if std::env::var("LOCK_ORDER_GDB").map_or(true, |v| v != "0") {
        let _ = std::io::stderr().write_all(stacks().as_bytes());
    }
    // SAFETY: ends the process at once; nothing of ours is needed after this.
    unsafe { libc::_exit(1) }
}

/// Every thread's stack, the frames of this crate and of the library, as gdb sees them (an
/// empty string where gdb is missing or cannot attach).
fn stacks() -> String {
    let pid = std::process::id().to_string();
    // Into a file, not a pipe: gdb stops every thread of ours, this one too, so nobody would
    // drain a pipe it filled.
    let path = std::env::temp_dir().join(format!("lock_order-stacks-{pid}.txt"));
    let Ok(file) = std::fs::File::create(&path) else {
        return String::new();
    };
    let ran = std::process::Command::new("timeout")
        .args([
            "-s",
            "KILL",
            "60",
            "gdb",
            "-p",
            &pid,
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(file)
        .stderr(std::process::Stdio::null())
        .status();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    if ran.is_err() {
        return String::new();
    }
    let mut kept = String::from("  stacks (gdb; library and test frames):\n");
    let mut frames = 0;
    for line in text.lines() {
        if line.starts_with("Thread ") {
            kept.push_str(&format!("  {line}\n"));
            frames = 0;
        } else if line.starts_with('#')
            && frames < 14
            && (line.contains("dat::")
                || line.contains("lock_order::")
                || line.contains("parking_lot"))
        {
            let short: String = line
                .split(" (")
                .next()
                .unwrap_or(line)
                .chars()
                .take(160)
                .collect();
            kept.push_str(&format!("      {short}\n"));
            frames += 1;
        }
    }
    kept
}

// ---------------------------------------------------------------------------------------------
// DAT helpers: handles are kept as integers (they cross threads).

const DTO: dat_evd_flags = dat_evd_flags::DAT_EVD_DTO_FLAG;
const CONNECTION: dat_evd_flags = dat_evd_flags::DAT_EVD_CONNECTION_FLAG;
const CR: dat_evd_flags = dat_evd_flags::DAT_EVD_CR_FLAG;
const ALL_PRIV: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_ALL_FLAG as u32;
const DEFAULT: DAT_COMPLETION_FLAGS =
    dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
const ABRUPT: DAT_CLOSE_FLAGS = dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS;
const GRACEFUL: DAT_CLOSE_FLAGS = dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG as DAT_CLOSE_FLAGS;
const SUCCESS: u32 = dat_dto_completion_status::DAT_DTO_SUCCESS as u32;
const FLUSHED: u32 = dat_dto_completion_status::DAT_DTO_ERR_FLUSHED as u32;

/// The type of a DAT_RETURN (class and subtype masked off).
fn kind(rc: DAT_RETURN) -> u32 {
    rc & 0x3fff_0000
}
fn is(rc: DAT_RETURN, t: Type) -> bool {
    kind(rc) == t as u32
}

fn event_is(e: &DAT_EVENT, n: dat_event_number) -> bool {
    e.event_number == n as DAT_EVENT_NUMBER
}

/// A DTO completion as the checks read it.
#[derive(Clone, Copy, Debug)]
struct Dto {
    ep: usize,
    cookie: u64,
    status: u32,
    len: u32,
    op: u32,
}

fn dto_of(e: &DAT_EVENT) -> Option<Dto> {
    if !event_is(e, dat_event_number::DAT_DTO_COMPLETION_EVENT) {
        return None;
    }
    // SAFETY: a DTO completion event carries DTO completion data.
    let d = unsafe { e.event_data.dto_completion_event_data };
    // SAFETY: every member of the cookie union is 64 bits of plain data.
    Some(Dto {
        ep: d.ep_handle as usize,
        cookie: unsafe { d.user_cookie.as_64 },
        status: d.status,
        len: d.transfered_length,
        op: d.operation,
    })
}

/// The EP a connection event is about.
fn conn_ep(e: &DAT_EVENT) -> usize {
    // SAFETY: read only for connection events, which carry connection event data.
    unsafe { e.event_data.connect_event_data.ep_handle as usize }
}

/// `dat_evd_wait` for one event, at most `us` microseconds.
fn wait_us(evd: usize, us: u32) -> Result<DAT_EVENT, DAT_RETURN> {
    let mut e: DAT_EVENT = zero();
    let mut more = 0;
    // SAFETY: out-pointers to live locals; a dead handle is refused.
    match unsafe { dat_evd_wait(evd as _, us, 1, &mut e, &mut more) } {
        OK => Ok(e),
        rc => Err(rc),
    }
}

fn dequeue(evd: usize) -> Result<DAT_EVENT, DAT_RETURN> {
    let mut e: DAT_EVENT = zero();
    // SAFETY: an out-pointer to a live local; a dead handle is refused.
    match unsafe { dat_evd_dequeue(evd as _, &mut e) } {
        OK => Ok(e),
        rc => Err(rc),
    }
}

/// The next connection event of `evd` within 10 s.
fn conn_event(t: &Track, evd: usize, about: u64) -> Result<DAT_EVENT, String> {
    t.call("dat_evd_wait", about, || wait_us(evd, 10_000_000))
        .map_err(|rc| format!("no connection event for {about} within 10 s ({rc:#x})"))
}

fn new_evd(ia: usize, qlen: i32, flags: dat_evd_flags) -> usize {
    create_evd(ia as _, qlen, flags) as usize
}

fn free_evd(evd: usize) -> DAT_RETURN {
    // SAFETY: a dead handle is refused.
    unsafe { dat_evd_free(evd as _) }
}

fn free_ep(ep: usize) -> DAT_RETURN {
    // SAFETY: a dead handle is refused.
    unsafe { dat_ep_free(ep as _) }
}

fn close_ia(ia: usize) -> DAT_RETURN {
    // SAFETY: a dead handle is refused.
    unsafe { dat_ia_close(ia as _, ABRUPT) }
}

fn disconnect(ep: usize, flags: DAT_CLOSE_FLAGS) -> DAT_RETURN {
    // SAFETY: a dead handle is refused.
    unsafe { dat_ep_disconnect(ep as _, flags) }
}

/// Memory registered with one IA: a leaked buffer (the library writes it from its threads
/// after the test is done with it).
struct Mem {
    base: usize,
    len: usize,
    lmr_ctx: u32,
}

impl Mem {
    fn new(ia: usize, pz: usize, len: usize) -> Mem {
        let buf: &'static mut [u8] = Box::leak(vec![0u8; len].into_boxed_slice());
        let base = buf.as_mut_ptr() as usize;
        let (_, lmr_ctx, _) = register(ia, pz, base, len).expect("memory registered");
        Mem { base, len, lmr_ctx }
    }
    fn iov(&self, off: usize, len: usize) -> DAT_LMR_TRIPLET {
        assert!(off + len <= self.len);
        DAT_LMR_TRIPLET {
            lmr_context: self.lmr_ctx,
            virtual_address: (self.base + off) as DAT_VADDR,
            segment_length: len as u32,
        }
    }
    fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len);
        // SAFETY: inside the leaked buffer; volatile, as the library writes it from its threads.
        (0..len)
            .map(|j| unsafe { std::ptr::read_volatile((self.base + off + j) as *const u8) })
            .collect()
    }
    fn write(&self, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= self.len);
        for (j, b) in bytes.iter().enumerate() {
            // SAFETY: inside the leaked buffer.
            unsafe { std::ptr::write_volatile((self.base + off + j) as *mut u8, *b) };
        }
    }
}

/// Registers `len` bytes at `base` with every privilege: (LMR, lmr_context, rmr_context).
fn register(
    ia: usize,
    pz: usize,
    base: usize,
    len: usize,
) -> Result<(usize, u32, u32), DAT_RETURN> {
    let mut lmr = null_mut();
    let (mut lmr_ctx, mut rmr_ctx) = (0, 0);
    let region = DAT_REGION_DESCRIPTION {
        for_va: base as DAT_PVOID,
    };
    // SAFETY: out-pointers to live locals; the region is the caller's (leaked) memory.
    let rc = unsafe {
        dat_lmr_create(
            ia as _,
            0,
            region,
            len as u64,
            pz as _,
            ALL_PRIV,
            0,
            &mut lmr,
            &mut lmr_ctx,
            &mut rmr_ctx,
            null_mut(),
            null_mut(),
        )
    };
    if rc == OK {
        Ok((lmr as usize, lmr_ctx, rmr_ctx))
    } else {
        Err(rc)
    }
}

/// One host: an IA (`tcp-lo`), its PZ, the EVD of its service points' requests, and memory.
struct Host {
    ia: usize,
    pz: usize,
    cr_evd: usize,
    mem: Mem,
}

fn host(mem_len: usize) -> Host {
    let (ia, pz) = open_ia_and_pz();
    let (ia, pz) = (ia as usize, pz as usize);
    let cr_evd = new_evd(ia, 1024, CR);
    Host {
        ia,
        pz,
        cr_evd,
        mem: Mem::new(ia, pz, mem_len),
    }
}

impl Host {
    fn ep(&self, recv: usize, req: usize, conn: usize) -> Result<usize, DAT_RETURN> {
        let mut ep = null_mut();
        // SAFETY: live handles (or dead ones, refused) and an out-pointer to a live local.
        match unsafe {
            dat_ep_create(
                self.ia as _,
                self.pz as _,
                recv as _,
                req as _,
                conn as _,
                std::ptr::null(),
                &mut ep,
            )
        } {
            OK => Ok(ep as usize),
            rc => Err(rc),
        }
    }

    fn srq_ep(
        &self,
        recv: usize,
        req: usize,
        conn: usize,
        srq: usize,
    ) -> Result<usize, DAT_RETURN> {
        let mut ep = null_mut();
        let attr = dat::objects::ep::default_attr();
        // SAFETY: as in `ep`.
        match unsafe {
            dat_ep_create_with_srq(
                self.ia as _,
                self.pz as _,
                recv as _,
                req as _,
                conn as _,
                srq as _,
                &attr,
                &mut ep,
            )
        } {
            OK => Ok(ep as usize),
            rc => Err(rc),
        }
    }

    /// A PSP on a free port: (PSP, port).
    fn listen(&self) -> (usize, u64) {
        let mut psp = null_mut();
        let mut port = 0;
        let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
        // SAFETY: live handles and out-pointers to live locals.
        assert_eq!(
            unsafe {
                dat_psp_create_any(self.ia as _, &mut port, self.cr_evd as _, flags, &mut psp)
            },
            OK
        );
        (psp as usize, port)
    }

    /// This host's async EVD.
    fn async_evd(&self) -> usize {
        let mut evd = null_mut();
        // SAFETY: a live IA and an out-pointer to a live local; no attributes asked for.
        assert_eq!(
            unsafe { dat_ia_query(self.ia as _, &mut evd, 0, null_mut(), 0, null_mut()) },
            OK
        );
        evd as usize
    }
}

/// `dat_ep_connect` to `port` on the loopback address, with `pd` as private data.
fn connect(ep: usize, port: u64, pd: &[u8], timeout_us: u32) -> DAT_RETURN {
    let mut sin = loopback();
    // SAFETY: an address and private data that live through the call.
    unsafe {
        dat_ep_connect(
            ep as _,
            &mut sin as *mut libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
            port,
            timeout_us,
            pd.len() as DAT_COUNT,
            pd.as_ptr() as DAT_PVOID,
            dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS,
            dat_connect_flags::DAT_CONNECT_DEFAULT_FLAG as DAT_CONNECT_FLAGS,
        )
    }
}

fn accept(cr: usize, ep: usize) -> DAT_RETURN {
    // SAFETY: no private data.
    unsafe { dat_cr_accept(cr as _, ep as _, 0, null_mut()) }
}

/// A connection request event's CR and private data.
fn cr_of(e: &DAT_EVENT) -> Option<(usize, Vec<u8>)> {
    if !event_is(e, dat_event_number::DAT_CONNECTION_REQUEST_EVENT) {
        return None;
    }
    // SAFETY: a connection request event carries its CR.
    let cr = unsafe { e.event_data.cr_arrival_event_data.cr_handle } as usize;
    let mut p: DAT_CR_PARAM = zero();
    // SAFETY: a live CR (just arrived) and an out-pointer to a live local.
    if unsafe { dat_cr_query(cr as _, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, &mut p) } != OK {
        return Some((cr, Vec::new()));
    }
    // SAFETY: the CR's private data, valid while the CR lives.
    let pd = unsafe {
        std::slice::from_raw_parts(p.private_data as *const u8, p.private_data_size as usize)
    }
    .to_vec();
    Some((cr, pd))
}

fn post_recv(ep: usize, iov: &[DAT_LMR_TRIPLET], c: u64) -> DAT_RETURN {
    // SAFETY: `iov` lives through the call; the memory it names is leaked.
    unsafe {
        dat_ep_post_recv(
            ep as _,
            iov.len() as DAT_COUNT,
            iov.as_ptr() as *mut _,
            cookie(c),
            DEFAULT,
        )
    }
}

fn post_send(ep: usize, iov: &[DAT_LMR_TRIPLET], c: u64) -> DAT_RETURN {
    // SAFETY: as above.
    unsafe {
        dat_ep_post_send(
            ep as _,
            iov.len() as DAT_COUNT,
            iov.as_ptr() as *mut _,
            cookie(c),
            DEFAULT,
        )
    }
}

fn post_write(ep: usize, iov: &[DAT_LMR_TRIPLET], remote: DAT_RMR_TRIPLET, c: u64) -> DAT_RETURN {
    // SAFETY: as above; the remote triplet lives through the call.
    unsafe {
        dat_ep_post_rdma_write(
            ep as _,
            iov.len() as DAT_COUNT,
            iov.as_ptr() as *mut _,
            cookie(c),
            &remote,
            DEFAULT,
        )
    }
}

/// A 16-byte message: its number, and a check word derived from it.
fn message(n: u64) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[..8].copy_from_slice(&n.to_le_bytes());
    m[8..].copy_from_slice(&(n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5A5A).to_le_bytes());
    m
}

/// The number of a message read back, if it is whole.
fn message_number(bytes: &[u8]) -> Option<u64> {
    let n = u64::from_le_bytes(bytes[..8].try_into().ok()?);
    (bytes == message(n)).then_some(n)
}

/// A connection made on one thread from both ends: the active EP connects to `port` (with
/// `n` as private data), the request (on `cr_evd`) is accepted onto the passive EP, and both
/// see ESTABLISHED on their connect EVDs within 10 s.
#[allow(clippy::too_many_arguments)]
fn connect_pair(
    t: &Track,
    n: u64,
    a_ep: usize,
    a_conn: usize,
    cr_evd: usize,
    p_ep: usize,
    p_conn: usize,
    port: u64,
) -> Result<(), String> {
    let rc = t.call("dat_ep_connect", n, || {
        connect(a_ep, port, &n.to_le_bytes(), 10_000_000)
    });
    ok(rc, || format!("connection {n}: dat_ep_connect"))?;
    let e = t
        .call("dat_evd_wait", n, || wait_us(cr_evd, 10_000_000))
        .map_err(|rc| format!("connection {n}: no request within 10 s ({rc:#x})"))?;
    let (cr, _) = cr_of(&e).ok_or(format!(
        "connection {n}: event {:#x} on the CR EVD",
        e.event_number
    ))?;
    ok(t.call("dat_cr_accept", n, || accept(cr, p_ep)), || {
        format!("connection {n}: dat_cr_accept")
    })?;
    expect_conn(
        &conn_event(t, p_conn, n)?,
        &[ESTABLISHED],
        p_ep,
        &format!("passive side of connection {n}"),
    )?;
    expect_conn(
        &conn_event(t, a_conn, n)?,
        &[ESTABLISHED],
        a_ep,
        &format!("active side of connection {n}"),
    )
}

/// Waits, up to `within`, for `done`; false when the scenario stopped or time ran out.
fn until(s: &Scenario, within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !done() {
        if s.stopped() || Instant::now() > deadline {
            return false;
        }
        std::thread::yield_now();
    }
    true
}

/// A set of numbers (messages, requests) shared by threads: each inserted at most once.
#[derive(Default)]
struct Seen(Mutex<HashSet<u64>>);

impl Seen {
    /// Inserts `n`; false when it was there already.
    fn insert(&self, n: u64) -> bool {
        self.0.lock().unwrap().insert(n)
    }
    fn remove(&self, n: u64) {
        self.0.lock().unwrap().remove(&n);
    }
    fn has(&self, n: u64) -> bool {
        self.0.lock().unwrap().contains(&n)
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn all(&self) -> HashSet<u64> {
        self.0.lock().unwrap().clone()
    }
}

/// `Ok` for `DAT_SUCCESS`, else what failed.
fn ok(rc: DAT_RETURN, what: impl FnOnce() -> String) -> Result<(), String> {
    if rc == OK {
        Ok(())
    } else {
        Err(format!("{}: {rc:#x}", what()))
    }
}

/// Checks a connection event: `want`, about `ep`.
fn expect_conn(
    e: &DAT_EVENT,
    want: &[dat_event_number],
    ep: usize,
    what: &str,
) -> Result<(), String> {
    if !want.iter().any(|n| event_is(e, *n)) {
        return Err(format!(
            "{what}: event {:#x}, expected one of {want:?}",
            e.event_number
        ));
    }
    if conn_ep(e) != ep {
        return Err(format!(
            "{what}: a connection event for EP {:#x}, not {ep:#x}",
            conn_ep(e)
        ));
    }
    Ok(())
}

const ESTABLISHED: dat_event_number = dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED;
const DISCONNECTED: dat_event_number = dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED;
const BROKEN: dat_event_number = dat_event_number::DAT_CONNECTION_EVENT_BROKEN;

/// How many connections the connection scenarios keep open at once: a shared EVD has several
/// sources to progress while new ones join it and old ones leave.
const KEPT: usize = 4;

/// Waits for the completion of the one request `ep` has in flight, on its own EVD `evd`.
fn request_done(t: &Track, evd: usize, c: u64) -> Result<Dto, String> {
    let e = t
        .call("dat_evd_wait", c, || wait_us(evd, 10_000_000))
        .map_err(|rc| format!("request {c}: no completion within 10 s ({rc:#x})"))?;
    let d = dto_of(&e).ok_or(format!("request {c}: event {:#x}", e.event_number))?;
    if d.cookie != c || d.status != SUCCESS {
        return Err(format!("request {c}: completion {d:?}"));
    }
    Ok(d)
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

/// The deadlock fixed in 4172703: a thread in `dat_cr_accept` held the new EP's lock while it
/// attached the link to the EP's receive EVD, then to its request EVD, the same EVD; a poll of
/// that EVD, between the two, held the EVD's sources and handled the peer's confirmation on
/// the new link, which takes the EP's lock. Here `LANES` pairs of threads make connection
/// after connection (one connects, one accepts), onto passive EPs whose receive and request
/// EVD is one EVD, shared by every passive EP (`OPEN` of each lane's open at once: each poll
/// of the EVD progresses them all, so it holds the EVD's sources the longer), while the main
/// thread polls that EVD with `dat_evd_dequeue`; each connection's message must arrive there,
/// once, whole. (The library before the fix deadlocked within a few hundred connections.)
#[test]
fn accepting_while_the_passive_eps_shared_evd_is_polled() {
    const LANES: u64 = 1;
    const OPEN: usize = 16;
    const POLLERS: usize = 3;
    scenario(
        "accept while polling a shared EVD",
        Duration::from_secs(60),
        |s| {
            let per_lane = 300 * scale();
            let n = LANES * per_lane;
            let a = Arc::new(host(16 * LANES as usize));
            let p = Arc::new(host(16 * n as usize));
            let shared = new_evd(p.ia, 4096, DTO);
            // Which connections' messages the poll found: a passive EP is freed only after.
            let arrived: Arc<Vec<AtomicBool>> =
                Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
            let mut psps = Vec::new();
            for lane in 0..LANES {
                // Each lane's requests come to an EVD of its own: one waiter each.
                let cr_evd = new_evd(p.ia, 64, CR);
                let (mut psp, mut port) = (null_mut(), 0);
                let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
                // SAFETY: live handles and out-pointers to live locals.
                assert_eq!(
                    unsafe {
                        dat_psp_create_any(p.ia as _, &mut port, cr_evd as _, flags, &mut psp)
                    },
                    OK
                );
                psps.push(psp as usize);

                // The active side: one thread connects and sends, another frees each EP once its
                // passive side ended the connection.
                let (to_free_a, freeing_a) = mpsc::channel::<(usize, usize, usize, u64)>();
                let a2 = a.clone();
                s.spawn(&format!("connect {lane}"), move |s, t| {
                    let a = a2;
                    let slot = 16 * lane as usize;
                    for i in (lane * per_lane)..((lane + 1) * per_lane) {
                        if s.stopped() {
                            break;
                        }
                        let (conn, dto) = (new_evd(a.ia, 8, CONNECTION), new_evd(a.ia, 8, DTO));
                        let ep = a
                            .ep(dto, dto, conn)
                            .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        ok(
                            t.call("dat_ep_connect", i, || {
                                connect(ep, port, &i.to_le_bytes(), 10_000_000)
                            }),
                            || format!("connect {i}"),
                        )?;
                        expect_conn(
                            &conn_event(t, conn, i)?,
                            &[ESTABLISHED],
                            ep,
                            &format!("active side of connection {i}"),
                        )?;
                        a.mem.write(slot, &message(i));
                        ok(
                            t.call("dat_ep_post_send", i, || {
                                post_send(ep, &[a.mem.iov(slot, 16)], i)
                            }),
                            || format!("send {i}"),
                        )?;
                        request_done(t, dto, i)?;
                        let _ = to_free_a.send((ep, conn, dto, i));
                    }
                    Ok(())
                });
                s.spawn(&format!("end-a {lane}"), move |s, t| {
                    while !s.stopped() {
                        let (ep, conn, dto, j) =
                            match freeing_a.recv_timeout(Duration::from_millis(100)) {
                                Ok(c) => c,
                                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                            };
                        expect_conn(
                            &conn_event(t, conn, j)?,
                            &[DISCONNECTED, BROKEN],
                            ep,
                            &format!("active end of connection {j}"),
                        )?;
                        ok(t.call("dat_ep_free", j, || free_ep(ep)), || {
                            format!("free active EP {j}")
                        })?;
                        ok(free_evd(conn) | free_evd(dto), || {
                            format!("free the EVDs of active EP {j}")
                        })?;
                    }
                    Ok(())
                });

                // The passive side: one thread accepts, another frees the EPs beyond the `OPEN`
                // newest, connected (which ends their connections), meanwhile: each free takes
                // the link out of the shared EVD's sources.
                let (to_free_p, freeing_p) = mpsc::channel::<(usize, usize, u64)>();
                let p2 = p.clone();
                s.spawn(&format!("accept {lane}"), move |s, t| {
                    let p = p2;
                    for i in (lane * per_lane)..((lane + 1) * per_lane) {
                        if s.stopped() {
                            break;
                        }
                        let e = t
                            .call("dat_evd_wait", i, || wait_us(cr_evd, 10_000_000))
                            .map_err(|rc| format!("no request {i} within 10 s: {rc:#x}"))?;
                        let (cr, pd) = cr_of(&e)
                            .ok_or(format!("event {:#x} on the CR EVD", e.event_number))?;
                        if pd != i.to_le_bytes() {
                            return Err(format!("request {i} carries {pd:?}"));
                        }
                        let conn = new_evd(p.ia, 8, CONNECTION);
                        let ep = p
                            .ep(shared, shared, conn)
                            .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        ok(
                            t.call("dat_ep_post_recv", i, || {
                                post_recv(ep, &[p.mem.iov(16 * i as usize, 16)], i)
                            }),
                            || format!("receive {i}"),
                        )?;
                        ok(t.call("dat_cr_accept", i, || accept(cr, ep)), || {
                            format!("accept {i}")
                        })?;
                        expect_conn(
                            &conn_event(t, conn, i)?,
                            &[ESTABLISHED],
                            ep,
                            &format!("passive side of connection {i}"),
                        )?;
                        let _ = to_free_p.send((ep, conn, i));
                    }
                    Ok(())
                });
                let arrived = arrived.clone();
                s.spawn(&format!("end-p {lane}"), move |s, t| {
                    let mut open = std::collections::VecDeque::new();
                    let mut last = false;
                    while !last && !s.stopped() {
                        match freeing_p.recv_timeout(Duration::from_millis(100)) {
                            Ok(c) => open.push_back(c),
                            Err(mpsc::RecvTimeoutError::Timeout) => continue,
                            Err(mpsc::RecvTimeoutError::Disconnected) => last = true,
                        }
                        while open.len() > if last { 0 } else { OPEN } {
                            let (ep, conn, j) = open.pop_front().unwrap();
                            let deadline = Instant::now() + Duration::from_secs(10);
                            while !arrived[j as usize].load(SeqCst) {
                                if s.stopped() || Instant::now() > deadline {
                                    return Err(format!("message {j} did not arrive within 10 s"));
                                }
                                std::thread::yield_now();
                            }
                            ok(t.call("dat_ep_free", j, || free_ep(ep)), || {
                                format!("free passive EP {j}")
                            })?;
                            ok(free_evd(conn), || {
                                format!("free the connect EVD of passive EP {j}")
                            })?;
                        }
                    }
                    Ok(())
                });
            }

            // The pollers: the main thread and `POLLERS - 1` more, each dequeuing from the shared
            // EVD until every message arrived.
            let received = Arc::new(AtomicU64::new(0));
            let (p2, arrived) = (p.clone(), arrived.clone());
            let poll = move |s: &Arc<Scenario>, t: &Track| -> Result<(), String> {
                let p = &p2;
                let deadline = Instant::now() + Duration::from_secs(50) * scale() as u32;
                while received.load(SeqCst) < n && !s.stopped() {
                    if Instant::now() > deadline {
                        return Err(format!("{} of {n} messages arrived", received.load(SeqCst)));
                    }
                    match t.call("dat_evd_dequeue", received.load(SeqCst), || dequeue(shared)) {
                        Ok(e) => {
                            let d = dto_of(&e)
                                .ok_or(format!("event {:#x} on the shared EVD", e.event_number))?;
                            let good = d.op == dat_dtos::DAT_DTO_RECEIVE as u32
                                && d.status == SUCCESS
                                && d.len == 16
                                && d.cookie < n
                                && message_number(&p.mem.read(16 * d.cookie as usize, 16))
                                    == Some(d.cookie)
                                && !arrived[d.cookie as usize].swap(true, SeqCst);
                            if !good {
                                return Err(format!("on the shared EVD: {d:?}"));
                            }
                            let r = received.fetch_add(1, SeqCst) + 1;
                            s.note(format!("{r} of {n} connections' messages arrived"));
                        }
                        Err(rc) if is(rc, Type::DAT_QUEUE_EMPTY) => {}
                        Err(rc) => return Err(format!("dat_evd_dequeue: {rc:#x}")),
                    }
                }
                Ok(())
            };
            for k in 1..POLLERS {
                let poll = poll.clone();
                s.spawn(&format!("poll {k}"), move |s, t| poll(s, t));
            }
            let t = s.track("poll (main)");
            if let Err(e) = poll(s, &t) {
                s.fail(format!("poll (main): {e}"));
            }
            for psp in psps {
                // SAFETY: a live PSP.
                let _ = unsafe { dat_psp_free(psp as _) };
            }
            for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = t.join();
            }
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// Reaps a shared EVD from several threads, one by `dat_evd_wait` (`waits`), the others by
/// `dat_evd_dequeue`: a wait that finds another waiter, a dequeue that finds a waiter, a wait
/// that times out and a dequeue that finds nothing are all retried. Returns the event, or
/// None after `within`.
fn reap(t: &Track, evd: usize, waits: bool, about: u64) -> Result<Option<DAT_EVENT>, DAT_RETURN> {
    let rc = if waits {
        t.call("dat_evd_wait", about, || wait_us(evd, 1_000))
    } else {
        t.call("dat_evd_dequeue", about, || dequeue(evd))
    };
    match rc {
        Ok(e) => Ok(Some(e)),
        Err(rc)
            if is(rc, Type::DAT_QUEUE_EMPTY)
                || is(rc, Type::DAT_TIMEOUT_EXPIRED)
                || is(rc, Type::DAT_INVALID_STATE) =>
        {
            Ok(None)
        }
        Err(rc) => Err(rc),
    }
}

/// The active side's half of the deadlock fixed in 4172703: a connect completes on the
/// progress thread, which attaches the new link to the EP's receive and request EVDs under
/// the EP's lock, while threads poll and wait on that EVD (shared by every active EP, `KEPT`
/// open at once), whose sources may take the EP's lock for the passive side's first message,
/// which comes right behind its confirmation. Each connection: the passive side sends a
/// greeting as soon as it is ESTABLISHED, the active side one message back; both must arrive,
/// and the active side's requests and receives complete on the shared EVD.
#[test]
fn connecting_while_the_active_eps_shared_evd_is_polled_and_waited_on() {
    scenario(
        "connect while polling and waiting on a shared EVD",
        Duration::from_secs(60),
        |s| {
            let n = 150 * scale();
            let a = Arc::new(host(16 * n as usize));
            let p = Arc::new(host(32 * n as usize));
            let shared = new_evd(a.ia, 8192, DTO);
            let (psp, port) = p.listen();
            const GREETING: u64 = 1 << 32;
            // Per connection: its greeting arrived, its message's send completed.
            let greeted = Arc::new(Seen::default());
            let sent = Arc::new(Seen::default());

            let (to_end, ending) = mpsc::channel::<(usize, usize, u64)>();
            let a2 = a.clone();
            s.spawn("connect", move |s, t| {
                let a = a2;
                for i in 0..n {
                    if s.stopped() {
                        break;
                    }
                    let conn = new_evd(a.ia, 8, CONNECTION);
                    let ep = a
                        .ep(shared, shared, conn)
                        .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                    // The greeting's receive, posted before the connect.
                    ok(
                        t.call("dat_ep_post_recv", i, || {
                            post_recv(ep, &[a.mem.iov(16 * i as usize, 16)], GREETING | i)
                        }),
                        || format!("receive {i}"),
                    )?;
                    ok(
                        t.call("dat_ep_connect", i, || {
                            connect(ep, port, &i.to_le_bytes(), 10_000_000)
                        }),
                        || format!("connect {i}"),
                    )?;
                    expect_conn(
                        &conn_event(t, conn, i)?,
                        &[ESTABLISHED],
                        ep,
                        &format!("active side of connection {i}"),
                    )?;
                    let _ = to_end.send((ep, conn, i));
                }
                Ok(())
            });

            // The passive side: accepts, greets, takes the active side's message, and frees the
            // EP once the active side ended the connection (gracefully).
            let (to_free, freeing) = mpsc::channel::<(usize, usize, usize, u64)>();
            let p2 = p.clone();
            s.spawn("accept", move |s, t| {
                let p = p2;
                for i in 0..n {
                    if s.stopped() {
                        break;
                    }
                    let e = t
                        .call("dat_evd_wait", i, || wait_us(p.cr_evd, 10_000_000))
                        .map_err(|rc| format!("no request {i} within 10 s: {rc:#x}"))?;
                    let (cr, _) =
                        cr_of(&e).ok_or(format!("event {:#x} on the CR EVD", e.event_number))?;
                    let (conn, dto) = (new_evd(p.ia, 8, CONNECTION), new_evd(p.ia, 8, DTO));
                    let ep = p
                        .ep(dto, dto, conn)
                        .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                    ok(
                        t.call("dat_ep_post_recv", i, || {
                            post_recv(ep, &[p.mem.iov(32 * i as usize, 16)], i)
                        }),
                        || format!("receive {i}"),
                    )?;
                    ok(t.call("dat_cr_accept", i, || accept(cr, ep)), || {
                        format!("accept {i}")
                    })?;
                    expect_conn(
                        &conn_event(t, conn, i)?,
                        &[ESTABLISHED],
                        ep,
                        &format!("passive side of connection {i}"),
                    )?;
                    p.mem.write(32 * i as usize + 16, &message(GREETING | i));
                    ok(
                        t.call("dat_ep_post_send", i, || {
                            post_send(ep, &[p.mem.iov(32 * i as usize + 16, 16)], GREETING | i)
                        }),
                        || format!("greeting {i}"),
                    )?;
                    let _ = to_free.send((ep, conn, dto, i));
                }
                Ok(())
            });
            let p2 = p.clone();
            s.spawn("end-p", move |s, t| {
                let p = p2;
                while !s.stopped() {
                    let (ep, conn, dto, j) = match freeing.recv_timeout(Duration::from_millis(100))
                    {
                        Ok(c) => c,
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    // Its greeting's send, then the active side's message, in either order.
                    let mut got = (false, false);
                    while got != (true, true) {
                        let e = t
                            .call("dat_evd_wait", j, || wait_us(dto, 10_000_000))
                            .map_err(|rc| {
                                format!(
                                    "connection {j}: a DTO missing after 10 s ({rc:#x}), {got:?}"
                                )
                            })?;
                        let d = dto_of(&e)
                            .ok_or(format!("connection {j}: event {:#x}", e.event_number))?;
                        if d.status != SUCCESS {
                            return Err(format!("connection {j}: {d:?}"));
                        }
                        if d.cookie == GREETING | j {
                            got.0 = true;
                        } else if d.cookie == j
                            && d.len == 16
                            && message_number(&p.mem.read(32 * j as usize, 16)) == Some(j)
                        {
                            got.1 = true;
                        } else {
                            return Err(format!("connection {j}: {d:?}"));
                        }
                    }
                    expect_conn(
                        &conn_event(t, conn, j)?,
                        &[DISCONNECTED],
                        ep,
                        &format!("passive end of connection {j}"),
                    )?;
                    ok(t.call("dat_ep_free", j, || free_ep(ep)), || {
                        format!("free passive EP {j}")
                    })?;
                    ok(free_evd(conn) | free_evd(dto), || {
                        format!("free the EVDs of passive EP {j}")
                    })?;
                }
                Ok(())
            });

            // The active side's end: once a connection's greeting arrived, its message goes back;
            // connections beyond the `KEPT` newest end gracefully once their message was sent.
            let (a2, greeted2, sent2) = (a.clone(), greeted.clone(), sent.clone());
            s.spawn("end-a", move |s, t| {
                let (a, greeted, sent) = (a2, greeted2, sent2);
                let mut open = std::collections::VecDeque::new();
                let mut last = false;
                while !last && !s.stopped() {
                    match ending.recv_timeout(Duration::from_millis(100)) {
                        Ok(c) => open.push_back(c),
                        Err(mpsc::RecvTimeoutError::Timeout) => continue,
                        Err(mpsc::RecvTimeoutError::Disconnected) => last = true,
                    }
                    if let Some(&(ep, _, i)) = open.back().filter(|_| !last) {
                        if !until(s, Duration::from_secs(10), || greeted.has(i)) {
                            return Err(format!("connection {i}: no greeting within 10 s"));
                        }
                        a.mem.write(16 * i as usize, &message(i));
                        ok(
                            t.call("dat_ep_post_send", i, || {
                                post_send(ep, &[a.mem.iov(16 * i as usize, 16)], i)
                            }),
                            || format!("send {i}"),
                        )?;
                    }
                    while open.len() > if last { 0 } else { KEPT } {
                        let (ep, conn, j) = open.pop_front().unwrap();
                        if !until(s, Duration::from_secs(10), || sent.has(j)) {
                            return Err(format!(
                                "connection {j}: its send did not complete within 10 s"
                            ));
                        }
                        ok(
                            t.call("dat_ep_disconnect", j, || disconnect(ep, GRACEFUL)),
                            || format!("disconnect {j}"),
                        )?;
                        expect_conn(
                            &conn_event(t, conn, j)?,
                            &[DISCONNECTED],
                            ep,
                            &format!("active end of connection {j}"),
                        )?;
                        ok(t.call("dat_ep_free", j, || free_ep(ep)), || {
                            format!("free active EP {j}")
                        })?;
                        ok(free_evd(conn), || {
                            format!("free the connect EVD of active EP {j}")
                        })?;
                    }
                }
                Ok(())
            });

            // The shared EVD's reapers: one waits, two dequeue (the main thread one of them).
            let a2 = a.clone();
            let reaper = move |waits: bool| {
                let (a, greeted, sent) = (a2.clone(), greeted.clone(), sent.clone());
                move |s: &Arc<Scenario>, t: &Track| -> Result<(), String> {
                    let deadline = Instant::now() + Duration::from_secs(50) * scale() as u32;
                    while (greeted.len() as u64) < n || (sent.len() as u64) < n {
                        if s.stopped() || Instant::now() > deadline {
                            return Err(format!(
                                "{} greetings arrived and {} sends completed of {n}",
                                greeted.len(),
                                sent.len()
                            ));
                        }
                        let Some(e) = reap(t, shared, waits, greeted.len() as u64)
                            .map_err(|rc| format!("reaping the shared EVD: {rc:#x}"))?
                        else {
                            continue;
                        };
                        let d = dto_of(&e)
                            .ok_or(format!("event {:#x} on the shared EVD", e.event_number))?;
                        let i = d.cookie & (GREETING - 1);
                        let good = d.status == SUCCESS
                            && i < n
                            && if d.cookie & GREETING != 0 {
                                d.op == dat_dtos::DAT_DTO_RECEIVE as u32
                                    && message_number(&a.mem.read(16 * i as usize, 16))
                                        == Some(GREETING | i)
                                    && greeted.insert(i)
                            } else {
                                d.op == dat_dtos::DAT_DTO_SEND as u32 && sent.insert(i)
                            };
                        if !good {
                            return Err(format!("on the shared EVD: {d:?}"));
                        }
                        s.note(format!(
                            "{} of {n} greetings arrived, {} sends completed",
                            greeted.len(),
                            sent.len()
                        ));
                    }
                    Ok(())
                }
            };
            s.spawn("wait", reaper(true));
            s.spawn("dequeue", reaper(false));
            let t = s.track("dequeue (main)");
            if let Err(e) = reaper(false)(s, &t) {
                s.fail(format!("dequeue (main): {e}"));
            }
            for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = t.join();
            }
            // SAFETY: a live PSP.
            let _ = unsafe { dat_psp_free(psp as _) };
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// EVDs freed while threads poll and wait on them: round after round, a new EVD takes the
/// passive EPs' receives and requests (`PER_ROUND` connections, one message each), two threads
/// reap it (one waits, one dequeues) by a handle they read anew each time, and once its
/// messages are in, its EPs are freed (half the rounds while connected, the others after
/// their active side disconnected) and then the EVD itself, while the reapers still poll and
/// wait on it: the free must succeed, the reapers' calls must fail cleanly with
/// DAT_INVALID_HANDLE, and every message arrive once.
#[test]
fn evds_freed_while_threads_poll_and_wait_on_them() {
    const PER_ROUND: u64 = 3;
    scenario(
        "EVDs freed while polled and waited on",
        Duration::from_secs(60),
        |s| {
            let rounds = 40 * scale();
            let n = rounds * PER_ROUND;
            let a = host(16);
            let p = Arc::new(host(16 * n as usize));
            let (psp, port) = p.listen();
            let current = Arc::new(AtomicUsize::new(0));
            let got = Arc::new(Seen::default());
            let freed_seen = Arc::new(AtomicU64::new(0));

            for waits in [true, false] {
                let (p, current, got, freed_seen) =
                    (p.clone(), current.clone(), got.clone(), freed_seen.clone());
                s.spawn(if waits { "wait" } else { "dequeue" }, move |s, t| {
                    while (got.len() as u64) < n && !s.stopped() {
                        let evd = current.load(SeqCst);
                        if evd == 0 {
                            std::thread::yield_now();
                            continue;
                        }
                        let e = match reap(t, evd, waits, got.len() as u64) {
                            Ok(Some(e)) => e,
                            Ok(None) => continue,
                            // Freed before the call, or while the wait slept (DAT_ABORT).
                            Err(rc)
                                if is(rc, Type::DAT_INVALID_HANDLE) || is(rc, Type::DAT_ABORT) =>
                            {
                                freed_seen.fetch_add(1, SeqCst);
                                continue;
                            }
                            Err(rc) => return Err(format!("reaping: {rc:#x}")),
                        };
                        let d = dto_of(&e).ok_or(format!("event {:#x}", e.event_number))?;
                        let good = d.op == dat_dtos::DAT_DTO_RECEIVE as u32
                            && d.status == SUCCESS
                            && d.cookie < n
                            && message_number(&p.mem.read(16 * d.cookie as usize, 16))
                                == Some(d.cookie)
                            && got.insert(d.cookie);
                        if !good {
                            return Err(format!("reaped {d:?}"));
                        }
                    }
                    Ok(())
                });
            }

            let t = s.track("rounds (main)");
            let round = |r: u64| -> Result<(), String> {
                let evd = new_evd(p.ia, 64, DTO);
                let (a_dto, a_conns) = (
                    new_evd(a.ia, 64, DTO),
                    (0..PER_ROUND)
                        .map(|_| new_evd(a.ia, 8, CONNECTION))
                        .collect::<Vec<_>>(),
                );
                current.store(evd, SeqCst);
                let mut pairs = Vec::new();
                for c in 0..PER_ROUND {
                    let i = r * PER_ROUND + c;
                    let p_conn = new_evd(p.ia, 8, CONNECTION);
                    let a_ep = a
                        .ep(a_dto, a_dto, a_conns[c as usize])
                        .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                    let p_ep = p
                        .ep(evd, evd, p_conn)
                        .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                    ok(
                        t.call("dat_ep_post_recv", i, || {
                            post_recv(p_ep, &[p.mem.iov(16 * i as usize, 16)], i)
                        }),
                        || format!("receive {i}"),
                    )?;
                    connect_pair(
                        &t,
                        i,
                        a_ep,
                        a_conns[c as usize],
                        p.cr_evd,
                        p_ep,
                        p_conn,
                        port,
                    )?;
                    a.mem.write(0, &message(i));
                    ok(
                        t.call("dat_ep_post_send", i, || {
                            post_send(a_ep, &[a.mem.iov(0, 16)], i)
                        }),
                        || format!("send {i}"),
                    )?;
                    request_done(&t, a_dto, i)?;
                    pairs.push((a_ep, a_conns[c as usize], p_ep, p_conn, i));
                }
                if !until(s, Duration::from_secs(10), || {
                    (r * PER_ROUND..(r + 1) * PER_ROUND).all(|i| got.has(i))
                }) {
                    return Err(format!(
                        "round {r}: its messages did not all arrive within 10 s"
                    ));
                }
                for (a_ep, a_conn, p_ep, p_conn, i) in pairs {
                    if r.is_multiple_of(2) {
                        ok(t.call("dat_ep_free", i, || free_ep(p_ep)), || {
                            format!("free passive EP {i}")
                        })?;
                        expect_conn(
                            &conn_event(&t, a_conn, i)?,
                            &[DISCONNECTED, BROKEN],
                            a_ep,
                            &format!("active end of connection {i}"),
                        )?;
                    } else {
                        ok(
                            t.call("dat_ep_disconnect", i, || disconnect(a_ep, ABRUPT)),
                            || format!("disconnect {i}"),
                        )?;
                        expect_conn(
                            &conn_event(&t, p_conn, i)?,
                            &[DISCONNECTED, BROKEN],
                            p_ep,
                            &format!("passive end of connection {i}"),
                        )?;
                        ok(t.call("dat_ep_free", i, || free_ep(p_ep)), || {
                            format!("free passive EP {i}")
                        })?;
                    }
                    ok(t.call("dat_ep_free", i, || free_ep(a_ep)), || {
                        format!("free active EP {i}")
                    })?;
                    ok(free_evd(a_conn) | free_evd(p_conn), || {
                        format!("free the connect EVDs of connection {i}")
                    })?;
                }
                // No EP uses it now: it goes while the reapers poll and wait on it.
                ok(t.call("dat_evd_free", r, || free_evd(evd)), || {
                    format!("free the EVD of round {r}")
                })?;
                ok(free_evd(a_dto), || {
                    format!("free the active EVD of round {r}")
                })?;
                s.note(format!(
                    "{} rounds of {rounds}, {} messages arrived",
                    r + 1,
                    got.len()
                ));
                Ok(())
            };
            for r in 0..rounds {
                if s.stopped() {
                    break;
                }
                if let Err(e) = round(r) {
                    s.fail(e);
                }
            }
            for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = t.join();
            }
            s.note(format!(
                "{} messages arrived; the reapers found a freed EVD {} times",
                got.len(),
                freed_seen.load(SeqCst)
            ));
            // SAFETY: a live PSP.
            let _ = unsafe { dat_psp_free(psp as _) };
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// What a lane of a streaming scenario holds: its connection's two EPs (0: none now).
#[derive(Default)]
struct Lane {
    active: AtomicUsize,
    passive: AtomicUsize,
    /// Held (read) by a thread posting on the lane's EPs, (write) to take them out of use: no
    /// post races the free of its own EP (see `posts_racing_the_free_of_their_ep_complete`).
    guard: std::sync::RwLock<()>,
}

/// EPs disconnected and freed while messages stream through their EVDs: `LANES` connections
/// carry a stream of sends (one thread posts them all, on whatever EP each lane has now) into
/// receives that the passive side's reapers post again as they take them; meanwhile a thread
/// ends lane after lane in each of five ways (graceful or abrupt disconnect from the active
/// side, abrupt from the passive side, or a free of either EP while connected) and connects it
/// again. A lane's EPs are taken out of the posters' hands before they end (a post that races
/// the free of its own EP is `posts_racing_the_free_of_their_ep_complete`'s). Every request
/// and every receive posted must complete exactly once (a success or a flush), every message
/// received must be one that was sent, once, and every send that completed successfully must
/// have been received.
#[test]
fn eps_disconnected_and_freed_while_their_evds_are_polled() {
    const LANES: usize = 3;
    const RECVS: usize = 16;
    // Receive slots: a slot is reused only once the completion of its last receive was read.
    const SLOTS: usize = 1024;
    scenario(
        "EPs ended and freed while their EVDs are polled",
        Duration::from_secs(60),
        |s| {
            let a = Arc::new(host(16 * 1024));
            let p = Arc::new(host(16 * SLOTS));
            let free_slots = Arc::new(Mutex::new((0..SLOTS).collect::<Vec<usize>>()));
            let (a_evd, p_evd) = (new_evd(a.ia, 1 << 16, DTO), new_evd(p.ia, 1 << 16, DTO));
            let (psp, port) = p.listen();
            let lanes: Arc<Vec<Lane>> = Arc::new((0..LANES).map(|_| Lane::default()).collect());
            // Sends posted and completed (by cookie), receives posted and completed (by cookie),
            // messages received (by number).
            let (posted, completed, sent_ok) = (
                Arc::new(Seen::default()),
                Arc::new(Seen::default()),
                Arc::new(Seen::default()),
            );
            let (recvs_posted, recvs_done, received) = (
                Arc::new(Seen::default()),
                Arc::new(Seen::default()),
                Arc::new(Seen::default()),
            );
            let next_recv = Arc::new(AtomicU64::new(0));
            let sending = Arc::new(AtomicBool::new(true));
            // A receive's cookie: its number, its lane, and the slot it fills.
            let recv_cookie =
                |n: u64, lane: usize, slot: usize| (n << 16) | (lane << 12) as u64 | slot as u64;
            // Posts a receive on `ep` of lane `lane` into a free slot.
            let post_slot = {
                let (p, recvs_posted, next_recv, free_slots) = (
                    p.clone(),
                    recvs_posted.clone(),
                    next_recv.clone(),
                    free_slots.clone(),
                );
                move |t: &Track, ep: usize, lane: usize| -> DAT_RETURN {
                    let Some(slot) = free_slots.lock().unwrap().pop() else {
                        return Type::DAT_INSUFFICIENT_RESOURCES as DAT_RETURN;
                    };
                    let c = recv_cookie(next_recv.fetch_add(1, SeqCst), lane, slot);
                    // Counted before the call: it may complete before the call returns.
                    recvs_posted.insert(c);
                    let rc = t.call("dat_ep_post_recv", c, || {
                        post_recv(ep, &[p.mem.iov(16 * slot, 16)], c)
                    });
                    if rc != OK {
                        recvs_posted.remove(c);
                        free_slots.lock().unwrap().push(slot);
                    }
                    rc
                }
            };

            // Connects lane `l` anew (both EPs, on the shared EVDs) and posts its receives.
            let (a2, p2, lanes2, post_slot2, s2) = (
                a.clone(),
                p.clone(),
                lanes.clone(),
                post_slot.clone(),
                s.clone(),
            );
            let connect_lane = move |t: &Track,
                                     l: usize,
                                     n: u64|
                  -> Result<(usize, usize, usize, usize), String> {
                let s2 = &s2;
                let (a_conn, p_conn) =
                    (new_evd(a2.ia, 8, CONNECTION), new_evd(p2.ia, 8, CONNECTION));
                let a_ep = a2
                    .ep(a_evd, a_evd, a_conn)
                    .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                let p_ep = p2
                    .ep(p_evd, p_evd, p_conn)
                    .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                for k in 0..RECVS {
                    // A slot comes free as the reapers read the completions of the lane's last EP.
                    let mut rc = OK;
                    if !until(s2, Duration::from_secs(10), || {
                        rc = post_slot2(t, p_ep, l);
                        !is(rc, Type::DAT_INSUFFICIENT_RESOURCES)
                    }) {
                        return Err(format!("lane {l}: no receive slot free within 10 s"));
                    }
                    ok(rc, || format!("lane {l}: receive {k}"))?;
                }
                connect_pair(t, n, a_ep, a_conn, p2.cr_evd, p_ep, p_conn, port)?;
                lanes2[l].active.store(a_ep, SeqCst);
                lanes2[l].passive.store(p_ep, SeqCst);
                Ok((a_ep, a_conn, p_ep, p_conn))
            };
            let t0 = s.track("setup (main)");
            let mut conns = Vec::new();
            for l in 0..LANES {
                conns.push(connect_lane(&t0, l, l as u64).expect("the lanes connect"));
            }

            // The sender: message after message, on each lane in turn, from its own slot (a send
            // reads its slot until it completes: 1024 slots, reused after 1024 sends).
            let (a2, lanes2, posted2, completed2, sending2) = (
                a.clone(),
                lanes.clone(),
                posted.clone(),
                completed.clone(),
                sending.clone(),
            );
            s.spawn("send", move |s, t| {
                let (mut n, mut lane) = (0u64, 0usize);
                while sending2.load(SeqCst) && !s.stopped() {
                    // The lanes in turn, past those being connected again.
                    lane += 1;
                    let _in_use = lanes2[lane % LANES].guard.read().unwrap();
                    let ep = lanes2[lane % LANES].active.load(SeqCst);
                    if ep == 0 {
                        continue;
                    }
                    // The slot of send n - 1024 is free once that send completed (or never went).
                    if n >= 1024 && posted2.has(n - 1024) && !completed2.has(n - 1024) {
                        std::thread::yield_now();
                        continue;
                    }
                    let slot = 16 * (n % 1024) as usize;
                    a2.mem.write(slot, &message(n));
                    // Counted as posted before the call: its message may arrive before it returns.
                    posted2.insert(n);
                    let rc = t.call("dat_ep_post_send", n, || {
                        post_send(ep, &[a2.mem.iov(slot, 16)], n)
                    });
                    if rc != OK {
                        posted2.remove(n);
                        if !(is(rc, Type::DAT_INVALID_HANDLE)
                            || is(rc, Type::DAT_INVALID_STATE)
                            || is(rc, Type::DAT_INSUFFICIENT_RESOURCES))
                        {
                            return Err(format!("send {n}: {rc:#x}"));
                        }
                    }
                    n += 1;
                }
                Ok(())
            });

            // The active side's reaper (it waits: one thread spinning on each core would leave the
            // sender, which yields after a send to a peer on this host, a time slice per send): every
            // send completes once.
            let (posted2, completed2, sent_ok2, sending2) = (
                posted.clone(),
                completed.clone(),
                sent_ok.clone(),
                sending.clone(),
            );
            s.spawn("reap-a", move |s, t| {
            let mut last_seen = (0, Instant::now());
            while !s.stopped() && (sending2.load(SeqCst) || completed2.len() < posted2.len()) {
                if completed2.len() != last_seen.0 {
                    last_seen = (completed2.len(), Instant::now());
                } else if !sending2.load(SeqCst) && last_seen.1.elapsed() > Duration::from_secs(10) {
                    let missing: Vec<u64> = posted2.all().difference(&completed2.all()).copied().take(8).collect();
                    return Err(format!("sends posted and never completed (their EPs are gone): {missing:?}, of {} posted", posted2.len()));
                }
                let Some(e) = reap(t, a_evd, true, completed2.len() as u64).map_err(|rc| format!("{rc:#x}"))? else { continue };
                let d = dto_of(&e).ok_or(format!("event {:#x} on the active EVD", e.event_number))?;
                if d.op != dat_dtos::DAT_DTO_SEND as u32 || !completed2.insert(d.cookie) {
                    return Err(format!("on the active EVD: {d:?}"));
                }
                if d.status == SUCCESS {
                    sent_ok2.insert(d.cookie);
                }
            }
            Ok(())
        });

            // The passive side's reapers (one waits, one dequeues): every receive completes once;
            // a message is one that was sent, received once; its receive is posted again.
            for waits in [true, false] {
                let (
                    p,
                    posted,
                    recvs_posted,
                    recvs_done,
                    received,
                    sending,
                    post_slot,
                    free_slots,
                    lanes,
                ) = (
                    p.clone(),
                    posted.clone(),
                    recvs_posted.clone(),
                    recvs_done.clone(),
                    received.clone(),
                    sending.clone(),
                    post_slot.clone(),
                    free_slots.clone(),
                    lanes.clone(),
                );
                s.spawn(if waits { "reap-p wait" } else { "reap-p dequeue" }, move |s, t| {
                let mut last_seen = (0, Instant::now());
                while !s.stopped() && (sending.load(SeqCst) || recvs_done.len() < recvs_posted.len()) {
                    if recvs_done.len() != last_seen.0 {
                        last_seen = (recvs_done.len(), Instant::now());
                    } else if !sending.load(SeqCst) && last_seen.1.elapsed() > Duration::from_secs(10) {
                        let missing: Vec<u64> = recvs_posted.all().difference(&recvs_done.all()).copied().take(8).collect();
                        return Err(format!("receives posted and never completed (their EPs are gone): {missing:?}, of {} posted", recvs_posted.len()));
                    }
                    let Some(e) = reap(t, p_evd, waits, received.len() as u64).map_err(|rc| format!("{rc:#x}"))? else { continue };
                    let d = dto_of(&e).ok_or(format!("event {:#x} on the passive EVD", e.event_number))?;
                    let (lane, slot) = ((d.cookie >> 12 & 0xf) as usize, (d.cookie & 0xfff) as usize);
                    if d.op != dat_dtos::DAT_DTO_RECEIVE as u32 || slot >= SLOTS || lane >= LANES || !recvs_done.insert(d.cookie) {
                        return Err(format!("on the passive EVD: {d:?}"));
                    }
                    let m = message_number(&p.mem.read(16 * slot, 16));
                    free_slots.lock().unwrap().push(slot);
                    if d.status != SUCCESS {
                        continue; // flushed: its EP is gone
                    }
                    if d.len != 16 || !m.is_some_and(|m| posted.has(m) && received.insert(m)) {
                        return Err(format!("receive {d:?} holds message {m:?}"));
                    }
                    // Another on its lane's EP (a new one, or none, while the lane is made again).
                    let _in_use = lanes[lane].guard.read().unwrap();
                    let ep = lanes[lane].passive.load(SeqCst);
                    if ep == 0 {
                        continue;
                    }
                    let rc = post_slot(t, ep, lane);
                    if rc != OK && !is(rc, Type::DAT_INVALID_HANDLE) && !is(rc, Type::DAT_INVALID_STATE) && !is(rc, Type::DAT_INSUFFICIENT_RESOURCES) {
                        return Err(format!("posting a receive again: {rc:#x}"));
                    }
                }
                Ok(())
            });
            }

            // The closer: ends lane after lane, each way in turn, and connects it again.
            let (lanes2, ends) = (lanes.clone(), Arc::new(AtomicU64::new(0)));
            let ends2 = ends.clone();
            let run_for = Duration::from_millis(1500) * scale() as u32;
            s.spawn("end", move |s, t| {
                let started = Instant::now();
                let mut k = 0u64;
                let mut conns = conns;
                while started.elapsed() < run_for && !s.stopped() {
                    let l = k as usize % LANES;
                    let (a_ep, a_conn, p_ep, p_conn) = conns[l];
                    // A graceful disconnect waits for the sends in flight, which need the
                    // peer's receives: its passive side keeps getting them until it ended.
                    let graceful = k.is_multiple_of(5);
                    {
                        let _out_of_use = lanes2[l].guard.write().unwrap();
                        lanes2[l].active.store(0, SeqCst);
                        if !graceful {
                            lanes2[l].passive.store(0, SeqCst);
                        }
                    }
                    let what = |how: &str| format!("lane {l}, end {k} ({how})");
                    let ended = [DISCONNECTED, BROKEN];
                    match k % 5 {
                        0 | 1 => {
                            let how = if k.is_multiple_of(5) {
                                GRACEFUL
                            } else {
                                ABRUPT
                            };
                            ok(
                                t.call("dat_ep_disconnect", k, || disconnect(a_ep, how)),
                                || what("active disconnect"),
                            )?;
                            expect_conn(
                                &conn_event(t, a_conn, k)?,
                                &ended,
                                a_ep,
                                &what("active side"),
                            )?;
                            expect_conn(
                                &conn_event(t, p_conn, k)?,
                                &ended,
                                p_ep,
                                &what("passive side"),
                            )?;
                            let _out_of_use = lanes2[l].guard.write().unwrap();
                            lanes2[l].passive.store(0, SeqCst);
                        }
                        2 => {
                            ok(
                                t.call("dat_ep_disconnect", k, || disconnect(p_ep, ABRUPT)),
                                || what("passive disconnect"),
                            )?;
                            expect_conn(
                                &conn_event(t, p_conn, k)?,
                                &ended,
                                p_ep,
                                &what("passive side"),
                            )?;
                            expect_conn(
                                &conn_event(t, a_conn, k)?,
                                &ended,
                                a_ep,
                                &what("active side"),
                            )?;
                        }
                        3 => {
                            ok(t.call("dat_ep_free", k, || free_ep(a_ep)), || {
                                what("active free")
                            })?;
                            expect_conn(
                                &conn_event(t, p_conn, k)?,
                                &ended,
                                p_ep,
                                &what("passive side"),
                            )?;
                        }
                        _ => {
                            ok(t.call("dat_ep_free", k, || free_ep(p_ep)), || {
                                what("passive free")
                            })?;
                            expect_conn(
                                &conn_event(t, a_conn, k)?,
                                &ended,
                                a_ep,
                                &what("active side"),
                            )?;
                        }
                    }
                    for ep in [a_ep, p_ep] {
                        let rc = t.call("dat_ep_free", k, || free_ep(ep));
                        if rc != OK && !is(rc, Type::DAT_INVALID_HANDLE) {
                            return Err(format!("{}: {rc:#x}", what("free")));
                        }
                    }
                    ok(free_evd(a_conn) | free_evd(p_conn), || {
                        what("free the connect EVDs")
                    })?;
                    conns[l] = connect_lane(t, l, 1000 + k)?;
                    k += 1;
                    ends2.store(k, SeqCst);
                }
                Ok(())
            });

            let t = s.track("main");
            let threads = std::mem::take(&mut *s.threads.lock().unwrap());
            let (closer, others): (Vec<_>, Vec<_>) = threads
                .into_iter()
                .partition(|h| h.thread().name() == Some("end"));
            for h in closer {
                let _ = h.join();
            }
            sending.store(false, SeqCst);
            // Every EP goes: what they had posted flushes, and the reapers take it all.
            for l in lanes.iter() {
                let _out_of_use = l.guard.write().unwrap();
                for ep in [l.active.swap(0, SeqCst), l.passive.swap(0, SeqCst)] {
                    if ep != 0 {
                        s.check(t.call("dat_ep_free", 0, || free_ep(ep)) == OK, || {
                            "freeing the last EPs".into()
                        });
                    }
                }
            }
            for h in others {
                let _ = h.join();
            }
            if !s.stopped() {
                let (posted, completed, sent_ok, received) =
                    (posted.all(), completed.all(), sent_ok.all(), received.all());
                s.check(posted == completed, || {
                    format!(
                        "{} sends posted, {} completed",
                        posted.len(),
                        completed.len()
                    )
                });
                s.check(recvs_posted.all() == recvs_done.all(), || {
                    format!(
                        "{} receives posted, {} completed",
                        recvs_posted.len(),
                        recvs_done.len()
                    )
                });
                let lost: Vec<_> = sent_ok.difference(&received).take(5).collect();
                s.check(lost.is_empty(), || {
                    format!("sends completed successfully but never received: {lost:?}")
                });
                s.note(format!(
                "{} connections ended and made again; {} sends ({} successful), {} messages received, {} receives",
                ends.load(SeqCst),
                posted.len(),
                sent_ok.len(),
                received.len(),
                recvs_done.len()
            ));
            }
            // SAFETY: a live PSP.
            let _ = unsafe { dat_psp_free(psp as _) };
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// Receive slots shared by the threads that post and reap receives: a slot is reused only
/// once the completion of its last receive was read.
struct Slots {
    free: Mutex<Vec<usize>>,
}

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new((0..n).collect()),
        }
    }
    /// Posts a receive on `ep` into a free slot (its cookie: the slot); INSUFFICIENT_RESOURCES
    /// when none is free.
    fn post(&self, t: &Track, mem: &Mem, ep: usize) -> DAT_RETURN {
        let Some(slot) = self.free.lock().unwrap().pop() else {
            return Type::DAT_INSUFFICIENT_RESOURCES as DAT_RETURN;
        };
        let rc = t.call("dat_ep_post_recv", slot as u64, || {
            post_recv(ep, &[mem.iov(16 * slot, 16)], slot as u64)
        });
        if rc != OK {
            self.free.lock().unwrap().push(slot);
        }
        rc
    }
    /// Posts a receive to `srq` into a free slot, as `post` does.
    fn post_srq(&self, t: &Track, mem: &Mem, srq: usize) -> DAT_RETURN {
        let Some(slot) = self.free.lock().unwrap().pop() else {
            return Type::DAT_INSUFFICIENT_RESOURCES as DAT_RETURN;
        };
        let iov = [mem.iov(16 * slot, 16)];
        // SAFETY: `iov` lives through the call; the memory it names is leaked.
        let rc = t.call("dat_srq_post_recv", slot as u64, || unsafe {
            dat_srq_post_recv(srq as _, 1, iov.as_ptr() as *mut _, cookie(slot as u64))
        });
        if rc != OK {
            self.free.lock().unwrap().push(slot);
        }
        rc
    }
    /// The message in a completed receive's slot, which is free again.
    fn take(&self, mem: &Mem, d: &Dto) -> Option<u64> {
        let slot = d.cookie as usize;
        let m = message_number(&mem.read(16 * slot, 16));
        self.free.lock().unwrap().push(slot);
        m
    }
}

/// Counts the OS Wait Proxy Agent's calls (the agent of the CNOs made with one).
static AGENT_CALLS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn count_agent_call(_instance: DAT_PVOID, _evd: DAT_EVD_HANDLE) {
    AGENT_CALLS.fetch_add(1, SeqCst);
}

/// CNOs attached to an EVD, detached, replaced and freed while the EVD fills: two connections
/// stream messages into receives whose EVD (the passive EPs' receive and request EVD) one
/// thread attaches to a CNO and detaches again, over and over, making a new CNO every few
/// rounds (plain, with an fd, with an OS Wait Proxy Agent) and freeing the old one (refused
/// while attached), while another thread waits on whichever CNO is current (or asks an fd
/// CNO with `dat_cno_trigger`) and dequeues the EVD it names, and a third dequeues the EVD
/// directly. Every message sent must be received once.
#[test]
fn cnos_attached_and_detached_while_their_evds_fill() {
    const LANES: usize = 2;
    const WINDOW: u64 = 32;
    scenario(
        "CNOs attached and detached while their EVDs fill",
        Duration::from_secs(60),
        |s| {
            let n = 8000 * scale();
            let a = Arc::new(host(16 * 1024));
            let p = Arc::new(host(16 * 512));
            let slots = Arc::new(Slots::new(512));
            let (psp, port) = p.listen();
            let (a_evd, r_evd) = (new_evd(a.ia, 4096, DTO), new_evd(p.ia, 4096, DTO));
            let t = s.track("main");
            let mut a_eps = Vec::new();
            for l in 0..LANES {
                let (a_conn, p_conn) = (new_evd(a.ia, 8, CONNECTION), new_evd(p.ia, 8, CONNECTION));
                let a_ep = a.ep(a_evd, a_evd, a_conn).unwrap();
                let p_ep = p.ep(r_evd, r_evd, p_conn).unwrap();
                for _ in 0..64 {
                    assert_eq!(slots.post(&t, &p.mem, p_ep), OK);
                }
                connect_pair(&t, l as u64, a_ep, a_conn, p.cr_evd, p_ep, p_conn, port).unwrap();
                a_eps.push(a_ep);
            }
            let received = Arc::new(Seen::default());
            let cno = Arc::new(AtomicUsize::new(0));
            let done = Arc::new(AtomicBool::new(false));

            // The sender: message after message, at most `WINDOW` in flight, reaping its own EVD.
            let a2 = a.clone();
            s.spawn("send", move |s, t| {
                let (mut posted, mut completed) = (0u64, 0u64);
                let mut next_done: Vec<u64> = (0..LANES as u64).collect();
                while completed < n && !s.stopped() {
                    if posted < n && posted - completed < WINDOW {
                        let slot = 16 * (posted % 1024) as usize;
                        a2.mem.write(slot, &message(posted));
                        let ep = a_eps[posted as usize % LANES];
                        ok(
                            t.call("dat_ep_post_send", posted, || {
                                post_send(ep, &[a2.mem.iov(slot, 16)], posted)
                            }),
                            || format!("send {posted}"),
                        )?;
                        posted += 1;
                        continue;
                    }
                    let Some(e) =
                        reap(t, a_evd, false, completed).map_err(|rc| format!("{rc:#x}"))?
                    else {
                        continue;
                    };
                    let d = dto_of(&e).ok_or(format!("event {:#x}", e.event_number))?;
                    // Each EP's requests complete in order; the two EPs' interleave.
                    let lane = d.cookie as usize % LANES;
                    if d.status != SUCCESS || d.cookie != next_done[lane] {
                        return Err(format!(
                            "send completion {d:?}, expected {}",
                            next_done[lane]
                        ));
                    }
                    next_done[lane] += LANES as u64;
                    completed += 1;
                }
                Ok(())
            });

            // Takes one receive completion of the EVD: a message received once; its receive goes
            // again on its EP.
            let (p2, slots2, received2) = (p.clone(), slots.clone(), received.clone());
            let take = move |t: &Track, e: &DAT_EVENT| -> Result<(), String> {
                let d =
                    dto_of(e).ok_or(format!("event {:#x} on the receive EVD", e.event_number))?;
                let m = slots2.take(&p2.mem, &d);
                if d.status != SUCCESS || !m.is_some_and(|m| m < n && received2.insert(m)) {
                    return Err(format!("receive {d:?} holds {m:?}"));
                }
                ok(slots2.post(t, &p2.mem, d.ep), || {
                    "posting a receive again".into()
                })
            };

            let (cno2, done2, received2, p_ia) =
                (cno.clone(), done.clone(), received.clone(), p.ia);
            s.spawn("modify", move |s, t| {
            let mut round = 0u64;
            let mut current = 0usize;
            while (received2.len() as u64) < n && !s.stopped() {
                if round.is_multiple_of(8) {
                    let mut made = null_mut();
                    let rc = match round / 8 % 3 {
                        0 => {
                            let none = DAT_OS_WAIT_PROXY_AGENT { instance_data: null_mut(), proxy_agent_func: None };
                            // SAFETY: a live IA and an out-pointer to a live local.
                            t.call("dat_cno_create", round, || unsafe { dat_cno_create(p_ia as _, none, &mut made) })
                        }
                        1 => {
                            let mut fd = 0;
                            // SAFETY: as above.
                            t.call("dat_cno_fd_create", round, || unsafe { dat_cno_fd_create(p_ia as _, &mut fd, &mut made) })
                        }
                        _ => {
                            let agent = DAT_OS_WAIT_PROXY_AGENT { instance_data: null_mut(), proxy_agent_func: Some(count_agent_call) };
                            // SAFETY: as above; the agent is a plain function of this test.
                            t.call("dat_cno_create", round, || unsafe { dat_cno_create(p_ia as _, agent, &mut made) })
                        }
                    };
                    ok(rc, || format!("a CNO, round {round}"))?;
                    let old = std::mem::replace(&mut current, made as usize);
                    cno2.store(current, SeqCst);
                    if old != 0 {
                        // A thread may still be blocked on the old CNO (a wait of 2 ms): the free
                        // is refused then (its page), and succeeds once that wait ends.
                        let until = Instant::now() + Duration::from_secs(10);
                        loop {
                            // SAFETY: a handle, live or dead.
                            let rc = t.call("dat_cno_free", round, || unsafe { dat_cno_free(old as _) });
                            if !is(rc, Type::DAT_INVALID_STATE) || Instant::now() > until {
                                ok(rc, || format!("freeing CNO of round {round}"))?;
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                }
                // SAFETY: live handles.
                ok(t.call("dat_evd_modify_cno", round, || unsafe { dat_evd_modify_cno(r_evd as _, current as _) }), || "attach".into())?;
                if round.is_multiple_of(5) {
                    // SAFETY: a live CNO.
                    let rc = t.call("dat_cno_free", round, || unsafe { dat_cno_free(current as _) });
                    if !is(rc, Type::DAT_INVALID_STATE) {
                        return Err(format!("freeing an attached CNO: {rc:#x}"));
                    }
                }
                // SAFETY: a live EVD; NULL detaches.
                ok(t.call("dat_evd_modify_cno", round, || unsafe { dat_evd_modify_cno(r_evd as _, null_mut()) }), || "detach".into())?;
                round += 1;
                s.note(format!("{round} attach/detach rounds; {} messages received; the agent called {} times", received2.len(), AGENT_CALLS.load(SeqCst)));
            }
            done2.store(true, SeqCst);
            Ok(())
        });

            let (cno2, done2, take2) = (cno.clone(), done.clone(), take.clone());
            s.spawn("cno-wait", move |s, t| {
                let mut k = 0u64;
                while !done2.load(SeqCst) && !s.stopped() {
                    let c = cno2.load(SeqCst);
                    let mut evd = null_mut();
                    k += 1;
                    let rc = if k.is_multiple_of(4) {
                        // SAFETY: a handle, live or dead, and an out-pointer to a live local.
                        t.call("dat_cno_trigger", k, || unsafe {
                            dat_cno_trigger(c as _, &mut evd)
                        })
                    } else {
                        // SAFETY: as above.
                        t.call("dat_cno_wait", k, || unsafe {
                            dat_cno_wait(c as _, 2_000, &mut evd)
                        })
                    };
                    match rc {
                        OK if evd.is_null() => {} // dat_cno_trigger: none triggered
                        OK if evd as usize != r_evd => {
                            return Err(format!("the CNO named EVD {evd:p}"))
                        }
                        OK => {
                            while let Some(e) =
                                reap(t, r_evd, false, k).map_err(|rc| format!("{rc:#x}"))?
                            {
                                take2(t, &e)?;
                            }
                        }
                        // Timed out, freed before the call, or freed or busy during it.
                        rc if is(rc, Type::DAT_QUEUE_EMPTY)
                            || is(rc, Type::DAT_INVALID_HANDLE)
                            || is(rc, Type::DAT_INVALID_STATE) => {}
                        rc => return Err(format!("waiting on the CNO: {rc:#x}")),
                    }
                }
                Ok(())
            });

            let (done2, received2) = (done.clone(), received.clone());
            s.spawn("dequeue", move |s, t| {
                while !done2.load(SeqCst) && !s.stopped() {
                    if let Some(e) = reap(t, r_evd, false, received2.len() as u64)
                        .map_err(|rc| format!("{rc:#x}"))?
                    {
                        take(t, &e)?;
                    }
                }
                Ok(())
            });

            for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = t.join();
            }
            // SAFETY: a live PSP.
            let _ = unsafe { dat_psp_free(psp as _) };
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// An SRQ's receives posted while its EPs connect and end: `LANES` threads each make
/// connection after connection whose passive EP draws its receives from one SRQ, send
/// `MESSAGES` messages on it, and end it (an abrupt disconnect from either side, a graceful
/// one, or a free of the passive EP); one thread posts the SRQ's receives a few at a time, so
/// that messages often arrive with none posted and wait for the next (which lands them,
/// through the EPs that keep them); two threads reap the receives, one drains the async EVD
/// (each SRQ EP's end is reported there). Every send must complete successfully and its
/// message be received once.
#[test]
fn srq_receives_posted_while_its_eps_connect_and_end() {
    const LANES: u64 = 2;
    const MESSAGES: u64 = 16;
    scenario(
        "SRQ receives posted while its EPs connect and end",
        Duration::from_secs(60),
        |s| {
            let per_lane = 40 * scale();
            let n = LANES * per_lane * MESSAGES;
            let a = Arc::new(host(16 * LANES as usize * MESSAGES as usize));
            let p = Arc::new(host(16 * 256));
            let slots = Arc::new(Slots::new(256));
            let attr = DAT_SRQ_ATTR {
                max_recv_dtos: 64,
                max_recv_iov: 1,
                low_watermark: 0,
            };
            let mut srq = null_mut();
            // SAFETY: live handles, attributes and an out-pointer that live through the call.
            assert_eq!(
                unsafe {
                    dat_srq_create(p.ia as _, p.pz as _, &attr as *const _ as *mut _, &mut srq)
                },
                OK
            );
            let srq = srq as usize;
            let r_evd = new_evd(p.ia, 4096, DTO);
            let async_evd = p.async_evd();
            let (received, sent) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
            let lanes_done = Arc::new(AtomicU64::new(0));

            for lane in 0..LANES {
                let (a, p, sent, lanes_done) =
                    (a.clone(), p.clone(), sent.clone(), lanes_done.clone());
                let cr_evd = new_evd(p.ia, 8, CR);
                let (mut psp, mut port) = (null_mut(), 0);
                let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
                // SAFETY: live handles and out-pointers to live locals.
                assert_eq!(
                    unsafe {
                        dat_psp_create_any(p.ia as _, &mut port, cr_evd as _, flags, &mut psp)
                    },
                    OK
                );
                let psp = psp as usize;
                s.spawn(&format!("lane {lane}"), move |s, t| {
                    for c in 0..per_lane {
                        if s.stopped() {
                            break;
                        }
                        let id = lane * per_lane + c;
                        let (a_conn, a_dto, p_conn) = (
                            new_evd(a.ia, 8, CONNECTION),
                            new_evd(a.ia, 64, DTO),
                            new_evd(p.ia, 8, CONNECTION),
                        );
                        let a_ep = a
                            .ep(a_dto, a_dto, a_conn)
                            .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        let p_ep = p
                            .srq_ep(r_evd, r_evd, p_conn, srq)
                            .map_err(|rc| format!("dat_ep_create_with_srq: {rc:#x}"))?;
                        connect_pair(t, id, a_ep, a_conn, cr_evd, p_ep, p_conn, port)?;
                        for k in 0..MESSAGES {
                            let m = id * MESSAGES + k;
                            let slot = 16 * (lane * MESSAGES + k) as usize;
                            a.mem.write(slot, &message(m));
                            ok(
                                t.call("dat_ep_post_send", m, || {
                                    post_send(a_ep, &[a.mem.iov(slot, 16)], m)
                                }),
                                || format!("send {m}"),
                            )?;
                        }
                        // Each completes once its message is in a receive: some wait for one.
                        for k in 0..MESSAGES {
                            let e = t
                                .call("dat_evd_wait", id, || wait_us(a_dto, 10_000_000))
                                .map_err(|rc| {
                                    format!(
                                        "connection {id}: send {k} not done within 10 s ({rc:#x})"
                                    )
                                })?;
                            let d = dto_of(&e).ok_or(format!("event {:#x}", e.event_number))?;
                            if d.status != SUCCESS || d.cookie != id * MESSAGES + k {
                                return Err(format!("connection {id}: send completion {d:?}"));
                            }
                            sent.insert(d.cookie);
                        }
                        let ended = [DISCONNECTED, BROKEN];
                        match id % 3 {
                            0 => {
                                ok(
                                    t.call("dat_ep_disconnect", id, || disconnect(a_ep, ABRUPT)),
                                    || format!("disconnect {id}"),
                                )?;
                                expect_conn(
                                    &conn_event(t, p_conn, id)?,
                                    &ended,
                                    p_ep,
                                    &format!("passive end of {id}"),
                                )?;
                            }
                            1 => {
                                ok(
                                    t.call("dat_ep_disconnect", id, || disconnect(p_ep, GRACEFUL)),
                                    || format!("disconnect {id}"),
                                )?;
                                expect_conn(
                                    &conn_event(t, p_conn, id)?,
                                    &ended,
                                    p_ep,
                                    &format!("passive end of {id}"),
                                )?;
                            }
                            _ => {}
                        }
                        ok(t.call("dat_ep_free", id, || free_ep(p_ep)), || {
                            format!("free passive EP {id}")
                        })?;
                        expect_conn(
                            &conn_event(t, a_conn, id)?,
                            &ended,
                            a_ep,
                            &format!("active end of {id}"),
                        )?;
                        ok(t.call("dat_ep_free", id, || free_ep(a_ep)), || {
                            format!("free active EP {id}")
                        })?;
                        ok(
                            free_evd(a_conn) | free_evd(a_dto) | free_evd(p_conn),
                            || format!("free the EVDs of {id}"),
                        )?;
                    }
                    lanes_done.fetch_add(1, SeqCst);
                    // SAFETY: a live PSP.
                    let _ = unsafe { dat_psp_free(psp as _) };
                    Ok(())
                });
            }

            // The SRQ's receives, a few at a time: posted only while fewer than 4 wait.
            let (p2, slots2, received2) = (p.clone(), slots.clone(), received.clone());
            s.spawn("srq-post", move |s, t| {
                while (received2.len() as u64) < n && !s.stopped() {
                    let mut q: DAT_SRQ_PARAM = zero();
                    // SAFETY: a live SRQ and an out-pointer to a live local.
                    let rc = t.call("dat_srq_query", 0, || unsafe {
                        dat_srq_query(
                            srq as _,
                            dat_srq_param_mask::DAT_SRQ_FIELD_ALL as u32,
                            &mut q,
                        )
                    });
                    ok(rc, || "dat_srq_query".into())?;
                    if q.available_dto_count >= 4 {
                        std::thread::yield_now();
                        continue;
                    }
                    let rc = slots2.post_srq(t, &p2.mem, srq);
                    if rc != OK && !is(rc, Type::DAT_INSUFFICIENT_RESOURCES) {
                        return Err(format!("dat_srq_post_recv: {rc:#x}"));
                    }
                }
                Ok(())
            });

            for waits in [true, false] {
                let (p, slots, received) = (p.clone(), slots.clone(), received.clone());
                s.spawn(
                    if waits { "reap wait" } else { "reap dequeue" },
                    move |s, t| {
                        while (received.len() as u64) < n && !s.stopped() {
                            let Some(e) = reap(t, r_evd, waits, received.len() as u64)
                                .map_err(|rc| format!("{rc:#x}"))?
                            else {
                                continue;
                            };
                            let d = dto_of(&e)
                                .ok_or(format!("event {:#x} on the receive EVD", e.event_number))?;
                            let m = slots.take(&p.mem, &d);
                            if d.status != SUCCESS
                                || d.op != dat_dtos::DAT_DTO_RECEIVE as u32
                                || !m.is_some_and(|m| m < n && received.insert(m))
                            {
                                return Err(format!("receive {d:?} holds {m:?}"));
                            }
                            s.note(format!("{} of {n} messages received", received.len()));
                        }
                        Ok(())
                    },
                );
            }

            let lanes_done2 = lanes_done.clone();
            s.spawn("async", move |s, t| {
                let mut broken = 0u64;
                while lanes_done2.load(SeqCst) < LANES && !s.stopped() {
                    let Some(e) =
                        reap(t, async_evd, true, broken).map_err(|rc| format!("{rc:#x}"))?
                    else {
                        continue;
                    };
                    if !event_is(&e, dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN) {
                        return Err(format!("event {:#x} on the async EVD", e.event_number));
                    }
                    broken += 1;
                }
                Ok(())
            });

            for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = t.join();
            }
            if !s.stopped() {
                s.check(sent.all() == received.all(), || {
                    format!(
                        "{} sends completed, {} messages received",
                        sent.len(),
                        received.len()
                    )
                });
            }
            // SAFETY: a live SRQ, used by no EP now.
            assert_eq!(unsafe { dat_srq_free(srq as _) }, OK);
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// One lane of the memory scenario: a connection whose active side writes into a buffer of
/// the passive side through whatever key the lane's churn published.
#[derive(Default)]
struct WriteLane {
    /// Generation << 34 | phase << 32 | the key writes use now (phases: `LIVE`, `FREEING`,
    /// `FREED`, `ARMED`; no key: the writer rests).
    target: AtomicU64,
    /// Generation << 2 | phase of the last write the writer finished that began in them.
    seen: AtomicU64,
    /// The passive EP of the lane's connection and its connect EVD, and the connection's
    /// number.
    passive: Mutex<(usize, usize, u64)>,
    /// The number of the connection the writer has up, plus one (0: none).
    up: AtomicU64,
    /// The last generation a write succeeded in, plus one.
    wrote: AtomicU64,
}

/// A key's phases: in use; being freed (the free was called); freed (the free returned); and
/// freed with the canary in the buffer.
const LIVE: u64 = 0;
const FREEING: u64 = 1;
const FREED: u64 = 2;
const ARMED: u64 = 3;

/// The 64 bytes write `k` of generation `g` puts in a lane's buffer.
fn pattern(g: u64, k: u64) -> [u8; 64] {
    let mut p = [0u8; 64];
    for (j, b) in p.iter_mut().enumerate() {
        *b = (g
            .wrapping_mul(31)
            .wrapping_add(k.wrapping_mul(7))
            .wrapping_add(j as u64)
            % 251) as u8
            | 1;
    }
    p
}

/// LMRs and RMRs freed while RDMA writes land in them. Each of `LANES` writers writes 64
/// bytes after 64 bytes into its lane's passive buffer through the key its lane publishes;
/// a churn thread, generation after generation, registers the buffer (an LMR, or an RMR bound
/// on the lane's passive EP onto a long-lived LMR of it), publishes its key, frees it while
/// the writes go on, then, once a write begun after the free returned has finished, fills the
/// buffer with a canary, and once a write begun after that has finished, checks the canary:
/// once `dat_lmr_free` or `dat_rmr_free` returned, no byte lands. A write that succeeds must
/// be in the buffer; one posted after the free returned must fail (and the connection,
/// broken, is made again).
///
/// Run over the socket path (in a child process with `LIBDAT_DIRECT=0`): over the direct path
/// between processes of one host, `dat_lmr_free` hangs (see
/// `lmrs_freed_while_writes_land_directly`).
#[test]
fn lmrs_and_rmrs_freed_while_writes_land() {
    in_child(
        "lmrs_and_rmrs_freed_while_writes_land",
        &[("LIBDAT_DIRECT", "0")],
        || {
            writes_under_frees(
                "LMRs and RMRs freed while RDMA writes land (socket path)",
                Duration::from_millis(1500),
            )
        },
    );
}

/// `dat_lmr_free` waits for the direct accesses through every connection slot of the process's
/// export table that began before it (a snapshot of the slot's `begun`, awaited in its
/// `finished`); a slot whose connection ended meanwhile was reused by the next connection with
/// both counts reset to 0, and the free then waited for the new connection's accesses to reach
/// the old count, forever if none came (found by the scenario above with the direct path on:
/// 6 runs of 6 hung within 8 s). The counts only grow now.
#[test]
fn lmrs_freed_while_writes_land_directly() {
    writes_under_frees(
        "LMRs and RMRs freed while RDMA writes land (direct path)",
        Duration::from_secs(8),
    );
}

/// Runs `body` in a child process, this test binary run again for test `name` alone with
/// `env` added: a setting read once per process (`LIBDAT_DIRECT`) changes for it alone.
fn in_child(name: &str, env: &[(&str, &str)], body: impl FnOnce()) {
    if std::env::var_os("LOCK_ORDER_IN_CHILD").is_some() {
        return body();
    }
    // One scenario at a time, the child's too.
    let _one_at_a_time = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = common::test_child(name);
    // An ignored test run on purpose runs in the child too. Its stderr (the watchdog's report)
    // is ours; its stdout is shown as ours would be.
    child
        .arg("--include-ignored")
        .env("LOCK_ORDER_IN_CHILD", "1")
        .stderr(std::process::Stdio::inherit());
    for (k, v) in env {
        child.env(k, v);
    }
    // The child's own watchdog bounds it.
    let out = child.output().expect("the test binary runs again");
    let said = String::from_utf8_lossy(&out.stdout);
    for summary in said
        .lines()
        .filter_map(|l| l.split_once("lock_order:"))
        .map(|(_, rest)| rest)
    {
        println!("lock_order:{summary}");
    }
    assert!(
        out.status.success(),
        "{name} in a child process: {}\n{said}",
        out.status
    );
}

/// The scenario of `lmrs_and_rmrs_freed_while_writes_land`, for `run_for` (times
/// `LOCK_ORDER_SCALE`).
fn writes_under_frees(name: &'static str, run_for: Duration) {
    const LANES: usize = 2;
    scenario(name, Duration::from_secs(60), |s| {
        let a = Arc::new(host(64 * LANES));
        let p = Arc::new(host(16));
        let (psp, port) = p.listen();
        let p_evd = new_evd(p.ia, 4096, DTO);
        let lanes: Arc<Vec<WriteLane>> =
            Arc::new((0..LANES).map(|_| WriteLane::default()).collect());
        // Each lane's buffer, with an LMR of it that lives throughout (the RMRs' window).
        let buffers: Vec<usize> = (0..LANES)
            .map(|_| Box::leak(vec![0u8; 64].into_boxed_slice()).as_mut_ptr() as usize)
            .collect();
        let bases: Vec<(usize, u32)> = buffers
            .iter()
            .map(|b| {
                register(p.ia, p.pz, *b, 64)
                    .map(|(l, c, _)| (l, c))
                    .unwrap()
            })
            .collect();
        let run_for = run_for * scale() as u32;
        let stop = Arc::new(AtomicBool::new(false));
        let read_buffer = |b: usize| -> Vec<u8> {
            // SAFETY: the lane's leaked 64-byte buffer; volatile, as the library writes it.
            (0..64)
                .map(|j| unsafe { std::ptr::read_volatile((b + j) as *const u8) })
                .collect()
        };

        // Accepts each lane's connections, and frees the EP each replaces.
        let (p2, lanes2, stop2) = (p.clone(), lanes.clone(), stop.clone());
        s.spawn("accept", move |s, t| {
            while !stop2.load(SeqCst) && !s.stopped() {
                let e = match t.call("dat_evd_wait", 0, || wait_us(p2.cr_evd, 100_000)) {
                    Ok(e) => e,
                    Err(rc) if is(rc, Type::DAT_TIMEOUT_EXPIRED) => continue,
                    Err(rc) => return Err(format!("the CR EVD: {rc:#x}")),
                };
                let (cr, pd) =
                    cr_of(&e).ok_or(format!("event {:#x} on the CR EVD", e.event_number))?;
                let (l, c) = (
                    pd[0] as usize,
                    u64::from_le_bytes(pd[1..9].try_into().unwrap()),
                );
                let conn = new_evd(p2.ia, 8, CONNECTION);
                let ep = p2
                    .ep(p_evd, p_evd, conn)
                    .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                ok(t.call("dat_cr_accept", c, || accept(cr, ep)), || {
                    format!("lane {l}: accept {c}")
                })?;
                expect_conn(
                    &conn_event(t, conn, c)?,
                    &[ESTABLISHED],
                    ep,
                    &format!("lane {l}: passive side of {c}"),
                )?;
                let (old, old_conn, _) =
                    std::mem::replace(&mut *lanes2[l].passive.lock().unwrap(), (ep, conn, c));
                if old != 0 {
                    ok(t.call("dat_ep_free", c, || free_ep(old)), || {
                        format!("lane {l}: free the passive EP before {c}")
                    })?;
                    ok(free_evd(old_conn), || "free a connect EVD".into())?;
                }
            }
            Ok(())
        });
        // The bind completions (and the flushes of EPs that go).
        let stop2 = stop.clone();
        s.spawn("reap-p", move |s, t| {
            while !stop2.load(SeqCst) && !s.stopped() {
                if let Some(e) = reap(t, p_evd, true, 0).map_err(|rc| format!("{rc:#x}"))? {
                    if !event_is(&e, dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT) {
                        return Err(format!("event {:#x} on the passive EVD", e.event_number));
                    }
                }
            }
            Ok(())
        });

        for l in 0..LANES {
            let (a, lanes, stop, buffer) = (a.clone(), lanes.clone(), stop.clone(), buffers[l]);
            s.spawn(&format!("write {l}"), move |s, t| {
                let lane = &lanes[l];
                let (mut ep, mut conn, mut dto) = (0usize, 0usize, 0usize);
                let (mut c, mut k) = (0u64, 0u64);
                while !stop.load(SeqCst) && !s.stopped() {
                    if ep == 0 {
                        (conn, dto) = (new_evd(a.ia, 8, CONNECTION), new_evd(a.ia, 8, DTO));
                        ep = a.ep(dto, dto, conn).map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        c += 1;
                        let mut pd = [0u8; 9];
                        pd[0] = l as u8;
                        pd[1..].copy_from_slice(&c.to_le_bytes());
                        ok(t.call("dat_ep_connect", c, || connect(ep, port, &pd, 10_000_000)), || format!("lane {l}: connect {c}"))?;
                        expect_conn(&conn_event(t, conn, c)?, &[ESTABLISHED], ep, &format!("lane {l}: active side of {c}"))?;
                        if !until(s, Duration::from_secs(10), || lane.passive.lock().unwrap().2 == c) {
                            return Err(format!("lane {l}: connection {c} not accepted within 10 s"));
                        }
                        lane.up.store(c + 1, SeqCst);
                    }
                    let target = lane.target.load(SeqCst);
                    let (g, phase, key) = (target >> 34, (target >> 32) & 3, target as u32);
                    if key == 0 {
                        std::thread::yield_now();
                        continue;
                    }
                    k += 1;
                    let p = pattern(g, k);
                    a.mem.write(64 * l, &p);
                    let remote = DAT_RMR_TRIPLET { rmr_context: key, virtual_address: buffer as DAT_VADDR, segment_length: 64 };
                    ok(t.call("dat_ep_post_rdma_write", k, || post_write(ep, &[a.mem.iov(64 * l, 64)], remote, k)), || format!("lane {l}: write {k}"))?;
                    let e = t.call("dat_evd_wait", k, || wait_us(dto, 10_000_000)).map_err(|rc| format!("lane {l}: write {k} not done within 10 s ({rc:#x})"))?;
                    let d = dto_of(&e).ok_or(format!("lane {l}: event {:#x}", e.event_number))?;
                    if d.cookie != k {
                        return Err(format!("lane {l}: completion {d:?} for write {k}"));
                    }
                    if d.status == SUCCESS {
                        if phase >= FREED {
                            return Err(format!("lane {l}: write {k} of generation {g} succeeded, posted after its key's free returned"));
                        }
                        // Landed before the free returned: the canary comes only after this
                        // write is seen.
                        let got = read_buffer(buffer);
                        if got[..] != p[..] {
                            return Err(format!("lane {l}: write {k} of generation {g} succeeded, the buffer holds {got:?}"));
                        }
                        lane.wrote.store(g + 1, SeqCst);
                    } else {
                        // Refused: only once the key was freed (maybe during the write).
                        if phase == LIVE && lane.target.load(SeqCst) == target {
                            return Err(format!("lane {l}: write {k} of generation {g} failed ({d:?}) while its key lived"));
                        }
                        // The connection broke: it is made again.
                        lane.up.store(0, SeqCst);
                        let ended = [DISCONNECTED, BROKEN];
                        expect_conn(&conn_event(t, conn, c)?, &ended, ep, &format!("lane {l}: active end of {c}"))?;
                        ok(t.call("dat_ep_free", c, || free_ep(ep)), || format!("lane {l}: free {c}"))?;
                        ok(free_evd(conn) | free_evd(dto), || "free the active EVDs".into())?;
                        ep = 0;
                    }
                    lane.seen.fetch_max((g << 2) | phase, SeqCst);
                }
                Ok(())
            });
        }

        // The churn: generation after generation on each lane.
        let t = s.track("churn (main)");
        let started = Instant::now();
        let mut g = 1u64;
        let cycle = |l: usize, g: u64| -> Result<(), String> {
            let lane = &lanes[l];
            let publish = |phase: u64, key: u32| {
                lane.target
                    .store((g << 34) | (phase << 32) | u64::from(key), SeqCst)
            };
            let freed: Box<dyn Fn() -> DAT_RETURN>;
            let key;
            let t2 = t.clone();
            if g.is_multiple_of(2) {
                let (lmr, _, rmr_ctx) = register(p.ia, p.pz, buffers[l], 64)
                    .map_err(|rc| format!("dat_lmr_create: {rc:#x}"))?;
                key = rmr_ctx;
                // SAFETY: a live LMR, freed once.
                freed = Box::new(move || {
                    t2.call("dat_lmr_free", g, || unsafe { dat_lmr_free(lmr as _) })
                });
            } else {
                let mut rmr = null_mut();
                // SAFETY: a live PZ and an out-pointer to a live local.
                ok(
                    t.call("dat_rmr_create", g, || unsafe {
                        dat_rmr_create(p.pz as _, &mut rmr)
                    }),
                    || "dat_rmr_create".into(),
                )?;
                let rmr = rmr as usize;
                // Bound through the lane's passive EP, once the writer's connection is up.
                let mut bound = 0;
                if !until(s, Duration::from_secs(10), || {
                    let (ep, _, c) = *lane.passive.lock().unwrap();
                    if lane.up.load(SeqCst) != c + 1 {
                        return false;
                    }
                    let triplet = DAT_LMR_TRIPLET {
                        lmr_context: bases[l].1,
                        virtual_address: buffers[l] as DAT_VADDR,
                        segment_length: 64,
                    };
                    let privs = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_WRITE_FLAG as u32;
                    // SAFETY: live handles, a triplet and an out-pointer that live through the call.
                    let rc = t.call("dat_rmr_bind", g, || unsafe {
                        dat_rmr_bind(
                            rmr as _,
                            bases[l].0 as _,
                            &triplet,
                            privs,
                            dat_va_type::DAT_VA_TYPE_VA as DAT_VA_TYPE,
                            ep as _,
                            DAT_RMR_COOKIE { as_64: g },
                            DEFAULT,
                            &mut bound,
                        )
                    });
                    rc == OK
                }) {
                    return Err(format!("lane {l}: no RMR bound within 10 s"));
                }
                key = bound;
                // SAFETY: a live RMR, freed once.
                freed = Box::new(move || {
                    t2.call("dat_rmr_free", g, || unsafe { dat_rmr_free(rmr as _) })
                });
            }
            publish(LIVE, key);
            // Freed once a write went through it: the writes after it race with the free.
            if !until(s, Duration::from_secs(10), || lane.wrote.load(SeqCst) > g) {
                return Err(format!(
                    "lane {l}: no write succeeded in generation {g} within 10 s"
                ));
            }
            // Published first: the free may refuse writes before it returns.
            publish(FREEING, key);
            ok(freed(), || format!("lane {l}: free generation {g}"))?;
            publish(FREED, key);
            if !until(s, Duration::from_secs(10), || {
                lane.seen.load(SeqCst) >= (g << 2) | FREED
            }) {
                return Err(format!(
                    "lane {l}: no write after the free of generation {g} within 10 s"
                ));
            }
            let canary = [0xC5u8; 64];
            for (j, b) in canary.iter().enumerate() {
                // SAFETY: the lane's leaked buffer.
                unsafe { std::ptr::write_volatile((buffers[l] + j) as *mut u8, *b) };
            }
            publish(ARMED, key);
            if !until(s, Duration::from_secs(10), || {
                lane.seen.load(SeqCst) >= (g << 2) | ARMED
            }) {
                return Err(format!(
                    "lane {l}: no write after the canary of generation {g} within 10 s"
                ));
            }
            let got = read_buffer(buffers[l]);
            if got[..] != canary[..] {
                return Err(format!(
                    "lane {l}: generation {g}'s key, freed, let a write land: {got:?}"
                ));
            }
            // The writer rests until the next key (a write with this one would break the
            // connection the next RMR binds on).
            lane.target.store(0, SeqCst);
            Ok(())
        };
        while started.elapsed() < run_for && !s.stopped() {
            for l in 0..LANES {
                if let Err(e) = cycle(l, g) {
                    s.fail(e);
                }
            }
            s.note(format!(
                "{g} generations of keys freed under writes on each of {LANES} lanes"
            ));
            g += 1;
        }
        stop.store(true, SeqCst);
        for t in std::mem::take(&mut *s.threads.lock().unwrap()) {
            let _ = t.join();
        }
        // SAFETY: a live PSP.
        let _ = unsafe { dat_psp_free(psp as _) };
        assert_eq!(close_ia(p.ia), OK);
        assert_eq!(close_ia(a.ia), OK);
    });
}

/// How a connection attempt came out, on each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Established,
    Rejected,
    /// Any other end of the attempt (refused, unreachable, timed out, accept failed).
    Failed,
}

/// The active side's outcome of a connect, from its first connection event.
fn connect_outcome(e: &DAT_EVENT) -> Option<Outcome> {
    use dat_event_number as E;
    match dat_event_number::try_from(e.event_number).ok()? {
        E::DAT_CONNECTION_EVENT_ESTABLISHED => Some(Outcome::Established),
        E::DAT_CONNECTION_EVENT_PEER_REJECTED => Some(Outcome::Rejected),
        E::DAT_CONNECTION_EVENT_NON_PEER_REJECTED
        | E::DAT_CONNECTION_EVENT_UNREACHABLE
        | E::DAT_CONNECTION_EVENT_TIMED_OUT => Some(Outcome::Failed),
        _ => None,
    }
}

/// Makes a service point with `f`, retried while its port is still taken (a listener just
/// freed may hold it for a moment).
fn create_sp(
    s: &Scenario,
    t: &Track,
    what: &'static str,
    f: &mut dyn FnMut() -> DAT_RETURN,
) -> Result<(), String> {
    let mut rc = OK;
    if !until(s, Duration::from_secs(5), || {
        rc = t.call(what, 0, &mut *f);
        !is(rc, Type::DAT_CONN_QUAL_IN_USE)
    }) {
        return Err(format!("{what}: the port stayed in use for 5 s"));
    }
    ok(rc, || what.to_string())
}

/// PSPs and RSPs freed while connections arrive: one thread makes and frees a PSP on one port
/// over and over, another reserves an EP with an RSP on a second port and frees the RSP, over
/// and over; a connector per port connects again and again; the requests that arrive are
/// accepted or rejected in turn (a PSP's onto a new EP, an RSP's onto its reserved EP), also
/// after their service point was freed. Each connect must end in exactly one connection event,
/// and the two sides must agree: an active side ESTABLISHED was accepted and ESTABLISHED on
/// the passive side, one rejected was rejected (by us, or for want of a service point).
#[test]
fn psps_and_rsps_freed_while_connections_arrive() {
    scenario(
        "PSPs and RSPs freed while connections arrive",
        Duration::from_secs(60),
        |s| {
            let run_for = Duration::from_millis(1500) * scale() as u32;
            let a = Arc::new(host(16));
            let p = Arc::new(host(16));
            let rsp_cr_evd = new_evd(p.ia, 1024, CR);
            // Two ports of our own: taken by a PSP each, then let go.
            let ports: Vec<u64> = (0..2)
                .map(|_| {
                    let (psp, port) = p.listen();
                    // SAFETY: a live PSP.
                    assert_eq!(unsafe { dat_psp_free(psp as _) }, OK);
                    port
                })
                .collect();
            // The connectors stop first; the service points and accepts go on until their last
            // attempts ended.
            let (stop, stop_connecting) = (
                Arc::new(AtomicBool::new(false)),
                Arc::new(AtomicBool::new(false)),
            );
            // Per attempt (by number): the active side's outcome, the passive side's.
            let active_out: Arc<Mutex<std::collections::HashMap<u64, Outcome>>> =
                Default::default();
            let passive_out: Arc<Mutex<std::collections::HashMap<u64, Outcome>>> =
                Default::default();
            let handled = Arc::new(AtomicU64::new(0));

            let (p2, stop2, handled2) = (p.clone(), stop.clone(), handled.clone());
            let port = ports[0];
            s.spawn("psp", move |s, t| {
                let mut rounds = 0;
                while !stop2.load(SeqCst) && !s.stopped() {
                    let mut psp = null_mut();
                    let flags = dat_psp_flags::DAT_PSP_CONSUMER_FLAG as DAT_PSP_FLAGS;
                    // SAFETY: live handles and an out-pointer to a live local.
                    create_sp(s, t, "dat_psp_create", &mut || unsafe {
                        dat_psp_create(p2.ia as _, port, p2.cr_evd as _, flags, &mut psp)
                    })?;
                    // Freed once a request came through it (or soon anyway).
                    let before = handled2.load(SeqCst);
                    until(s, Duration::from_millis(20), || {
                        handled2.load(SeqCst) > before
                    });
                    // SAFETY: a live PSP.
                    ok(
                        t.call("dat_psp_free", rounds, || unsafe { dat_psp_free(psp) }),
                        || "dat_psp_free".into(),
                    )?;
                    rounds += 1;
                }
                Ok(())
            });

            // The RSP's EP, reserved, accepted onto, freed: one EP per round.
            let reserved = Arc::new(AtomicUsize::new(0));
            let (p2, stop2, handled2, reserved2) =
                (p.clone(), stop.clone(), handled.clone(), reserved.clone());
            let port2 = ports[1];
            s.spawn("rsp", move |s, t| {
                let mut round = 0u64;
                while !stop2.load(SeqCst) && !s.stopped() {
                    let conn = new_evd(p2.ia, 8, CONNECTION);
                    let ep = p2
                        .ep(0, 0, conn)
                        .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                    let mut rsp = null_mut();
                    // SAFETY: live handles and an out-pointer to a live local.
                    create_sp(s, t, "dat_rsp_create", &mut || unsafe {
                        dat_rsp_create(p2.ia as _, port2, ep as _, rsp_cr_evd as _, &mut rsp)
                    })?;
                    reserved2.store(ep, SeqCst);
                    let before = handled2.load(SeqCst);
                    until(s, Duration::from_millis(20), || {
                        handled2.load(SeqCst) > before
                    });
                    // SAFETY: a live RSP.
                    ok(
                        t.call("dat_rsp_free", round, || unsafe { dat_rsp_free(rsp) }),
                        || "dat_rsp_free".into(),
                    )?;
                    // Its EP goes once the accept thread is done with it (an accept in flight
                    // holds it: it frees it then).
                    if reserved2.swap(0, SeqCst) == ep {
                        ok(t.call("dat_ep_free", round, || free_ep(ep)), || {
                            "free the reserved EP".into()
                        })?;
                        ok(free_evd(conn), || "free its connect EVD".into())?;
                    }
                    round += 1;
                }
                Ok(())
            });

            // The requests: accepted and rejected in turn, a PSP's onto a new EP, an RSP's onto the
            // reserved EP (if it is still to be had).
            for (name, evd, on_rsp) in [
                ("accept psp", p.cr_evd, false),
                ("accept rsp", rsp_cr_evd, true),
            ] {
                let (p2, stop2, handled2, passive_out2, reserved2) = (
                    p.clone(),
                    stop.clone(),
                    handled.clone(),
                    passive_out.clone(),
                    reserved.clone(),
                );
                s.spawn(name, move |s, t| {
                    let mut k = 0u64;
                    while !stop2.load(SeqCst) && !s.stopped() {
                        let e = match t.call("dat_evd_wait", k, || wait_us(evd, 20_000)) {
                            Ok(e) => e,
                            Err(rc) if is(rc, Type::DAT_TIMEOUT_EXPIRED) => continue,
                            Err(rc) => return Err(format!("the CR EVD: {rc:#x}")),
                        };
                        let (cr, pd) = cr_of(&e)
                            .ok_or(format!("event {:#x} on the CR EVD", e.event_number))?;
                        let n = u64::from_le_bytes(
                            pd[..8]
                                .try_into()
                                .map_err(|_| format!("a request with {pd:?}"))?,
                        );
                        k += 1;
                        handled2.fetch_add(1, SeqCst);
                        let ep = if k.is_multiple_of(2) {
                            0
                        } else if on_rsp {
                            // The EP the request's RSP reserved, ours to accept onto and free if
                            // it is still the RSP thread's current one (an RSP freed meanwhile
                            // gave its EP back, and it is freed).
                            let mut q: DAT_CR_PARAM = zero();
                            // SAFETY: a live CR and an out-pointer to a live local.
                            ok(
                                unsafe {
                                    dat_cr_query(
                                        cr as _,
                                        dat_cr_param_mask::DAT_CR_FIELD_ALL as u32,
                                        &mut q,
                                    )
                                },
                                || "dat_cr_query".into(),
                            )?;
                            let want = q.local_ep_handle as usize;
                            if reserved2.compare_exchange(want, 0, SeqCst, SeqCst).is_ok() {
                                want
                            } else {
                                0
                            }
                        } else {
                            let conn = new_evd(p2.ia, 8, CONNECTION);
                            p2.ep(0, 0, conn)
                                .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?
                        };
                        let reject = |t: &Track| {
                            // SAFETY: a CR, live or consumed by a failed accept; no private data.
                            let rc = t.call("dat_cr_reject", n, || unsafe {
                                dat_cr_reject(cr as _, 0, null_mut())
                            });
                            if rc == OK {
                                Outcome::Rejected
                            } else {
                                Outcome::Failed
                            }
                        };
                        if ep == 0 {
                            passive_out2.lock().unwrap().insert(n, reject(t));
                            continue;
                        }
                        let mut param: DAT_EP_PARAM = zero();
                        // SAFETY: a live EP and an out-pointer to a live local.
                        ok(
                            unsafe { dat_ep_query(ep as _, DAT_EP_FIELD_ALL, &mut param) },
                            || "dat_ep_query".into(),
                        )?;
                        let conn = param.connect_evd_handle as usize;
                        // An RSP's request names its EP (NULL: the reserved one).
                        let target = if on_rsp { 0 } else { ep };
                        let rc = t.call("dat_cr_accept", n, || accept(cr, target));
                        let outcome = if rc != OK {
                            // The request is still to be answered (unless the accept took it).
                            reject(t)
                        } else {
                            let e = conn_event(t, conn, n)?;
                            if conn_ep(&e) != ep {
                                return Err(format!(
                                    "attempt {n}: a connection event for another EP"
                                ));
                            }
                            match connect_outcome(&e) {
                                Some(Outcome::Established) => Outcome::Established,
                                _ => Outcome::Failed,
                            }
                        };
                        passive_out2.lock().unwrap().insert(n, outcome);
                        if outcome == Outcome::Established {
                            ok(
                                t.call("dat_ep_disconnect", n, || disconnect(ep, ABRUPT)),
                                || format!("disconnect {n}"),
                            )?;
                            let e = conn_event(t, conn, n)?;
                            expect_conn(
                                &e,
                                &[DISCONNECTED, BROKEN],
                                ep,
                                &format!("passive end of {n}"),
                            )?;
                        }
                        ok(t.call("dat_ep_free", n, || free_ep(ep)), || {
                            format!("free passive EP {n}")
                        })?;
                        ok(free_evd(conn), || "free a connect EVD".into())?;
                    }
                    Ok(())
                });
            }

            // A connector per port: each attempt ends in exactly one connection event.
            for (c, port) in ports.iter().copied().enumerate() {
                let (a2, stop2, active_out2) =
                    (a.clone(), stop_connecting.clone(), active_out.clone());
                s.spawn(&format!("connect {c}"), move |s, t| {
                    let mut k = 0u64;
                    while !stop2.load(SeqCst) && !s.stopped() {
                        let n = (c as u64) << 32 | k;
                        k += 1;
                        let conn = new_evd(a2.ia, 8, CONNECTION);
                        let ep = a2
                            .ep(0, 0, conn)
                            .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        ok(
                            t.call("dat_ep_connect", n, || {
                                connect(ep, port, &n.to_le_bytes(), 5_000_000)
                            }),
                            || format!("connect {n}"),
                        )?;
                        let e = conn_event(t, conn, n)?;
                        let outcome = connect_outcome(&e)
                            .ok_or(format!("attempt {n}: event {:#x}", e.event_number))?;
                        if conn_ep(&e) != ep {
                            return Err(format!("attempt {n}: a connection event for another EP"));
                        }
                        active_out2.lock().unwrap().insert(n, outcome);
                        if outcome == Outcome::Established {
                            // Ended by the passive side.
                            expect_conn(
                                &conn_event(t, conn, n)?,
                                &[DISCONNECTED, BROKEN],
                                ep,
                                &format!("active end of {n}"),
                            )?;
                        }
                        // One event per attempt: nothing more comes.
                        if let Ok(e) = dequeue(conn) {
                            return Err(format!(
                                "attempt {n}: a second event {:#x}",
                                e.event_number
                            ));
                        }
                        ok(t.call("dat_ep_free", n, || free_ep(ep)), || {
                            format!("free active EP {n}")
                        })?;
                        ok(free_evd(conn), || "free a connect EVD".into())?;
                    }
                    Ok(())
                });
            }

            let t = s.track("main");
            let started = Instant::now();
            until(s, run_for, || started.elapsed() >= run_for);
            stop_connecting.store(true, SeqCst);
            let threads = std::mem::take(&mut *s.threads.lock().unwrap());
            let (connectors, others): (Vec<_>, Vec<_>) = threads
                .into_iter()
                .partition(|h| h.thread().name().is_some_and(|n| n.starts_with("connect")));
            for h in connectors {
                let _ = h.join();
            }
            stop.store(true, SeqCst);
            for h in others {
                let _ = h.join();
            }
            let (active, passive) = (
                active_out.lock().unwrap().clone(),
                passive_out.lock().unwrap().clone(),
            );
            for (n, a_out) in &active {
                let p_out = passive.get(n);
                let agree = match a_out {
                    Outcome::Established => p_out == Some(&Outcome::Established),
                    Outcome::Rejected => p_out.is_none_or(|o| *o == Outcome::Rejected),
                    Outcome::Failed => p_out != Some(&Outcome::Established),
                };
                s.check(agree, || {
                    format!("attempt {n}: the active side {a_out:?}, the passive side {p_out:?}")
                });
            }
            let count = |m: &std::collections::HashMap<u64, Outcome>, o| {
                m.values().filter(|v| **v == o).count()
            };
            s.note(format!(
                "{} attempts: {} established, {} rejected, {} failed; {} requests handled",
                active.len(),
                count(&active, Outcome::Established),
                count(&active, Outcome::Rejected),
                count(&active, Outcome::Failed),
                handled.load(SeqCst)
            ));
            let _ = t;
            assert_eq!(close_ia(p.ia), OK);
            assert_eq!(close_ia(a.ia), OK);
        },
    );
}

/// `dat_ia_close` while everything runs: round after round, two IAs with `LANES` connections
/// streaming messages into receives on one EVD of the passive IA, which a thread polls (and
/// posts receives again), one waits on, and one waits on through a CNO attached to it, while
/// others register and free memory, make and free PSPs, and make and free connections to
/// them; then the passive IA is closed abruptly in the middle of it. The close must return
/// (every object of the IA freed under the threads' calls), every thread must see its calls
/// fail cleanly from then on and finish, and the active IA close after.
#[test]
fn ia_closed_while_everything_runs() {
    const LANES: usize = 2;
    scenario(
        "dat_ia_close while everything runs",
        Duration::from_secs(60),
        |s| {
            let rounds = 10 * scale();
            for round in 0..rounds {
                if s.stopped() || s.out_of_time() {
                    break;
                }
                let a = Arc::new(host(16 * 64));
                let p = Arc::new(host(16 * 256));
                let slots = Arc::new(Slots::new(256));
                let (psp, port) = p.listen();
                let r_evd = new_evd(p.ia, 4096, DTO);
                let a_evd = new_evd(a.ia, 4096, DTO);
                let mut cno = null_mut();
                let none = DAT_OS_WAIT_PROXY_AGENT {
                    instance_data: null_mut(),
                    proxy_agent_func: None,
                };
                // SAFETY: a live IA and an out-pointer to a live local.
                assert_eq!(unsafe { dat_cno_create(p.ia as _, none, &mut cno) }, OK);
                let cno = cno as usize;
                // SAFETY: live handles.
                assert_eq!(unsafe { dat_evd_modify_cno(r_evd as _, cno as _) }, OK);
                let t = s.track(&format!("main {round}"));
                let mut a_eps = Vec::new();
                for l in 0..LANES {
                    let (a_conn, p_conn) =
                        (new_evd(a.ia, 8, CONNECTION), new_evd(p.ia, 8, CONNECTION));
                    let a_ep = a.ep(a_evd, a_evd, a_conn).unwrap();
                    let p_ep = p.ep(r_evd, r_evd, p_conn).unwrap();
                    for _ in 0..32 {
                        assert_eq!(slots.post(&t, &p.mem, p_ep), OK);
                    }
                    connect_pair(&t, l as u64, a_ep, a_conn, p.cr_evd, p_ep, p_conn, port).unwrap();
                    a_eps.push(a_ep);
                }
                let (stop, closed) = (
                    Arc::new(AtomicBool::new(false)),
                    Arc::new(AtomicBool::new(false)),
                );
                let received = Arc::new(AtomicU64::new(0));
                // A bit per thread: it saw a call fail (or a DTO end in error) after the close.
                let saw = Arc::new(AtomicU64::new(0));
                const THREADS: u64 = 6;
                let mark = |saw: &AtomicU64, closed: &AtomicBool, bit: u64| {
                    if closed.load(SeqCst) {
                        saw.fetch_or(1 << bit, SeqCst);
                    }
                };
                // A call's failure: before the close, only the expected ones; after it, any.
                let expected = |rc: DAT_RETURN, closed: &AtomicBool| -> bool {
                    closed.load(SeqCst)
                        || is(rc, Type::DAT_QUEUE_EMPTY)
                        || is(rc, Type::DAT_TIMEOUT_EXPIRED)
                        || is(rc, Type::DAT_INVALID_STATE)
                        || is(rc, Type::DAT_INSUFFICIENT_RESOURCES)
                };

                let (a2, stop2, closed2, saw2) =
                    (a.clone(), stop.clone(), closed.clone(), saw.clone());
                s.spawn(&format!("send {round}"), move |s, t| {
                    let mut n = 0u64;
                    while !stop2.load(SeqCst) && !s.stopped() {
                        let ep = a_eps[n as usize % LANES];
                        let slot = 16 * (n % 64) as usize;
                        a2.mem.write(slot, &message(n));
                        let rc = t.call("dat_ep_post_send", n, || {
                            post_send(ep, &[a2.mem.iov(slot, 16)], n)
                        });
                        if rc != OK && !expected(rc, &closed2) {
                            return Err(format!("send {n}: {rc:#x}"));
                        }
                        n += 1;
                        // Its completion (or another's): reaped; after the close they fail.
                        while let Some(e) = reap(t, a_evd, false, n).ok().flatten() {
                            if dto_of(&e).is_some_and(|d| d.status != SUCCESS) {
                                mark(&saw2, &closed2, 0);
                            }
                        }
                    }
                    Ok(())
                });
                let take_and_post = {
                    let (p2, slots2, received2, closed2) =
                        (p.clone(), slots.clone(), received.clone(), closed.clone());
                    move |t: &Track, e: &DAT_EVENT| -> Result<(), String> {
                        let Some(d) = dto_of(e) else { return Ok(()) };
                        slots2.take(&p2.mem, &d);
                        if d.status == SUCCESS {
                            received2.fetch_add(1, SeqCst);
                        }
                        let rc = slots2.post(t, &p2.mem, d.ep);
                        if rc != OK && !expected(rc, &closed2) && !is(rc, Type::DAT_INVALID_HANDLE)
                        {
                            return Err(format!("posting a receive again: {rc:#x}"));
                        }
                        Ok(())
                    }
                };
                for waits in [false, true] {
                    let (stop2, closed2, take, saw2) = (
                        stop.clone(),
                        closed.clone(),
                        take_and_post.clone(),
                        saw.clone(),
                    );
                    s.spawn(
                        &format!("{} {round}", if waits { "wait" } else { "poll" }),
                        move |s, t| {
                            while !stop2.load(SeqCst) && !s.stopped() {
                                match reap(t, r_evd, waits, 0) {
                                    Ok(Some(e)) => take(t, &e)?,
                                    Ok(None) => {}
                                    Err(rc) if expected(rc, &closed2) => {
                                        mark(&saw2, &closed2, 1 + u64::from(waits))
                                    }
                                    Err(rc) => return Err(format!("reaping: {rc:#x}")),
                                }
                            }
                            Ok(())
                        },
                    );
                }
                let (stop2, closed2, take, saw2) = (
                    stop.clone(),
                    closed.clone(),
                    take_and_post.clone(),
                    saw.clone(),
                );
                s.spawn(&format!("cno {round}"), move |s, t| {
                    while !stop2.load(SeqCst) && !s.stopped() {
                        let mut evd = null_mut();
                        // SAFETY: a CNO, live or dead, and an out-pointer to a live local.
                        let rc = t.call("dat_cno_wait", 0, || unsafe {
                            dat_cno_wait(cno as _, 1_000, &mut evd)
                        });
                        if rc == OK {
                            while let Ok(Some(e)) = reap(t, evd as usize, false, 0) {
                                take(t, &e)?;
                            }
                        } else if !expected(rc, &closed2) {
                            return Err(format!("dat_cno_wait: {rc:#x}"));
                        } else if !is(rc, Type::DAT_QUEUE_EMPTY) {
                            mark(&saw2, &closed2, 3);
                        }
                    }
                    Ok(())
                });
                let (p2, stop2, closed2, saw2) =
                    (p.clone(), stop.clone(), closed.clone(), saw.clone());
                s.spawn(&format!("lmr {round}"), move |s, t| {
                    let buf = Box::leak(vec![0u8; 64].into_boxed_slice()).as_mut_ptr() as usize;
                    while !stop2.load(SeqCst) && !s.stopped() {
                        match t.call("dat_lmr_create", 0, || register(p2.ia, p2.pz, buf, 64)) {
                            // SAFETY: a live LMR (or one the close freed: refused).
                            Ok((lmr, _, _)) => {
                                let rc =
                                    t.call("dat_lmr_free", 0, || unsafe { dat_lmr_free(lmr as _) });
                                if rc != OK && !expected(rc, &closed2) {
                                    return Err(format!("dat_lmr_free: {rc:#x}"));
                                }
                            }
                            Err(rc) if expected(rc, &closed2) => mark(&saw2, &closed2, 4),
                            Err(rc) => return Err(format!("dat_lmr_create: {rc:#x}")),
                        }
                    }
                    Ok(())
                });
                let (a2, p2, stop2, closed2, saw2) = (
                    a.clone(),
                    p.clone(),
                    stop.clone(),
                    closed.clone(),
                    saw.clone(),
                );
                s.spawn(&format!("connect {round}"), move |s, t| {
                    let mut k = 100u64;
                    while !stop2.load(SeqCst) && !s.stopped() {
                        k += 1;
                        let (a_conn, p_conn) = (
                            new_evd(a2.ia, 8, CONNECTION),
                            create_evd_or_zero(p2.ia, CONNECTION),
                        );
                        let a_ep = a2
                            .ep(0, 0, a_conn)
                            .map_err(|rc| format!("dat_ep_create: {rc:#x}"))?;
                        let p_ep = p2.ep(0, 0, p_conn).unwrap_or(0);
                        let made = p_ep != 0
                            && connect_pair(t, k, a_ep, a_conn, p2.cr_evd, p_ep, p_conn, port)
                                .is_ok();
                        if !made && !closed2.load(SeqCst) {
                            return Err(format!("connection {k} failed before the close"));
                        }
                        if !made {
                            mark(&saw2, &closed2, 5);
                        }
                        for ep in [p_ep, a_ep] {
                            let rc = t.call("dat_ep_free", k, || free_ep(ep));
                            if rc != OK
                                && !expected(rc, &closed2)
                                && !is(rc, Type::DAT_INVALID_HANDLE)
                            {
                                return Err(format!("dat_ep_free: {rc:#x}"));
                            }
                        }
                        let _ = (free_evd(a_conn), free_evd(p_conn));
                    }
                    Ok(())
                });

                // Some traffic first, then the close, in the middle of everything.
                until(s, Duration::from_millis(300), || {
                    received.load(SeqCst) >= 200
                });
                closed.store(true, SeqCst);
                let rc = t.call("dat_ia_close", round, || close_ia(p.ia));
                s.check(rc == OK, || format!("round {round}: dat_ia_close: {rc:#x}"));
                // The threads go on against the dead IA until each saw its calls fail, then stop.
                let after = received.load(SeqCst);
                if !until(s, Duration::from_secs(10), || {
                    saw.load(SeqCst) == (1 << THREADS) - 1
                }) {
                    s.fail(format!(
                        "round {round}: after the close, only threads {:#b} saw a call fail",
                        saw.load(SeqCst)
                    ));
                }
                s.check(
                    is(dequeue(r_evd).err().unwrap_or(OK), Type::DAT_INVALID_HANDLE),
                    || "the closed IA's EVD still answers".into(),
                );
                stop.store(true, SeqCst);
                for h in std::mem::take(&mut *s.threads.lock().unwrap()) {
                    let _ = h.join();
                }
                // SAFETY: the closed IA's PSP: refused.
                let _ = unsafe { dat_psp_free(psp as _) };
                s.check(close_ia(a.ia) == OK, || {
                    format!("round {round}: closing the active IA")
                });
                s.note(format!(
                    "{} rounds; {after} messages received before the last close",
                    round + 1
                ));
            }
        },
    );
}

/// A connection EVD of `ia`, or 0 where the IA is gone.
fn create_evd_or_zero(ia: usize, flags: dat_evd_flags) -> usize {
    let mut e = null_mut();
    // SAFETY: an IA, live or dead, and an out-pointer to a live local.
    match unsafe { dat_evd_create(ia as _, 8, null_mut(), flags as u32, &mut e) } {
        OK => e as usize,
        _ => 0,
    }
}

// ---------------------------------------------------------------------------------------------
// Problems the scenarios found, each kept as a test of its own.

/// A DTO posted on an EP while another thread frees that EP was accepted (DAT_SUCCESS) and
/// never completed: `dat_ep_free`'s release flushes the EP's receives and requests, then lets
/// go of its EVDs, and a post that looked the EP up before the free (its handle, or the
/// thread's memory of its last lookup) and took the EP's lock between the two was queued on
/// an EP nobody flushed again (a receive), or completed on no EVD (a request). A post now finds
/// the EP released and refuses (DAT_INVALID_HANDLE). Here three threads post receives on an
/// unconnected EP as fast as they can while the main thread frees the EP, round after round:
/// every receive posted successfully must come back flushed on the EVD.
#[test]
fn posts_racing_the_free_of_their_ep_complete() {
    scenario(
        "posts racing the free of their EP",
        Duration::from_secs(60),
        |s| {
            let rounds = 1000 * scale();
            let p = Arc::new(host(16));
            let evd = new_evd(p.ia, 1 << 16, DTO);
            let current = Arc::new(AtomicUsize::new(0));
            let posted = Arc::new(Seen::default());
            for poster in 0..3 {
                let (p2, current2, posted2) = (p.clone(), current.clone(), posted.clone());
                s.spawn(&format!("post {poster}"), move |s, t| {
                    let mut k = poster << 40;
                    while !s.stopped() {
                        let ep = current2.load(SeqCst);
                        if ep == usize::MAX {
                            break;
                        }
                        if ep == 0 {
                            std::thread::yield_now();
                            continue;
                        }
                        k += 1;
                        posted2.insert(k);
                        let rc = t.call("dat_ep_post_recv", k, || {
                            post_recv(ep, &[p2.mem.iov(0, 16)], k)
                        });
                        if rc != OK {
                            posted2.remove(k);
                            if !is(rc, Type::DAT_INVALID_HANDLE)
                                && !is(rc, Type::DAT_INSUFFICIENT_RESOURCES)
                                && !is(rc, Type::DAT_INVALID_STATE)
                            {
                                return Err(format!("receive {k}: {rc:#x}"));
                            }
                        }
                    }
                    Ok(())
                });
            }
            let t = s.track("free (main)");
            let completed = Seen::default();
            for round in 0..rounds {
                if s.stopped() || s.out_of_time() {
                    break;
                }
                let ep = p.ep(evd, 0, 0).expect("an EP");
                let before = posted.len();
                current.store(ep, SeqCst);
                until(s, Duration::from_secs(5), || posted.len() >= before + 8);
                s.check(t.call("dat_ep_free", round, || free_ep(ep)) == OK, || {
                    format!("round {round}: dat_ep_free")
                });
                current.store(0, SeqCst);
                while let Ok(e) = dequeue(evd) {
                    let d = dto_of(&e).expect("a DTO completion");
                    s.check(d.status == FLUSHED && completed.insert(d.cookie), || {
                        format!("round {round}: {d:?}")
                    });
                }
            }
            current.store(usize::MAX, SeqCst);
            for h in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = h.join();
            }
            while let Ok(e) = dequeue(evd) {
                completed.insert(dto_of(&e).expect("a DTO completion").cookie);
            }
            let lost: Vec<u64> = posted
                .all()
                .difference(&completed.all())
                .copied()
                .take(10)
                .collect();
            s.note(format!(
                "{} receives posted, {} flushed; never completed: {lost:?}",
                posted.len(),
                completed.len()
            ));
            s.check(lost.is_empty(), || {
                format!("receives accepted and never completed: {lost:?}")
            });
            assert_eq!(close_ia(p.ia), OK);
        },
    );
}

/// Where the library keeps a region for the checks of the segments that land in it: in its
/// lock-free table (1024 slots by context) when the region's slot was free as it registered,
/// else only in the map under the regions' lock (`objects::region_table`). Mirrored here from
/// the contexts, for a process whose regions are all registered through it.
#[derive(Default)]
struct Placement {
    /// Slot -> the context of the region in it.
    table: std::collections::HashMap<u32, u32>,
}

impl Placement {
    const SLOTS: u32 = 1024;

    fn registered(&mut self, ctx: u32) -> bool {
        let slot = ctx % Self::SLOTS;
        if self.table.contains_key(&slot) {
            return false;
        }
        self.table.insert(slot, ctx);
        true
    }

    fn freed(&mut self, ctx: u32) {
        let slot = ctx % Self::SLOTS;
        if self.table.get(&slot) == Some(&ctx) {
            self.table.remove(&slot);
        }
    }

    /// Registers `len` bytes at `base`: (LMR, context, whether the table holds it).
    fn register(&mut self, ia: usize, pz: usize, base: usize, len: usize) -> (usize, u32, bool) {
        let (lmr, ctx, _) = register(ia, pz, base, len).expect("memory registered");
        (lmr, ctx, self.registered(ctx))
    }

    /// Registers at `base` until the region lands where `in_table` says.
    fn register_placed(
        &mut self,
        ia: usize,
        pz: usize,
        base: usize,
        len: usize,
        in_table: bool,
    ) -> (usize, u32) {
        loop {
            let (lmr, ctx, placed) = self.register(ia, pz, base, len);
            if placed == in_table {
                return (lmr, ctx);
            }
            // SAFETY: a live LMR.
            assert_eq!(unsafe { dat_lmr_free(lmr as _) }, OK);
            self.freed(ctx);
        }
    }
}

/// Found by reading the lock order, then here (a deadlock until the free waited for its
/// slot's holds outside the regions' lock, and gates were read recursively): a message whose
/// payload is buffered whole lands under holds of every segment it fills, taken one after another before a byte
/// moves (`inbound::messages::deliver_buffered`), and a hold is a lock the region's free waits for:
///
/// - a region in the lock-free table is held through its slot (`RegionTable::hold`), and its
///   free, under the regions' write lock (`Lmr::forget`: `CONTEXTS.write()`), waits for the
///   slot's holds (`RegionTable::remove`); a region out of the table is found under the
///   regions' read lock (`Lmr::by_context`). A receive whose first segment is in a region of
///   the table and whose second is in one out of it, landing as the first region is freed:
///   the landing holds the slot and waits for the read lock, the free holds the write lock and
///   waits for the slot. Deadlock.
/// - a region out of the table is held by its gate, read-locked (`Lmr::hold_segment_in_map`),
///   which its free write-locks (`Lmr::on_release`); a receive with two segments in one such
///   region read-locks the gate twice, and a free that comes between (a writer waiting)
///   blocks the second read lock (parking_lot's RwLock is fair to writers), while the free
///   waits for the first. Deadlock. (`inbound::remote_access::atomic` holds a region's gate while it writes
///   the answers queued before its own, which may hold the same region's gate again: the same
///   deadlock, with a peer's RDMA read and atomic on one region.)
///
/// (A region is out of the table only when its slot was taken as it registered, and a
/// registration draws a few keys for a free slot: it takes many live regions.) Here, over the
/// socket path (a child process with `LIBDAT_DIRECT=0`), with small regions in three of every
/// four slots, message after message lands in a
/// receive of two segments laid out as above while another thread frees the region under it
/// at a moment spread around the landing; a landing that fails for the free breaks the
/// connection, which is made again. The watchdog names the landing thread and the free stuck.
#[test]
fn regions_freed_as_a_message_lands_in_two_of_their_segments() {
    in_child(
        "regions_freed_as_a_message_lands_in_two_of_their_segments",
        &[("LIBDAT_DIRECT", "0")],
        || {
            scenario(
                "regions freed as a message lands in two of their segments",
                Duration::from_secs(60),
                |s| {
                    let trials = 20_000 * scale();
                    let a = host(64);
                    let p = host(64);
                    let mut placement = Placement::default();
                    placement.registered(a.mem.lmr_ctx);
                    placement.registered(p.mem.lmr_ctx);
                    // Nearly every slot taken (a registration draws a few keys for a free slot), then
                    // one in four given back: a region registered later lands in the table or out of
                    // it, as each trial asks (`register_placed`).
                    let filler = Box::leak(vec![0u8; 64].into_boxed_slice()).as_mut_ptr() as usize;
                    let fillers: Vec<(usize, u32, bool)> = (0..Placement::SLOTS)
                        .map(|_| placement.register(p.ia, p.pz, filler, 64))
                        .collect();
                    for (lmr, ctx, _) in fillers.iter().step_by(4) {
                        // SAFETY: a live LMR.
                        assert_eq!(unsafe { dat_lmr_free(*lmr as _) }, OK);
                        placement.freed(*ctx);
                    }
                    let target = Box::leak(vec![0u8; 64].into_boxed_slice()).as_mut_ptr() as usize;
                    let (psp, port) = p.listen();
                    let (a_dto, p_dto) = (new_evd(a.ia, 64, DTO), new_evd(p.ia, 64, DTO));
                    // The free, on a signal, after a delay spread over the time a message takes to land.
                    let (go_tx, go_rx) = mpsc::channel::<(usize, u32)>();
                    let (done_tx, done_rx) = mpsc::channel::<DAT_RETURN>();
                    s.spawn("free", move |_s, t| {
                        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
                        while let Ok((lmr, delay_ns)) = go_rx.recv() {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            let until = Instant::now()
                                + Duration::from_nanos(u64::from(delay_ns) + seed % 60_000);
                            while Instant::now() < until {
                                std::hint::spin_loop();
                            }
                            // SAFETY: a live LMR.
                            let _ = done_tx.send(
                                t.call("dat_lmr_free", 0, || unsafe { dat_lmr_free(lmr as _) }),
                            );
                        }
                        Ok(())
                    });
                    let t = s.track("land (main)");
                    let mut pair: Option<(usize, usize, usize, usize)> = None;
                    let mut broken = 0;
                    for trial in 0..trials {
                        if s.stopped() || s.out_of_time() {
                            break;
                        }
                        let (a_ep, a_conn, p_ep, p_conn) = match pair {
                            Some(c) => c,
                            None => {
                                let (a_conn, p_conn) =
                                    (new_evd(a.ia, 8, CONNECTION), new_evd(p.ia, 8, CONNECTION));
                                let a_ep = a.ep(a_dto, a_dto, a_conn).unwrap();
                                let p_ep = p.ep(p_dto, p_dto, p_conn).unwrap();
                                if let Err(e) = connect_pair(
                                    &t, trial, a_ep, a_conn, p.cr_evd, p_ep, p_conn, port,
                                ) {
                                    s.fail(e);
                                    break;
                                }
                                *pair.insert((a_ep, a_conn, p_ep, p_conn))
                            }
                        };
                        // Even trials: two segments of one region out of the table, that region freed;
                        // odd: the first in a region of the table (freed), the second out of it.
                        let (freed, freed_ctx, segments) = if trial.is_multiple_of(2) {
                            let (lmr, ctx) =
                                placement.register_placed(p.ia, p.pz, target, 32, false);
                            let seg = |off: usize| DAT_LMR_TRIPLET {
                                lmr_context: ctx,
                                virtual_address: (target + off) as DAT_VADDR,
                                segment_length: 16,
                            };
                            (lmr, ctx, [seg(0), seg(16)])
                        } else {
                            let (lmr, ctx) =
                                placement.register_placed(p.ia, p.pz, target, 16, true);
                            let (_, other) =
                                placement.register_placed(p.ia, p.pz, target + 16, 16, false);
                            let first = DAT_LMR_TRIPLET {
                                lmr_context: ctx,
                                virtual_address: target as DAT_VADDR,
                                segment_length: 16,
                            };
                            let second = DAT_LMR_TRIPLET {
                                lmr_context: other,
                                virtual_address: (target + 16) as DAT_VADDR,
                                segment_length: 16,
                            };
                            (lmr, ctx, [first, second])
                        };
                        if !s.check(
                            t.call("dat_ep_post_recv", trial, || {
                                post_recv(p_ep, &segments, trial)
                            }) == OK,
                            || format!("trial {trial}: receive"),
                        ) {
                            break;
                        }
                        a.mem.write(0, &[0x5Au8; 32]);
                        let _ = go_tx.send((freed, 0));
                        if !s.check(
                            t.call("dat_ep_post_send", trial, || {
                                post_send(a_ep, &[a.mem.iov(0, 32)], trial)
                            }) == OK,
                            || format!("trial {trial}: send"),
                        ) {
                            break;
                        }
                        let landed = matches!(t.call("dat_evd_wait", trial, || wait_us(p_dto, 10_000_000)), Ok(e) if dto_of(&e).is_some_and(|d| d.status == SUCCESS));
                        let sent = matches!(t.call("dat_evd_wait", trial, || wait_us(a_dto, 10_000_000)), Ok(e) if dto_of(&e).is_some_and(|d| d.status == SUCCESS));
                        let freed_rc = done_rx
                            .recv_timeout(Duration::from_secs(10))
                            .unwrap_or(u32::MAX);
                        placement.freed(freed_ctx);
                        s.check(freed_rc == OK, || {
                            format!("trial {trial}: dat_lmr_free: {freed_rc:#x}")
                        });
                        if !(landed && sent) {
                            // The free came first: the connection broke. Made again.
                            broken += 1;
                            for (ep, conn) in [(a_ep, a_conn), (p_ep, p_conn)] {
                                let _ = conn_event(&t, conn, trial);
                                let _ = free_ep(ep);
                                let _ = free_evd(conn);
                            }
                            while dequeue(a_dto).is_ok() || dequeue(p_dto).is_ok() {}
                            pair = None;
                        }
                        s.note(format!(
                            "{} trials, {broken} of them broke the connection",
                            trial + 1
                        ));
                    }
                    drop(go_tx);
                    for h in std::mem::take(&mut *s.threads.lock().unwrap()) {
                        let _ = h.join();
                    }
                    // SAFETY: a live PSP.
                    let _ = unsafe { dat_psp_free(psp as _) };
                    assert_eq!(close_ia(p.ia), OK);
                    assert_eq!(close_ia(a.ia), OK);
                },
            );
        },
    );
}

/// What the agent of `the_os_wait_proxy_agent_may_post_a_receive` does when it is called: it
/// posts a receive on `ep` and says what the post returned.
struct ReceiveAgain {
    ep: usize,
    iov: DAT_LMR_TRIPLET,
    /// Set as the agent is called, and as its post returned (1: posted, 2: refused).
    called: AtomicBool,
    posted: AtomicU32,
}

unsafe extern "C" fn post_a_receive(instance: DAT_PVOID, _evd: DAT_EVD_HANDLE) {
    // SAFETY: the instance data is the test's `ReceiveAgain`, alive until the test ends.
    let me = unsafe { &*(instance as *const ReceiveAgain) };
    me.called.store(true, SeqCst);
    let rc = post_recv(me.ep, &[me.iov], 2);
    me.posted.store(if rc == OK { 1 } else { 2 }, SeqCst);
}

/// The OS Wait Proxy Agent of a CNO was called as an EVD of the CNO got an event, on the
/// thread that made the event, with the library's locks that thread held: a receive that
/// completes is reported under its EP's lock (and the connection's inbound half, and the
/// EVD's sources when a poll landed it). An agent that calls the library back about that EP
/// (here: posts the next receive) deadlocked its own thread. It runs on the progress thread
/// now, holding nothing.
#[test]
fn the_os_wait_proxy_agent_may_post_a_receive() {
    scenario(
        "an OS Wait Proxy Agent posting a receive",
        Duration::from_secs(30),
        |s| {
            let a = host(16);
            let p = host(32);
            let (psp, port) = p.listen();
            let t = s.track("main");
            let (a_conn, a_dto, p_conn, p_dto) = (
                new_evd(a.ia, 8, CONNECTION),
                new_evd(a.ia, 8, DTO),
                new_evd(p.ia, 8, CONNECTION),
                new_evd(p.ia, 8, DTO),
            );
            let a_ep = a.ep(a_dto, a_dto, a_conn).unwrap();
            let p_ep = p.ep(p_dto, p_dto, p_conn).unwrap();
            connect_pair(&t, 0, a_ep, a_conn, p.cr_evd, p_ep, p_conn, port).unwrap();
            let agent_state = Box::leak(Box::new(ReceiveAgain {
                ep: p_ep,
                iov: p.mem.iov(16, 16),
                called: AtomicBool::new(false),
                posted: AtomicU32::new(0),
            }));
            let agent = DAT_OS_WAIT_PROXY_AGENT {
                instance_data: agent_state as *mut ReceiveAgain as DAT_PVOID,
                proxy_agent_func: Some(post_a_receive),
            };
            let mut cno = null_mut();
            // SAFETY: a live IA, an agent whose instance data lives through the test, an out-pointer.
            assert_eq!(unsafe { dat_cno_create(p.ia as _, agent, &mut cno) }, OK);
            // SAFETY: live handles.
            assert_eq!(unsafe { dat_evd_modify_cno(p_dto as _, cno) }, OK);
            assert_eq!(post_recv(p_ep, &[p.mem.iov(0, 16)], 1), OK);
            a.mem.write(0, &message(1));
            assert_eq!(
                t.call("dat_ep_post_send", 1, || post_send(
                    a_ep,
                    &[a.mem.iov(0, 16)],
                    1
                )),
                OK
            );
            // Nobody waits on the EVD: its CNO hears of the receive, and calls the agent, which
            // posts the next receive.
            s.check(
                until(s, Duration::from_secs(10), || {
                    agent_state.called.load(SeqCst)
                }),
                || "the agent was not called".into(),
            );
            if s.check(
                until(s, Duration::from_secs(5), || {
                    agent_state.posted.load(SeqCst) != 0
                }),
                || "the agent's post of a receive did not return".into(),
            ) {
                s.check(agent_state.posted.load(SeqCst) == 1, || {
                    "the agent's receive was refused".into()
                });
                let e = t.call("dat_evd_dequeue", 1, || dequeue(p_dto));
                s.check(
                    e.is_ok_and(|e| {
                        dto_of(&e).is_some_and(|d| d.status == SUCCESS && d.cookie == 1)
                    }),
                    || "the receive's completion".into(),
                );
            }
            // With the agent stuck under the EP's lock, the close waits for it: the watchdog then
            // shows where.
            // SAFETY: a live PSP.
            let _ = unsafe { dat_psp_free(psp as _) };
            s.check(t.call("dat_ia_close", 0, || close_ia(p.ia)) == OK, || {
                "closing the passive IA".into()
            });
            s.check(close_ia(a.ia) == OK, || "closing the active IA".into());
        },
    );
}

/// Receives of several connections that complete on one EVD complete in the order their peers
/// filled them (`direct::FillOrder`): a taker (a thread waiting on the EVD or dequeuing from it,
/// the progress thread answering a doorbell, a message by the socket taking the fills before
/// it) holds the order's lock and takes each EP's lock in turn. Here `CONNS` connections stream
/// messages into EPs that share one receive EVD, each sender waiting for its send to complete
/// before the next, while two threads take the completions (one waits, one dequeues) and post
/// each receive again; with `RECVS` receives posted per EP, a sender often outruns them, and
/// its message goes by the socket to wait for one. Every message must land once, whole, and no
/// call stall. (The two takers post receives again in whichever order they get to it, so which
/// receive a message lands in is theirs to decide: the order is `tests/direct.rs`'s to check.)
#[test]
fn receives_of_connections_sharing_an_evd_taken_while_they_stream() {
    const CONNS: usize = 4;
    const RECVS: usize = 4;
    const SLOT: usize = 16;
    scenario(
        "receives of connections sharing one EVD, taken while they stream",
        Duration::from_secs(60),
        |s| {
            let messages = 1500 * scale();
            let p = Arc::new(host(CONNS * RECVS * SLOT));
            let a = host(CONNS * SLOT);
            let recv_evd = new_evd(p.ia, 1024, DTO);
            let (p_req, p_conn) = (new_evd(p.ia, 64, DTO), new_evd(p.ia, 64, CONNECTION));
            let (psp, port) = p.listen();
            let t = s.track("setup (main)");
            let mut passive = Vec::new();
            for c in 0..CONNS {
                let ep = p.ep(recv_evd, p_req, p_conn).expect("a passive EP");
                for k in 0..RECVS {
                    let iov = [p.mem.iov((c * RECVS + k) * SLOT, SLOT)];
                    assert_eq!(post_recv(ep, &iov, k as u64), OK);
                }
                let (req, conn) = (new_evd(a.ia, 64, DTO), new_evd(a.ia, 8, CONNECTION));
                let active = a.ep(req, req, conn).expect("an active EP");
                assert_eq!(connect(active, port, b"", 10_000_000), OK);
                let e = conn_event(&t, p.cr_evd, c as u64).expect("a connection request");
                let (cr, _) = cr_of(&e).expect("a connection request");
                assert_eq!(accept(cr, ep), OK);
                for evd in [p_conn, conn] {
                    let e = conn_event(&t, evd, c as u64).expect("a connection event");
                    assert!(event_is(&e, ESTABLISHED), "connection {c}: not established");
                }
                passive.push(ep);
                // The sender: message k of connection c carries k, each sent once the one
                // before it completed.
                let a_mem = (a.mem.base, a.mem.lmr_ctx);
                s.spawn(&format!("send {c}"), move |s, t| {
                    let iov = [DAT_LMR_TRIPLET {
                        lmr_context: a_mem.1,
                        virtual_address: (a_mem.0 + c * SLOT) as DAT_VADDR,
                        segment_length: 8,
                    }];
                    for k in 0..messages {
                        if s.stopped() {
                            break;
                        }
                        // SAFETY: the sender's own slot of the leaked buffer.
                        unsafe { std::ptr::write_volatile(iov[0].virtual_address as *mut u64, k) };
                        let rc = t.call("dat_ep_post_send", k, || post_send(active, &iov, k));
                        if rc != OK {
                            return Err(format!("connection {c}: send {k}: {rc:#x}"));
                        }
                        request_done(t, req, k)?;
                    }
                    Ok(())
                });
            }
            // SAFETY: a live PSP.
            assert_eq!(unsafe { dat_psp_free(psp as _) }, OK);
            // The takers: each completion's receive (its cookie: the receive's number on its
            // EP, which names its slot) holds one of the connection's messages, seen once; the
            // receive is posted again.
            let landed: Arc<Vec<AtomicU64>> =
                Arc::new((0..CONNS).map(|_| AtomicU64::new(0)).collect());
            let seen: Arc<Vec<Seen>> = Arc::new((0..CONNS).map(|_| Seen::default()).collect());
            let passive = Arc::new(passive);
            for (name, waits) in [("wait", true), ("dequeue", false)] {
                let (p, landed, seen, passive) =
                    (p.clone(), landed.clone(), seen.clone(), passive.clone());
                s.spawn(name, move |s, t| {
                    let total = messages * CONNS as u64;
                    while landed.iter().map(|n| n.load(SeqCst)).sum::<u64>() < total {
                        if s.stopped() {
                            return Ok(());
                        }
                        let e = if waits {
                            t.call("dat_evd_wait", 0, || wait_us(recv_evd, 100_000))
                        } else {
                            t.call("dat_evd_dequeue", 0, || dequeue(recv_evd))
                        };
                        let Ok(e) = e else { continue };
                        let d = dto_of(&e).ok_or("not a DTO completion")?;
                        let c = passive
                            .iter()
                            .position(|&ep| ep == d.ep)
                            .ok_or(format!("a completion of no EP of ours: {d:?}"))?;
                        let slot = (c * RECVS + d.cookie as usize % RECVS) * SLOT;
                        let got = u64::from_le_bytes(p.mem.read(slot, 8).try_into().unwrap());
                        if d.status != SUCCESS || d.len != 8 || got >= messages || !seen[c].insert(got)
                        {
                            return Err(format!(
                                "connection {c}: receive {} holds message {got} (a second time, or none sent): {d:?}",
                                d.cookie
                            ));
                        }
                        landed[c].fetch_add(1, SeqCst);
                        let next = d.cookie + RECVS as u64;
                        if next < messages {
                            let iov = [p.mem.iov(slot, SLOT)];
                            let rc = t.call("dat_ep_post_recv", next, || {
                                post_recv(passive[c], &iov, next)
                            });
                            if rc != OK {
                                return Err(format!("connection {c}: receive {next}: {rc:#x}"));
                            }
                        }
                    }
                    Ok(())
                });
            }
            for h in std::mem::take(&mut *s.threads.lock().unwrap()) {
                let _ = h.join();
            }
            s.note(format!(
                "messages landed per connection: {:?}",
                landed.iter().map(|n| n.load(SeqCst)).collect::<Vec<_>>()
            ));
            s.check(landed.iter().all(|n| n.load(SeqCst) == messages), || {
                "not every message landed".into()
            });
            s.check(close_ia(a.ia) == OK, || "closing the active IA".into());
            s.check(close_ia(p.ia) == OK, || "closing the passive IA".into());
        },
    );
}
