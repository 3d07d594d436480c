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
    std::env::var("RXE_VM_IP").expect("RXE_VM_IP: run by make test-rdma in the rxe guest").parse().unwrap()
}

fn next(rx: &Receiver<CmEvent>, expected: EventType::Type) -> CmEvent {
    let e = rx.recv_timeout(WAIT).unwrap_or_else(|_| panic!("no {} within {WAIT:?}", event_name(expected)));
    assert_eq!(e.kind, expected, "got {} (status {}), expected {}", event_name(e.kind), e.status, event_name(expected));
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

/// Starts an active connect to `port` and returns its id and events, up to the connect.
fn connect(port: u16, private_data: &[u8]) -> (CmId, Arc<Recorder>, Receiver<CmEvent>) {
    let (r, rx) = recorder();
    let id = CmId::new(weak(&r)).unwrap();
    id.resolve_addr(Some(device_ip()), SocketAddrV4::new(device_ip(), port), 2000).unwrap();
    next(&rx, EventType::RDMA_CM_EVENT_ADDR_RESOLVED);
    id.resolve_route(2000).unwrap();
    next(&rx, EventType::RDMA_CM_EVENT_ROUTE_RESOLVED);
    make_qp(&id);
    let param = ConnParam { private_data: private_data.to_vec(), retry_count: 7, rnr_retry_count: 7, ..Default::default() };
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
    assert!(request.private_data.starts_with(b"hello from the active side"), "{:?}", request.private_data);
    let passive = request.request.take().expect("a request carries its id");
    let (pr, prx) = recorder();
    passive.set_handler(weak(&pr)).unwrap();
    assert_eq!(passive.remote().map(|a| *a.ip()), Some(device_ip()));
    make_qp(&passive);
    passive.accept(&ConnParam { private_data: b"welcome".to_vec(), ..Default::default() }).unwrap();
    let established = next(&arx, EventType::RDMA_CM_EVENT_ESTABLISHED);
    assert!(established.private_data.starts_with(b"welcome"), "{:?}", established.private_data);
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
    assert!(rejected.private_data.starts_with(b"no, thanks"), "{:?}", rejected.private_data);
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
    assert_eq!(e.kind, EventType::RDMA_CM_EVENT_REJECTED, "{}", event_name(e.kind));
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
    assert_eq!(e.kind, EventType::RDMA_CM_EVENT_REJECTED, "{}", event_name(e.kind));
}
