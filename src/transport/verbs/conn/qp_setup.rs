//! The connection's QP: made with the EP (`Prepared`), in its PZ, on its EVDs' CQs, and moved
//! to the id that connects (after the route, or at the accept); made then instead if the EP
//! changed its zone, EVDs or sizes since, or had none. Receives posted before go to it then.

use std::io;
use std::net::SocketAddrV4;
use std::sync::{Arc, Weak};

use super::posting::SgList;
use super::{Conn, VerbsWire};
use crate::objects::ep::{Ep, EpInner};
use crate::objects::evd::Evd;
use crate::objects::seam::SharedQueue;
use crate::runtime::sys::debug;
use crate::transport::verbs::cm::{CmHandler, CmId};
use crate::transport::verbs::completions::{CqSource, RECV_ID};
use crate::transport::verbs::cq::Cq;
use crate::transport::verbs::device::Pd;
use crate::transport::verbs::qp::{Qp, QpCaps, MAX_SGE};
use crate::transport::verbs::srq::VerbsSrq;
use crate::transport::verbs::transport::Verbs;

/// What a small send or write carries inline (lowered to what the device grants).
const INLINE: u32 = 64;

/// What a QP is made of: the EP's protection domain, its EVDs' CQs, and its sizes.
struct QpShape {
    pd: Arc<Pd>,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    /// The EP's SRQ, whose receives the QP takes instead of its own.
    srq: Option<Arc<dyn SharedQueue>>,
    caps: QpCaps,
}

impl PartialEq for QpShape {
    fn eq(&self, other: &QpShape) -> bool {
        Arc::ptr_eq(&self.pd, &other.pd)
            && Arc::ptr_eq(&self.send_cq, &other.send_cq)
            && Arc::ptr_eq(&self.recv_cq, &other.recv_cq)
            && match (&self.srq, &other.srq) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
            && self.caps == other.caps
    }
}

impl QpShape {
    fn of(inner: &EpInner, verbs: &Verbs) -> io::Result<QpShape> {
        let pd = inner
            .pz
            .as_ref()
            .and_then(|p| p.domain.as_ref().and_then(Pd::of))
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        let send_cq = cq_of(inner.request_evd.as_deref(), verbs)?;
        let recv_cq = cq_of(inner.recv_evd.as_deref(), verbs)?;
        let a = &inner.attr;
        let caps = QpCaps {
            send_wr: a.max_request_dtos.max(1) as u32,
            recv_wr: a.max_recv_dtos.max(1) as u32,
            send_sge: (a
                .max_request_iov
                .max(a.max_rdma_write_iov)
                .max(a.max_rdma_read_iov)
                .max(1) as u32)
                .min(MAX_SGE as u32),
            recv_sge: (a.max_recv_iov.max(1) as u32).min(MAX_SGE as u32),
            inline: INLINE,
            datagram: Ep::is_datagram(inner),
        };
        let srq = inner.srq.as_ref().and_then(|s| s.arc().queue.clone());
        if srq.as_deref().is_some_and(|q| VerbsSrq::of(q).is_none()) {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(QpShape {
            pd,
            send_cq,
            recv_cq,
            srq,
            caps,
        })
    }

    /// A QP of this shape on `id`.
    fn create(&self, id: &CmId) -> io::Result<Qp> {
        Qp::create(
            id,
            &self.pd,
            &self.send_cq,
            &self.recv_cq,
            self.srq.as_ref(),
            self.caps,
        )
        .or_else(|_| {
            let caps = QpCaps {
                inline: 0,
                ..self.caps
            }; // a device without inline sends
            Qp::create(
                id,
                &self.pd,
                &self.send_cq,
                &self.recv_cq,
                self.srq.as_ref(),
                caps,
            )
        })
    }
}

/// The QP an EP is made with, on an id of its own bound to the IA's address (so the QP has
/// its device); the EP's first connection moves it to the id that connects.
pub struct Prepared {
    /// First: dropping it destroys the QP if no connection took it.
    id: CmId,
    qp: Qp,
    shape: QpShape,
}

impl Prepared {
    /// Makes the EP's QP. Where it cannot (the EP has no PZ yet, or the device refuses), the
    /// connection makes one; `LIBDAT_DEBUG` says why.
    pub fn make(verbs: &Arc<Verbs>, ep: &Arc<Ep>) {
        let mut inner = ep.inner.lock();
        let made = (|| {
            let shape = QpShape::of(&inner, verbs)?;
            let quiet: Weak<dyn CmHandler> = Weak::<Conn>::new();
            let id = CmId::new(quiet)?;
            id.bind(SocketAddrV4::new(verbs.device.ip, 0))?;
            let qp = shape.create(&id)?;
            io::Result::Ok(Prepared { id, qp, shape })
        })();
        match made {
            Ok(p) => inner.wire.verbs().prepared = Some(p),
            Err(e) if debug() => eprintln!(
                "libdat: EP {:p}: no QP before its connection: {e}",
                ep.handle()
            ),
            Err(_) => {}
        }
    }
}

/// The CQ behind an EVD of this transport.
fn cq_of(evd: Option<&Evd>, verbs: &Verbs) -> io::Result<Arc<Cq>> {
    match evd.and_then(CqSource::of) {
        Some(source) => Ok(source.cq.clone()),
        None => verbs.spare_cq(),
    }
}

impl Conn {
    /// Gives the connection the QP the EP was made with, if the EP's zone, EVDs and
    /// attributes are still those it was made for, or makes one; then posts the receives
    /// waiting.
    pub(super) fn make_qp(self: &Arc<Self>, ep: &Ep) -> io::Result<()> {
        let mut inner = ep.inner.lock();
        let shape = QpShape::of(&inner, &self.verbs)?;
        let qp = match inner
            .wire
            .verbs()
            .prepared
            .take()
            .filter(|p| p.shape == shape)
        {
            Some(p) => {
                p.qp.move_to(&p.id, &self.id);
                p.qp
            }
            None => shape.create(&self.id)?,
        };
        for r in &inner.recvs {
            qp.post_recv(
                RECV_ID,
                SgList::new()
                    .fill(&r.segments)
                    .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?,
            )?;
        }
        self.verbs.add_qp(qp.number(), self);
        let _ = self.qp.set(qp);
        drop(inner);
        Ok(())
    }

    /// The read depths of a connect: the EP's, as far as the device goes.
    pub(super) fn read_depths(&self, ep: &Ep) -> (u8, u8) {
        let a = ep.inner.lock().attr;
        let dev = &self.verbs.device.attr;
        let inbound = (a.max_rdma_read_in.max(0) as i64)
            .min(i64::from(dev.max_qp_rd_atom))
            .min(255) as u8;
        let outbound = (a.max_rdma_read_out.max(0) as i64)
            .min(i64::from(dev.max_qp_init_rd_atom))
            .min(255) as u8;
        (inbound, outbound)
    }
}
