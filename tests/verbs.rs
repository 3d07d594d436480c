//! rdma-cm through the verbs transport's `cm` module, over a real RDMA device: connect, accept
//! and reject with private data, a request to nobody or left unanswered, disconnect on both
//! sides.
//! Needs an RDMA device with an IPv4 address: `make test-rdma` runs these in the soft-RoCE
//! guest (`RXE_VM_IP`), where they are not ignored.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dat::transport::verbs::cm::{event_name, CmEvent, CmHandler, CmId, ConnParam, EventType};
use rdma_mummy_sys as ibv;

const WAIT: Duration = Duration::from_secs(20);

/// Passes every event on to the test.
struct Recorder(Mutex<Sender<CmEvent>>);

impl CmHandler for Recorder {
    fn on_cm_event(&self, event: CmEvent) {
        let _ = self.0.lock().unwrap().send(event);
    }
}

fn recorder() -> (Arc<Recorder>, Receiver<CmEvent>) {
    let (tx, rx) = channel();
    (Arc::new(Recorder(Mutex::new(tx))), rx)
}

fn weak(r: &Arc<Recorder>) -> std::sync::Weak<dyn CmHandler> {
    let h: Arc<dyn CmHandler> = r.clone();
    Arc::downgrade(&h)
}

fn device_ip() -> Ipv4Addr {
    std::env::var("RXE_VM_IP")
        .expect("RXE_VM_IP: run by make test-rdma in the rxe guest")
        .parse()
        .unwrap()
}

fn next(rx: &Receiver<CmEvent>, expected: EventType::Type) -> CmEvent {
    let e = rx
        .recv_timeout(WAIT)
        .unwrap_or_else(|_| panic!("no {} within {WAIT:?}", event_name(expected)));
    assert_eq!(
        e.kind,
        expected,
        "got {} (status {}), expected {}",
        event_name(e.kind),
        e.status,
        event_name(expected)
    );
    e
}

/// A QP on the id with rdma-cm's default protection domain and its own CQs: enough for the
/// connection to be made.
fn make_qp(id: &CmId) {
    // SAFETY: plain data; zero is valid.
    let mut attr: ibv::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
    attr.qp_type = ibv::ibv_qp_type::IBV_QPT_RC;
    attr.cap.max_send_wr = 4;
    attr.cap.max_recv_wr = 4;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    // SAFETY: the id is live and bound to a device; NULL PD and CQs: rdma-cm makes them.
    let rc = unsafe { ibv::rdma_create_qp(id.raw(), std::ptr::null_mut(), &mut attr) };
    assert_eq!(rc, 0, "rdma_create_qp: {}", std::io::Error::last_os_error());
}

/// An id whose address and route to `port` are resolved, and its events.
fn resolved(port: u16) -> (CmId, Arc<Recorder>, Receiver<CmEvent>) {
    let (r, rx) = recorder();
    let id = CmId::new(weak(&r)).unwrap();
    id.resolve_addr(
        Some(device_ip()),
        SocketAddrV4::new(device_ip(), port),
        2000,
    )
    .unwrap();
    next(&rx, EventType::RDMA_CM_EVENT_ADDR_RESOLVED);
    id.resolve_route(2000).unwrap();
    next(&rx, EventType::RDMA_CM_EVENT_ROUTE_RESOLVED);
    (id, r, rx)
}

/// Starts an active connect to `port` and returns its id and events, up to the connect.
fn connect(port: u16, private_data: &[u8]) -> (CmId, Arc<Recorder>, Receiver<CmEvent>) {
    let (id, r, rx) = resolved(port);
    make_qp(&id);
    let param = ConnParam {
        private_data: private_data.to_vec(),
        retry_count: 7,
        rnr_retry_count: 7,
        ..Default::default()
    };
    id.connect(&param).unwrap();
    (id, r, rx)
}

fn listen() -> (CmId, u16, Arc<Recorder>, Receiver<CmEvent>) {
    let (r, rx) = recorder();
    let id = CmId::new(weak(&r)).unwrap();
    let port = id.listen(device_ip(), 0, 16).unwrap();
    assert_ne!(port, 0);
    (id, port, r, rx)
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn connect_accept_carry_private_data_and_disconnect_reaches_both_sides() {
    let (_listener, port, _lr, lrx) = listen();
    let (active, _ar, arx) = connect(port, b"hello from the active side");
    let mut request = next(&lrx, EventType::RDMA_CM_EVENT_CONNECT_REQUEST);
    assert!(
        request
            .private_data
            .starts_with(b"hello from the active side"),
        "{:?}",
        request.private_data
    );
    let passive = request.request.take().expect("a request carries its id");
    let (pr, prx) = recorder();
    passive.set_handler(weak(&pr)).unwrap();
    assert_eq!(passive.remote().map(|a| *a.ip()), Some(device_ip()));
    make_qp(&passive);
    passive
        .accept(&ConnParam {
            private_data: b"welcome".to_vec(),
            ..Default::default()
        })
        .unwrap();
    let established = next(&arx, EventType::RDMA_CM_EVENT_ESTABLISHED);
    assert!(
        established.private_data.starts_with(b"welcome"),
        "{:?}",
        established.private_data
    );
    next(&prx, EventType::RDMA_CM_EVENT_ESTABLISHED);
    active.disconnect().unwrap();
    // The side that hears of the end answers it (its own disconnect sends the reply the
    // first side waits for): as the transport does on DISCONNECTED.
    next(&prx, EventType::RDMA_CM_EVENT_DISCONNECTED);
    passive.disconnect().unwrap();
    next(&arx, EventType::RDMA_CM_EVENT_DISCONNECTED);
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_reject_carries_the_consumers_private_data() {
    let (_listener, port, _lr, lrx) = listen();
    let (_active, _ar, arx) = connect(port, b"may I?");
    let mut request = next(&lrx, EventType::RDMA_CM_EVENT_CONNECT_REQUEST);
    let passive = request.request.take().unwrap();
    passive.reject(b"no, thanks").unwrap();
    let rejected = next(&arx, EventType::RDMA_CM_EVENT_REJECTED);
    assert!(
        rejected.private_data.starts_with(b"no, thanks"),
        "{:?}",
        rejected.private_data
    );
    eprintln!("consumer reject: status {}", rejected.status);
    assert_eq!(rejected.status, 28, "IB_CM_REJ_CONSUMER_DEFINED");
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_request_to_a_port_nobody_listens_on_is_rejected_without_private_data() {
    let (listener, port, _lr, _lrx) = listen();
    drop(listener);
    let (_active, _ar, arx) = connect(port, b"anyone?");
    let e = arx.recv_timeout(WAIT).expect("an answer");
    eprintln!("no listener: {} status {}", event_name(e.kind), e.status);
    assert_eq!(
        e.kind,
        EventType::RDMA_CM_EVENT_REJECTED,
        "{}",
        event_name(e.kind)
    );
    assert_ne!(e.status, 28, "not a consumer's reject");
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_request_dropped_unanswered_is_refused() {
    let (_listener, port, _lr, lrx) = listen();
    let (_active, _ar, arx) = connect(port, b"hello?");
    let mut request = next(&lrx, EventType::RDMA_CM_EVENT_CONNECT_REQUEST);
    drop(request.request.take());
    let e = arx.recv_timeout(WAIT).expect("an answer");
    assert_eq!(
        e.kind,
        EventType::RDMA_CM_EVENT_REJECTED,
        "{}",
        event_name(e.kind)
    );
}

// The data path: a device opened by its address, regions, CQs and QPs of our own.

use dat::transport::verbs::cq::{Cq, WorkCompletion};
use dat::transport::verbs::device::{access, Device, Mr, Pd};
use dat::transport::verbs::qp::{Qp, QpCaps, SendFlags, SendOp, Sge};

const CAPS: QpCaps = QpCaps {
    send_wr: 16,
    recv_wr: 16,
    send_sge: 4,
    recv_sge: 4,
    inline: 64,
    datagram: false,
};

/// One side: its region (a buffer) and queues.
struct Side {
    buf: Vec<u8>,
    mr: Mr,
    scq: Arc<Cq>,
    rcq: Arc<Cq>,
    pd: Arc<Pd>,
}

fn side(device: &Arc<Device>, len: usize) -> Side {
    let pd = Pd::new(device).unwrap();
    let mut buf = vec![0u8; len];
    let all = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ;
    let mr = Mr::register(&pd, buf.as_mut_ptr() as u64, len as u64, all).unwrap();
    Side {
        buf,
        mr,
        scq: Arc::new(Cq::new(device, 64).unwrap()),
        rcq: Arc::new(Cq::new(device, 64).unwrap()),
        pd,
    }
}

fn sge(s: &Side, offset: usize, length: usize) -> Sge {
    Sge {
        addr: s.buf.as_ptr() as u64 + offset as u64,
        length: length as u32,
        lkey: s.mr.lkey(),
    }
}

/// The next completion on `cq`, polled until it comes (bounded).
fn completion(cq: &Cq) -> WorkCompletion {
    let deadline = std::time::Instant::now() + WAIT;
    let mut wc = [std::mem::MaybeUninit::<WorkCompletion>::uninit()];
    loop {
        if let [done] = cq.poll(&mut wc) {
            return *done;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no completion within {WAIT:?}"
        );
        std::thread::yield_now();
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Two connected QPs, in one process, on the guest's device.
struct Pair {
    a: Side,
    p: Side,
    // Field order: the ids (which destroy their QPs) go before the QPs' CQs.
    _a_id: CmId,
    _p_id: CmId,
    a_qp: Qp,
    p_qp: Qp,
    _keep: Vec<Arc<Recorder>>,
    _listener: CmId,
}

fn pair(recvs: usize) -> Pair {
    let device = Device::open(device_ip()).unwrap();
    assert!(!device.name().is_empty());
    let a = side(&device, 1 << 17);
    let p = side(&device, 1 << 17);
    let (listener, port, lr, lrx) = listen();
    let (a_id, ar, arx) = resolved(port);
    let a_qp = Qp::create(&a_id, &a.pd, &a.scq, &a.rcq, None, CAPS).unwrap();
    a_id.connect(&ConnParam {
        responder_resources: 4,
        initiator_depth: 4,
        retry_count: 7,
        rnr_retry_count: 7,
        ..Default::default()
    })
    .unwrap();
    let mut request = next(&lrx, EventType::RDMA_CM_EVENT_CONNECT_REQUEST);
    let p_id = request.request.take().unwrap();
    let (pr, prx) = recorder();
    p_id.set_handler(weak(&pr)).unwrap();
    let p_qp = Qp::create(&p_id, &p.pd, &p.scq, &p.rcq, None, CAPS).unwrap();
    for i in 0..recvs {
        p_qp.post_recv(i as u64, &[sge(&p, i * 8192, 8192)])
            .unwrap();
    }
    p_id.accept(&ConnParam {
        responder_resources: 4,
        initiator_depth: 4,
        ..Default::default()
    })
    .unwrap();
    next(&arx, EventType::RDMA_CM_EVENT_ESTABLISHED);
    next(&prx, EventType::RDMA_CM_EVENT_ESTABLISHED);
    Pair {
        a,
        p,
        _a_id: a_id,
        _p_id: p_id,
        a_qp,
        p_qp,
        _keep: vec![lr, ar, pr],
        _listener: listener,
    }
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn sends_writes_and_reads_move_every_byte() {
    let mut pr = pair(2);
    let signalled = SendFlags {
        signalled: true,
        ..Default::default()
    };
    // A send of an odd length in three pieces lands in the receive posted first.
    let message = pattern(4099, 7);
    pr.a.buf[..4099].copy_from_slice(&message);
    let pieces = [
        sge(&pr.a, 0, 1000),
        sge(&pr.a, 1000, 3000),
        sge(&pr.a, 4000, 99),
    ];
    pr.a_qp
        .post_send(11, SendOp::Send, &pieces, signalled)
        .unwrap();
    let sent = completion(&pr.a.scq);
    assert_eq!(
        (sent.status, sent.wr_id),
        (ibv::ibv_wc_status::IBV_WC_SUCCESS, 11)
    );
    let got = completion(&pr.p.rcq);
    assert_eq!(
        (got.status, got.wr_id, got.byte_len),
        (ibv::ibv_wc_status::IBV_WC_SUCCESS, 0, 4099)
    );
    assert_eq!(&pr.p.buf[..4099], &message[..]);
    // A small one goes inline.
    assert!(pr.a_qp.max_inline >= 8, "inline {}", pr.a_qp.max_inline);
    pr.a.buf[..8].copy_from_slice(b"8 bytes!");
    pr.a_qp
        .post_send(12, SendOp::Send, &[sge(&pr.a, 0, 8)], signalled)
        .unwrap();
    assert_eq!(
        completion(&pr.a.scq).status,
        ibv::ibv_wc_status::IBV_WC_SUCCESS
    );
    let got = completion(&pr.p.rcq);
    assert_eq!((got.wr_id, got.byte_len), (1, 8));
    assert_eq!(&pr.p.buf[8192..8200], b"8 bytes!");
    // An RDMA write of 64 KiB + 5 lands in the peer's region; a read brings part back.
    let data = pattern(65541, 3);
    pr.a.buf[..65541].copy_from_slice(&data);
    let remote = pr.p.buf.as_ptr() as u64 + 100;
    let write = SendOp::Write {
        remote_address: remote,
        rkey: pr.p.mr.rkey(),
    };
    pr.a_qp
        .post_send(13, write, &[sge(&pr.a, 0, 65541)], signalled)
        .unwrap();
    let w = completion(&pr.a.scq);
    assert_eq!(
        (w.status, w.wr_id),
        (ibv::ibv_wc_status::IBV_WC_SUCCESS, 13)
    );
    assert_eq!(&pr.p.buf[100..100 + 65541], &data[..]);
    let read = SendOp::Read {
        remote_address: remote + 5000,
        rkey: pr.p.mr.rkey(),
    };
    pr.a_qp
        .post_send(14, read, &[sge(&pr.a, 70000, 1001)], signalled)
        .unwrap();
    let r = completion(&pr.a.scq);
    assert_eq!(
        (r.status, r.wr_id, r.byte_len),
        (ibv::ibv_wc_status::IBV_WC_SUCCESS, 14, 1001)
    );
    assert_eq!(&pr.a.buf[70000..71001], &data[5000..6001]);
    // An unsignalled write completes nothing; the signalled one behind it does.
    pr.a_qp
        .post_send(15, write, &[sge(&pr.a, 0, 16)], SendFlags::default())
        .unwrap();
    pr.a_qp
        .post_send(16, write, &[sge(&pr.a, 0, 16)], signalled)
        .unwrap();
    assert_eq!(completion(&pr.a.scq).wr_id, 16);
    let _ = &pr.p_qp;
}

#[test]
#[ignore = "needs an RDMA device: make test-rdma runs it in the soft-RoCE guest"]
fn a_write_with_a_wrong_key_fails_remotely_and_flushes_what_follows() {
    let pr = pair(1);
    let signalled = SendFlags {
        signalled: true,
        ..Default::default()
    };
    let bad = SendOp::Write {
        remote_address: pr.p.buf.as_ptr() as u64,
        rkey: pr.p.mr.rkey() ^ 0x5a5a00,
    };
    pr.a_qp
        .post_send(21, bad, &[sge(&pr.a, 0, 64)], signalled)
        .unwrap();
    let e = completion(&pr.a.scq);
    assert_eq!(
        (e.status, e.wr_id),
        (ibv::ibv_wc_status::IBV_WC_REM_ACCESS_ERR, 21)
    );
    // The QP is in error: what is posted now is flushed, and so is the peer's receive.
    let _ = pr
        .a_qp
        .post_send(22, SendOp::Send, &[sge(&pr.a, 0, 8)], signalled);
    let f = completion(&pr.a.scq);
    assert_eq!(
        (f.status, f.wr_id),
        (ibv::ibv_wc_status::IBV_WC_WR_FLUSH_ERR, 22)
    );
    let r = completion(&pr.p.rcq);
    assert_eq!(r.status, ibv::ibv_wc_status::IBV_WC_WR_FLUSH_ERR);
}
