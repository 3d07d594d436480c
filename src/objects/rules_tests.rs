//! The Endpoint's and the EVD's rules, tested against a fake transport: states, connection
//! events, flushes and refusals with no socket and no device. The transport records what the
//! objects asked of it; its link records how it was closed.

use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use super::conn_qual;
use super::ep::{default_attr, Close, End, Ep, EpInner, Outgoing, Parts, Posted};
use super::ep_state::AcceptOn;
use super::evd::{Catch, Evd};
use super::ia::Ia;
use super::pz::Pz;
use super::srq::PostedRecv;
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::seam::{Link, Listening, OnRequest, Progress, Transport};
use crate::registry::{Entry, Origin, Transport as Kind};

/// A connect the fake transport was asked for.
#[derive(Debug, PartialEq)]
struct Connect {
    remote: SocketAddrV4,
    conn_qual: u64,
    private_data: Vec<u8>,
    timeout: Option<Duration>,
}

#[derive(Default)]
struct FakeTransport {
    connects: Mutex<Vec<Connect>>,
    /// Refuse every connect at once (as a transport with no route would).
    refuse: bool,
}

impl Transport for FakeTransport {
    fn listen(
        &self,
        _ip: Ipv4Addr,
        _port: u16,
        _conn_qual: u64,
        _on_request: OnRequest,
    ) -> io::Result<Box<dyn Listening>> {
        Err(io::ErrorKind::Unsupported.into())
    }

    fn connect(
        &self,
        _ep: Arc<Ep>,
        _attempt: u64,
        remote: SocketAddrV4,
        conn_qual: u64,
        private_data: Vec<u8>,
        timeout: Option<Duration>,
    ) -> DatResult {
        if self.refuse {
            return Err(DatError::resources(Sub::DAT_RESOURCE_MEMORY));
        }
        self.connects.lock().push(Connect {
            remote,
            conn_qual,
            private_data,
            timeout,
        });
        Ok(())
    }

    fn provider_specific(&self, _ip: Ipv4Addr) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

#[derive(Default)]
struct FakeLink {
    closed: Mutex<Vec<Close>>,
}

impl Progress for FakeLink {
    fn progress(&self) {}
}

impl Link for FakeLink {
    fn close(&self, how: Close) {
        self.closed.lock().push(how);
    }

    fn post(
        &self,
        _ep: &Ep,
        _inner: MutexGuard<'_, EpInner>,
        _request: &Outgoing<'_>,
    ) -> DatResult<Posted> {
        Ok(Posted::Queued)
    }

    fn receive_posted(&self, _ep: &Ep) {}
}

struct Fixture {
    transport: Arc<FakeTransport>,
    conn_evd: Arc<Evd>,
    recv_evd: Arc<Evd>,
    ep: Arc<Ep>,
}

struct Options {
    refuse: bool,
    pz: bool,
    connect_evd: bool,
}

const USUAL: Options = Options {
    refuse: false,
    pz: true,
    connect_evd: true,
};

fn fixture(options: Options) -> Fixture {
    let entry = Arc::new(Entry {
        ia_name: "fake".into(),
        api_major: 2,
        api_minor: 0,
        thread_safe: true,
        is_default: false,
        lib_path: "fake".into(),
        provider_version: "fake".into(),
        ia_params: String::new(),
        platform_params: String::new(),
        transport: Kind::Tcp,
        origin: Origin::Runtime,
    });
    let transport = Arc::new(FakeTransport {
        refuse: options.refuse,
        ..FakeTransport::default()
    });
    let ia = Ia::open(entry, transport.clone(), Some(Ipv4Addr::LOCALHOST)).unwrap();
    let evd = |flag: dat_evd_flags| Evd::create(&ia, 16, None, flag as u32).unwrap().0;
    let conn_evd = evd(dat_evd_flags::DAT_EVD_CONNECTION_FLAG);
    let recv_evd = evd(dat_evd_flags::DAT_EVD_DTO_FLAG);
    let parts = Parts {
        pz: options.pz.then(|| Arc::new(Pz::new(ia.clone(), None))),
        recv_evd: Some(recv_evd.clone()),
        request_evd: Some(recv_evd.clone()),
        connect_evd: options.connect_evd.then(|| conn_evd.clone()),
        srq: None,
    };
    let ep = Arc::new(Ep::new(ia, parts, default_attr()));
    Fixture {
        transport,
        conn_evd,
        recv_evd,
        ep,
    }
}

/// The next event of `evd`, None when it has none.
fn next(evd: &Evd) -> Option<DAT_EVENT> {
    let mut out = MaybeUninit::uninit();
    // SAFETY: a successful dequeue wrote the event.
    evd.dequeue(&mut out)
        .ok()
        .map(|()| unsafe { out.assume_init() })
}

fn connection_event(evd: &Evd) -> (dat_event_number, Vec<u8>) {
    let e = next(evd).expect("a connection event");
    // SAFETY: a connection event's data is its connect_event_data, whose private data points
    // to private_data_size bytes the EP keeps.
    let data = unsafe {
        let d = e.event_data.connect_event_data;
        std::slice::from_raw_parts(d.private_data as *const u8, d.private_data_size as usize)
            .to_vec()
    };
    (dat_event_number::try_from(e.event_number).unwrap(), data)
}

fn invalid_state(sub: Sub) -> DatResult {
    Err(DatError::invalid_state(sub))
}

const PEER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 4791);

fn connected(f: &Fixture) -> Arc<FakeLink> {
    f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b"").unwrap();
    let link = Arc::new(FakeLink::default());
    assert!(f.ep.established(Some((link.clone(), PEER)), b"welcome"));
    assert_eq!(
        connection_event(&f.conn_evd),
        (
            dat_event_number::DAT_CONNECTION_EVENT_ESTABLISHED,
            b"welcome".to_vec()
        )
    );
    link
}

#[test]
fn a_connect_makes_the_ep_pending_and_asks_the_transport_once() {
    let f = fixture(USUAL);
    let timeout = Some(Duration::from_secs(3));
    f.ep.connect(Ipv4Addr::LOCALHOST, 0x1_0000_1389, timeout, b"hello")
        .unwrap();
    assert_eq!(
        f.ep.state(),
        dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING
    );
    assert_eq!(
        *f.transport.connects.lock(),
        [Connect {
            remote: SocketAddrV4::new(Ipv4Addr::LOCALHOST, conn_qual::port(0x1_0000_1389)),
            conn_qual: 0x1_0000_1389,
            private_data: b"hello".to_vec(),
            timeout,
        }]
    );
    // A second connect is refused by the state it finds, and asks the transport nothing.
    assert_eq!(
        f.ep.check_connectable(),
        invalid_state(Sub::DAT_INVALID_STATE_EP_ACTCONNPENDING)
    );
    assert_eq!(
        f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b""),
        invalid_state(Sub::DAT_INVALID_STATE_EP_ACTCONNPENDING)
    );
    assert_eq!(f.transport.connects.lock().len(), 1);
}

#[test]
fn a_connect_the_transport_refuses_leaves_the_ep_unconnected() {
    let f = fixture(Options {
        refuse: true,
        ..USUAL
    });
    assert_eq!(
        f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b""),
        Err(DatError::resources(Sub::DAT_RESOURCE_MEMORY))
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    assert!(
        next(&f.conn_evd).is_none(),
        "no event for a connect that never started"
    );
    assert_eq!(f.ep.check_connectable(), Ok(()));
}

#[test]
fn a_connect_needs_the_eps_protection_zone_and_connect_evd() {
    let f = fixture(Options { pz: false, ..USUAL });
    assert_eq!(
        f.ep.check_connectable(),
        invalid_state(Sub::DAT_INVALID_STATE_EP_PZ)
    );
    let f = fixture(Options {
        connect_evd: false,
        ..USUAL
    });
    assert_eq!(
        f.ep.check_connectable(),
        invalid_state(Sub::DAT_INVALID_STATE_EP_EVD_CONNECT)
    );
}

#[test]
fn disconnecting_a_pending_connect_ends_it_and_a_late_establishment_is_ignored() {
    let f = fixture(USUAL);
    f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b"").unwrap();
    assert_eq!(f.ep.disconnect(true), Ok(()));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(
        connection_event(&f.conn_evd).0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
    // The transport's attempt comes up after all: the EP does not take it.
    let link = Arc::new(FakeLink::default());
    assert!(!f.ep.established(Some((link, PEER)), b""));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert!(next(&f.conn_evd).is_none());
    // A second disconnect of a DISCONNECTED EP does nothing, successfully.
    assert_eq!(f.ep.disconnect(false), Ok(()));
    assert!(next(&f.conn_evd).is_none());
}

#[test]
fn a_graceful_disconnect_waits_for_the_link_to_end() {
    let f = fixture(USUAL);
    let link = connected(&f);
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_CONNECTED);
    assert_eq!(f.ep.disconnect(true), Ok(()));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECT_PENDING);
    assert_eq!(*link.closed.lock(), [Close::Graceful]);
    assert!(
        next(&f.conn_evd).is_none(),
        "DISCONNECTED comes when the link ends"
    );
    f.ep.ended(
        End::Orderly,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED,
        &[],
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(
        connection_event(&f.conn_evd).0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
}

#[test]
fn an_abrupt_disconnect_is_disconnected_at_once_and_its_end_is_not_broken() {
    let f = fixture(USUAL);
    let link = connected(&f);
    assert_eq!(f.ep.disconnect(false), Ok(()));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(*link.closed.lock(), [Close::Abrupt]);
    // However the link then ends, this side closed it: DISCONNECTED, not BROKEN.
    f.ep.ended(
        End::Broken,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED,
        &[],
    );
    assert_eq!(
        connection_event(&f.conn_evd).0,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED
    );
}

#[test]
fn a_broken_connection_flushes_the_posted_receives_then_reports_broken() {
    let f = fixture(USUAL);
    connected(&f);
    for cookie in [7, 8] {
        f.ep.inner.lock().recvs.push_back(PostedRecv {
            cookie,
            segments: Default::default(),
            wakes: Default::default(),
        });
    }
    f.ep.ended(
        End::Broken,
        dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED,
        &[],
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    for cookie in [7, 8] {
        let e = next(&f.recv_evd).expect("a flushed receive");
        // SAFETY: a DTO completion event's data is its dto_completion_event_data.
        let d = unsafe { e.event_data.dto_completion_event_data };
        assert_eq!(
            d.status,
            dat_dto_completion_status::DAT_DTO_ERR_FLUSHED as u32
        );
        assert_eq!(d.user_cookie.as_u64(), cookie);
    }
    assert!(next(&f.recv_evd).is_none());
    assert_eq!(
        connection_event(&f.conn_evd).0,
        dat_event_number::DAT_CONNECTION_EVENT_BROKEN
    );
}

#[test]
fn a_pending_connect_that_fails_reports_the_failure_not_a_disconnect() {
    let f = fixture(USUAL);
    f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b"").unwrap();
    f.ep.ended(
        End::Broken,
        dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED,
        b"no",
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_DISCONNECTED);
    assert_eq!(
        connection_event(&f.conn_evd),
        (
            dat_event_number::DAT_CONNECTION_EVENT_PEER_REJECTED,
            b"no".to_vec()
        )
    );
}

#[test]
fn reset_takes_only_a_disconnected_ep_back_and_forgets_its_peer() {
    let f = fixture(USUAL);
    assert_eq!(
        f.ep.reset(),
        invalid_state(Sub::DAT_INVALID_STATE_EP_UNCONNECTED)
    );
    connected(&f);
    assert_eq!(
        f.ep.reset(),
        invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED)
    );
    f.ep.disconnect(false).unwrap();
    assert_eq!(f.ep.reset(), Ok(()));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    let inner = f.ep.inner.lock();
    assert!(inner.remote_addr.is_none());
    assert_eq!(inner.remote_port, 0);
}

#[test]
fn a_reserved_ep_connects_to_nothing_until_given_back() {
    let f = fixture(USUAL);
    // A listener that fails leaves the EP as it was.
    assert_eq!(
        f.ep.reserve(|| -> DatResult { Err(DatError::bare(Type::DAT_CONN_QUAL_IN_USE)) }),
        Err(DatError::bare(Type::DAT_CONN_QUAL_IN_USE))
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    assert_eq!(f.ep.reserve(|| Ok(())), Ok(()));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_RESERVED);
    assert_eq!(
        f.ep.connect(Ipv4Addr::LOCALHOST, 5000, None, b""),
        invalid_state(Sub::DAT_INVALID_STATE_EP_RESERVED)
    );
    assert_eq!(
        f.ep.reserve(|| Ok(())),
        invalid_state(Sub::DAT_INVALID_STATE_EP_RESERVED)
    );
    f.ep.unreserve();
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
}

#[test]
fn a_reserved_ep_waits_passively_for_its_request_and_accepts_it_alone() {
    let f = fixture(USUAL);
    assert_eq!(f.ep.reserve(|| Ok(())), Ok(()));
    // Reserved, it accepts neither another request nor its own before it came.
    assert_eq!(
        f.ep.begin_accept(AcceptOn::Given, 0, || Ok(())),
        invalid_state(Sub::DAT_INVALID_STATE_EP_RESERVED)
    );
    assert_eq!(
        f.ep.begin_accept(AcceptOn::OfTheRequest, 0, || Ok(())),
        invalid_state(Sub::DAT_INVALID_STATE_EP_RESERVED)
    );
    assert!(f.ep.request_arrived());
    assert_eq!(
        f.ep.state(),
        dat_ep_state::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING
    );
    // Its request came: a second one is no longer for it, and freeing the RSP leaves it so.
    assert!(!f.ep.request_arrived());
    f.ep.unreserve();
    assert_eq!(
        f.ep.state(),
        dat_ep_state::DAT_EP_STATE_PASSIVE_CONNECTION_PENDING
    );
    assert_eq!(
        f.ep.begin_accept(AcceptOn::Given, 0, || Ok(())),
        invalid_state(Sub::DAT_INVALID_STATE_EP_PASSCONNPENDING)
    );
    // Rejected, it is UNCONNECTED again.
    f.ep.request_gone();
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    // Accepted, COMPLETION_PENDING.
    assert_eq!(f.ep.reserve(|| Ok(())), Ok(()));
    assert!(f.ep.request_arrived());
    assert_eq!(
        f.ep.begin_accept(AcceptOn::OfTheRequest, 0, || Ok(())),
        Ok(())
    );
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING);
}

#[test]
fn an_accept_takes_the_request_only_when_the_ep_may_accept_it() {
    let f = fixture(USUAL);
    connected(&f);
    let mut taken = false;
    assert_eq!(
        f.ep.begin_accept(AcceptOn::Given, 0, || -> DatResult {
            taken = true;
            Ok(())
        }),
        invalid_state(Sub::DAT_INVALID_STATE_EP_CONNECTED)
    );
    assert!(!taken, "a refused accept leaves the request with its CR");
    let f = fixture(Options {
        connect_evd: false,
        ..USUAL
    });
    // An EP without a connect EVD, or without a PZ, does not satisfy the request: refused at
    // once, with `DAT_INVALID_HANDLE_EP` as OpenFabrics refuses it, the request left alone.
    assert_eq!(
        f.ep.begin_accept(AcceptOn::Given, 0, || Ok(())),
        Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))
    );
    let f = fixture(Options { pz: false, ..USUAL });
    let mut taken = false;
    assert_eq!(
        f.ep.begin_accept(AcceptOn::Given, 0, || -> DatResult {
            taken = true;
            Ok(())
        }),
        Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))
    );
    assert!(!taken, "a refused accept leaves the request with its CR");
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_UNCONNECTED);
    let f = fixture(USUAL);
    // An UNCONNECTED EP is not the EP a request names (an RSP's, PASSIVE_CONNECTION_PENDING).
    assert_eq!(
        f.ep.begin_accept(AcceptOn::OfTheRequest, 0, || Ok(())),
        invalid_state(Sub::DAT_INVALID_STATE_EP_UNCONNECTED)
    );
    assert_eq!(f.ep.begin_accept(AcceptOn::Given, 0, || Ok(42)), Ok(42));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_COMPLETION_PENDING);
    let link = Arc::new(FakeLink::default());
    assert!(f.ep.accepting(link.clone(), PEER));
    assert!(f.ep.established(None, b""));
    assert_eq!(f.ep.state(), dat_ep_state::DAT_EP_STATE_CONNECTED);
    assert_eq!(f.ep.inner.lock().remote_port, u64::from(PEER.port()));
}

#[test]
fn an_evd_gives_its_events_in_order_and_refuses_them_beyond_its_length() {
    let f = fixture(USUAL);
    let event = |n: u64| {
        let mut e = DAT_EVENT::zeroed();
        e.event_number = dat_event_number::DAT_SOFTWARE_EVENT as DAT_EVENT_NUMBER;
        e.event_data.software_event_data.pointer = n as DAT_PVOID;
        e
    };
    for n in 1..=16 {
        assert_eq!(f.recv_evd.post(event(n)), Ok(()), "event {n}");
    }
    assert!(
        f.recv_evd.post(event(17)).is_err(),
        "a 17th event in an EVD of 16"
    );
    for n in 1..=16u64 {
        let e = next(&f.recv_evd).expect("an event");
        // SAFETY: a software event's data is its software_event_data.
        let pointer = unsafe { e.event_data.software_event_data.pointer };
        assert_eq!(pointer as u64, n);
    }
    assert!(next(&f.recv_evd).is_none());
}

/// A source whose progress completes the events it was given, as a transport's poll does,
/// handing them to the dequeue's catch.
struct Completing {
    evd: Arc<Evd>,
    /// The software events' numbers.
    pending: Mutex<Vec<u64>>,
}

impl Progress for Completing {
    fn progress(&self) {
        self.progress_catching(&mut Catch::none());
    }

    fn progress_catching(&self, catch: &mut Catch<'_>) {
        for n in self.pending.lock().drain(..) {
            let _ = self.evd.post_catching(software_event(n), true, catch);
        }
    }
}

fn software_event(n: u64) -> DAT_EVENT {
    let mut e = DAT_EVENT::zeroed();
    e.event_number = dat_event_number::DAT_SOFTWARE_EVENT as DAT_EVENT_NUMBER;
    e.event_data.software_event_data.pointer = n as DAT_PVOID;
    e
}

fn software_events(evd: &Evd) -> Vec<u64> {
    std::iter::from_fn(|| next(evd))
        // SAFETY: these are software events, whose data is their software_event_data.
        .map(|e| unsafe { e.event_data.software_event_data.pointer } as u64)
        .collect()
}

#[test]
fn a_dequeue_returns_the_first_event_its_progress_completes_and_the_rest_queue_in_order() {
    let f = fixture(USUAL);
    let source = Arc::new(Completing {
        evd: f.recv_evd.clone(),
        pending: Mutex::new(vec![1, 2, 3]),
    });
    f.recv_evd.attach(source.clone());
    let mut out = MaybeUninit::uninit();
    assert_eq!(f.recv_evd.dequeue(&mut out), Ok(()));
    // SAFETY: the dequeue succeeded: it wrote the event.
    let first = unsafe { out.assume_init() };
    assert_eq!(first.evd_handle, f.recv_evd.handle());
    // SAFETY: a software event's data is its software_event_data.
    let pointer = unsafe { first.event_data.software_event_data.pointer };
    assert_eq!(pointer as u64, 1);
    assert_eq!(software_events(&f.recv_evd), [2, 3]);
    // Queued events go first: one completed while another waits queues behind it.
    f.recv_evd.post(software_event(4)).unwrap();
    source.pending.lock().push(5);
    assert_eq!(software_events(&f.recv_evd), [4, 5]);
}

#[test]
fn a_wait_of_no_time_polls_its_sources_once() {
    // A program that polls through dat_evd_wait with a zero timeout: nothing else may ever
    // look (a verbs CQ reports to the engine only while somebody sleeps on its EVD).
    let f = fixture(USUAL);
    let source = Arc::new(Completing {
        evd: f.recv_evd.clone(),
        pending: Mutex::new(vec![7]),
    });
    f.recv_evd.attach(source.clone());
    let mut out = MaybeUninit::uninit();
    match f.recv_evd.wait_begin(Some(Duration::ZERO), 1, &mut out) {
        super::wakeup::WaitStep::Done((result, remaining)) => {
            assert_eq!(result, Ok(()), "the event its poll completed");
            assert_eq!(remaining, 0);
        }
        super::wakeup::WaitStep::Sleep(_) => panic!("a wait of no time slept"),
    }
    // SAFETY: the wait succeeded: it wrote the event.
    let e = unsafe { out.assume_init() };
    // SAFETY: a software event's data is its software_event_data.
    let pointer = unsafe { e.event_data.software_event_data.pointer };
    assert_eq!(pointer as u64, 7);
    // Nothing more: the wait of no time expires at once.
    match f.recv_evd.wait_begin(Some(Duration::ZERO), 1, &mut out) {
        super::wakeup::WaitStep::Done((result, _)) => {
            assert_eq!(result, Err(DatError::bare(Type::DAT_TIMEOUT_EXPIRED)))
        }
        super::wakeup::WaitStep::Sleep(_) => panic!("a wait of no time slept"),
    }
}

#[test]
fn a_wait_of_no_time_on_a_solicited_wait_evd_finds_what_its_poll_completed() {
    // Every stream of the EVD a Solicited Wait one: its waiter sleeps without polling, but a
    // wait of no time, which never sleeps, must look (in two calls at most: what the poll
    // completed without a notice, the next one finds queued).
    let f = fixture(USUAL);
    f.recv_evd.stream_joins(true);
    assert!(f.recv_evd.solicited_only());
    let source = Arc::new(Completing {
        evd: f.recv_evd.clone(),
        pending: Mutex::new(vec![9]),
    });
    f.recv_evd.attach(source.clone());
    let mut out = MaybeUninit::uninit();
    let mut found = false;
    for _ in 0..2 {
        match f.recv_evd.wait_begin(Some(Duration::ZERO), 1, &mut out) {
            super::wakeup::WaitStep::Done((Ok(()), _)) => {
                found = true;
                break;
            }
            super::wakeup::WaitStep::Done((result, _)) => {
                assert_eq!(result, Err(DatError::bare(Type::DAT_TIMEOUT_EXPIRED)))
            }
            super::wakeup::WaitStep::Sleep(_) => panic!("a wait of no time slept"),
        }
    }
    assert!(found, "two waits of no time never looked");
    // SAFETY: the wait succeeded: it wrote the event.
    let e = unsafe { out.assume_init() };
    // SAFETY: a software event's data is its software_event_data.
    let pointer = unsafe { e.event_data.software_event_data.pointer };
    assert_eq!(pointer as u64, 9);
}

#[test]
fn an_event_caught_and_not_taken_is_queued_as_the_catch_ends() {
    let f = fixture(USUAL);
    let mut out = MaybeUninit::uninit();
    let mut catch = Catch::new(&f.recv_evd, &mut out);
    f.recv_evd
        .post_catching(software_event(7), true, &mut catch)
        .unwrap();
    // A second one queues: the out-parameter holds the first.
    f.recv_evd
        .post_catching(software_event(8), true, &mut catch)
        .unwrap();
    drop(catch); // as a panic on the way out of the dequeue would
    assert_eq!(software_events(&f.recv_evd), [7, 8]);
}
