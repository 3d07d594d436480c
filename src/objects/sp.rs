//! Service points and connection requests. A PSP or RSP listens on the port its conn_qual
//! maps to (`conn_qual::port`), a CSP on the port of its address (its qualifier, as every
//! qualifier up to 0xffff is its own port); each request that arrives becomes a CR and a
//! connection request event on the service point's EVD. An RSP takes one request, for the EP
//! it reserved (which becomes PASSIVE_CONNECTION_PENDING), and refuses later ones.

use std::sync::Arc;

use parking_lot::Mutex;

use super::ep::Ep;
use super::evd::Evd;
use super::ia::Ia;
use super::Held;
use crate::abi::*;
use crate::handle::{Kind, Object, SelfHandle};
use crate::objects::seam::{ConnRequest, Listening};
use crate::runtime::sys::sockaddr_in;

/// Which kind of service point.
pub enum SpKind {
    Public {
        flags: DAT_PSP_FLAGS,
    },
    Reserved {
        ep: Arc<Ep>,
    },
    /// A common service point: the communicator and address it was made with, kept for
    /// `dat_csp_query` to point at.
    Common {
        comm: Box<DAT_COMM>,
        address: Box<libc::sockaddr_in>,
    },
}

pub struct ServicePoint {
    pub ia: Arc<Ia>,
    /// The EVD its connection requests are reported on.
    pub evd: Arc<Evd>,
    /// Its use of that EVD, from its creation until its handle is freed. Its CRs may outlive
    /// it (each keeps it), but once freed it feeds the EVD no more (dat_evd_free: in use while
    /// event streams feed it), and an unanswered CR must not keep the EVD from being freed.
    feeding: Mutex<Option<Held<Evd>>>,
    conn_qual: std::sync::atomic::AtomicU64,
    pub kind: SpKind,
    handle: SelfHandle,
    listener: Mutex<Option<Box<dyn Listening>>>,
    /// An RSP's one request has come: it "generates, at most, one Connection Request"
    /// (dat_rsp_create), so later ones are refused as they arrive.
    spent: std::sync::atomic::AtomicBool,
}

/// A PSP handle names a public service point.
pub struct Psp(pub Arc<ServicePoint>);
/// An RSP handle names a reserved one.
pub struct Rsp(pub Arc<ServicePoint>);
/// A CSP handle names a common one.
pub struct Csp(pub Arc<ServicePoint>);

/// Each kind of service point handle is the service point's, which stops listening as the
/// handle dies.
macro_rules! service_point_handle {
    ($($handle:ident),+) => {$(
        impl Object for $handle {
            const KIND: Kind = Kind::$handle;
            fn self_handle(&self) -> Option<&SelfHandle> {
                Some(&self.0.handle)
            }
            fn on_release(&self) {
                self.0.close();
            }
        }
    )+};
}

service_point_handle!(Psp, Rsp, Csp);

impl ServicePoint {
    pub fn new(ia: Arc<Ia>, evd: Arc<Evd>, kind: SpKind) -> Arc<ServicePoint> {
        Arc::new(ServicePoint {
            ia,
            feeding: Mutex::new(Some(Held::new(evd.clone()))),
            evd,
            conn_qual: std::sync::atomic::AtomicU64::new(0),
            kind,
            handle: SelfHandle::default(),
            listener: Mutex::new(None),
            spent: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn handle(&self) -> DAT_HANDLE {
        self.handle.get()
    }

    pub fn conn_qual(&self) -> u64 {
        self.conn_qual.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Binds the listener for `conn_qual` (0: any free port, which becomes the qualifier) and
    /// returns the qualifier. The service point learns of requests through a weak reference,
    /// so a freed one stops at once.
    pub fn listen(self: &Arc<Self>, conn_qual: u64) -> std::io::Result<u64> {
        self.conn_qual
            .store(conn_qual, std::sync::atomic::Ordering::Release);
        let weak = Arc::downgrade(self);
        let port = super::conn_qual::port(conn_qual);
        let on_request = Box::new(move |request: Box<dyn ConnRequest>| {
            if let Some(sp) = weak.upgrade() {
                sp.arrive(request);
            } else {
                request.reject(&[]);
            }
        });
        let listener = self
            .ia
            .transport
            .listen(self.ia.ipv4(), port, conn_qual, on_request)?;
        let conn_qual = if conn_qual == 0 {
            u64::from(listener.port())
        } else {
            conn_qual
        };
        self.conn_qual
            .store(conn_qual, std::sync::atomic::Ordering::Release);
        *self.listener.lock() = Some(listener);
        Ok(conn_qual)
    }

    /// A request arrived (or was handed off to this service point): a CR and a connection
    /// request event.
    ///
    /// An RSP takes one request: its EP becomes PASSIVE_CONNECTION_PENDING, and any later
    /// request is refused at once, as a service point that no longer listens would (its
    /// listener stays open until the RSP is freed: closing it from the transport's thread that
    /// reports the request could wait for that very thread).
    pub fn arrive(self: Arc<Self>, request: Box<dyn ConnRequest>) {
        // A handshake that ends after the free (a CR of this service point still holds it):
        // refused as if nobody listened (dat_psp_free).
        if self.feeding.lock().is_none() {
            request.reject(&[]);
            return;
        }
        if let SpKind::Reserved { ep } = &self.kind {
            if self.spent.swap(true, std::sync::atomic::Ordering::AcqRel) || !ep.request_arrived() {
                request.reject(&[]);
                return;
            }
        }
        let number = if request.datagram() {
            dat_ib_event_number::DAT_IB_UD_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
        } else {
            dat_event_number::DAT_CONNECTION_REQUEST_EVENT as DAT_EVENT_NUMBER
        };
        let cr = Arc::new(Cr::new(self.clone(), request));
        let Ok(cr_handle) = self.ia.adopt(cr) else {
            return;
        };
        let mut e = DAT_EVENT::zeroed();
        e.event_number = number;
        let mut data = DAT_CR_ARRIVAL_EVENT_DATA {
            sp_handle: DAT_SP_HANDLE {
                psp_handle: self.handle(),
            },
            local_ia_address_ptr: self.ia.address_ptr(),
            conn_qual: self.conn_qual(),
            cr_handle,
            truncate_flag: dat_boolean::DAT_FALSE as DAT_BOOLEAN,
        };
        match self.kind {
            SpKind::Reserved { .. } => {
                data.sp_handle = DAT_SP_HANDLE {
                    rsp_handle: self.handle(),
                }
            }
            SpKind::Common { .. } => {
                data.sp_handle = DAT_SP_HANDLE {
                    csp_handle: self.handle(),
                }
            }
            SpKind::Public { .. } => {}
        }
        e.event_data.cr_arrival_event_data = data;
        // From the event on, the consumer may accept the CR, free the service point and then
        // its EVD: what this thread and the CR hold of the service point keeps no use of the
        // EVD (`feeding` ends with the handle), however long the scheduler holds us up here.
        if self.evd.post(e).is_err() {
            // Nobody can see this request: refuse it rather than leave the peer waiting.
            if let Some(cr) = self.ia.release::<Cr>(cr_handle) {
                cr.reject(&[]);
                cr.request_gone();
            }
        }
    }

    pub fn is_listening(&self) -> bool {
        self.listener.lock().is_some()
    }

    /// Stops listening and feeding its EVD; requests not yet accepted stay valid CRs.
    pub fn close(&self) {
        self.listener.lock().take();
        self.feeding.lock().take();
    }
}

/// A connection request waiting for `dat_cr_accept` or `dat_cr_reject`.
pub struct Cr {
    pub ia: Arc<Ia>,
    pub sp: Arc<ServicePoint>,
    pub private_data: Vec<u8>,
    /// The requester's address, kept so `dat_cr_query` can hand out a pointer to it.
    pub remote: Box<libc::sockaddr_in>,
    pub remote_port: u16,
    /// A UD EP's request, for a UD EP.
    pub datagram: bool,
    /// The private data its accept may carry.
    pub accept_data_limit: usize,
    request: Mutex<Option<Box<dyn ConnRequest>>>,
}

impl Object for Cr {
    const KIND: Kind = Kind::Cr;
    fn on_release(&self) {
        // A request nobody accepted is refused, so its peer does not wait for a timeout.
        self.reject(&[]);
    }
}

impl Cr {
    fn new(sp: Arc<ServicePoint>, request: Box<dyn ConnRequest>) -> Cr {
        let remote = request.remote();
        Cr {
            ia: sp.ia.clone(),
            private_data: request.private_data().to_vec(),
            remote: Box::new(sockaddr_in(remote)),
            remote_port: remote.port(),
            datagram: request.datagram(),
            accept_data_limit: request.accept_data_limit(),
            sp,
            request: Mutex::new(Some(request)),
        }
    }

    /// Refuses the request with our private data; the requester sees a peer reject.
    pub fn reject(&self, private_data: &[u8]) {
        if let Some(r) = self.request.lock().take() {
            r.reject(private_data);
        }
    }

    /// The request went (rejected, handed off, or never delivered): an RSP's EP is
    /// UNCONNECTED again.
    pub fn request_gone(&self) {
        if let SpKind::Reserved { ep } = &self.sp.kind {
            ep.request_gone();
        }
    }

    /// The EP this request is for, an RSP's; None when the consumer names one.
    pub fn named_ep(&self) -> Option<&Arc<Ep>> {
        match &self.sp.kind {
            SpKind::Reserved { ep } => Some(ep),
            _ => None,
        }
    }

    /// The request, for the accept that consumes it.
    pub fn take_request(&self) -> Option<Box<dyn ConnRequest>> {
        self.request.lock().take()
    }
}
