//! The connection's end: completions already in the EP's CQs are reported first, requests
//! posted unsignalled are settled (finished, or flushed), then the EP hears how it ended.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::Conn;
use crate::abi::*;
use crate::objects::ep::{Close, End, Ep, EpInner};
use crate::runtime::sys::debug;
use crate::transport::verbs::completions::CqSource;
use crate::transport::verbs::qp::{SendFlags, SendOp};

/// How long the end of a connection waits for the device to say what became of requests
/// posted unsignalled.
const SETTLE: Duration = Duration::from_millis(200);

impl Conn {
    /// Disconnects (`Link::close`): gracefully once the send queue has drained (see
    /// `begin_drain`), else at once; a released EP's connection reports what its CQs hold
    /// now.
    pub(super) fn begin_close(&self, how: Close) {
        if debug() {
            eprintln!("libdat: closing a connection ({how:?})");
        }
        if how == Close::Graceful {
            return self.begin_drain();
        }
        self.stop_draining();
        let _ = self.id.disconnect();
        // An accept the peer has not confirmed yet: rdma-cm reports nothing of its abort
        // before its own timeouts, so the end is reported now (the page: the abort makes the
        // EP DISCONNECTED and flushes its receives).
        if !self.active && !self.up.load(Ordering::Acquire) {
            if let Some(ep) = self
                .ep
                .upgrade()
                .filter(|ep| !Ep::is_datagram(&ep.inner.lock()))
            {
                self.end(
                    &ep,
                    End::Orderly,
                    dat_event_number::DAT_CONNECTION_EVENT_DISCONNECTED,
                    &[],
                );
            }
            return;
        }
        if how == Close::Released {
            if let Some(ep) = self.ep.upgrade() {
                self.drain(&ep);
            }
        }
    }

    /// A graceful close: `rdma_disconnect` moves the QP to its error state and flushes what is
    /// in flight, so it waits until every signalled request posted before has completed (the
    /// request CQ watched by the engine meanwhile, so no poll of the consumer's is needed).
    /// Requests posted suppressed after the last signalled one have no completion to wait
    /// for: the end settles them as it does for any end. The peer's end, an abrupt close or
    /// the EP's free ends the wait; a send the peer never posts a receive for keeps it, as
    /// the QP retries it for ever (`RNR_RETRY`).
    fn begin_drain(&self) {
        let Some(ep) = self.ep.upgrade() else {
            let _ = self.id.disconnect();
            return;
        };
        let source = ep
            .inner
            .lock()
            .request_evd
            .as_ref()
            .and_then(|e| CqSource::of(e.arc()));
        if let Some(source) = &source {
            source.watch_for_drain(true);
        }
        *self.drain_cq.lock() = source.clone();
        self.draining.store(true, Ordering::Release);
        if let Some(source) = source {
            source.poll();
        }
        if self.drained(&ep.inner.lock()) {
            self.finish_drain();
        }
    }

    /// Whether a graceful close waits no more for the requests in `inner` (the EP's, under
    /// its lock): true once, for the caller to `finish_drain`.
    pub fn drained(&self, inner: &EpInner) -> bool {
        self.draining.load(Ordering::Acquire)
            && inner
                .outstanding
                .oldest()
                .is_none_or(|r| r.seq > self.last_signalled.load(Ordering::Relaxed))
            && self.draining.swap(false, Ordering::AcqRel)
    }

    /// The send queue drained: the disconnect goes.
    pub fn finish_drain(&self) {
        self.unwatch_drain();
        let _ = self.id.disconnect();
    }

    /// A graceful close waits no more (an abrupt close came, or the connection ended).
    pub(super) fn stop_draining(&self) {
        if self.draining.swap(false, Ordering::AcqRel) {
            self.unwatch_drain();
        }
    }

    fn unwatch_drain(&self) {
        if let Some(source) = self.drain_cq.lock().take() {
            source.watch_for_drain(false);
        }
    }

    pub(super) fn end(&self, ep: &Ep, end: End, failure: dat_event_number, private_data: &[u8]) {
        self.stop_draining();
        if self.end_reported.swap(true, Ordering::AcqRel) {
            return;
        }
        self.drain(ep);
        if self.active && ep.state() == dat_ep_state::DAT_EP_STATE_ACTIVE_CONNECTION_PENDING {
            // Still connecting: only the EP's current attempt may end it.
            ep.attempt_failed(self.attempt, failure, private_data);
        } else {
            ep.ended(end, failure, private_data);
        }
    }

    /// Completions already in the EP's CQs are reported before the end flushes the rest.
    pub(super) fn drain(&self, ep: &Ep) {
        let (recv_evd, request_evd) = {
            let inner = ep.inner.lock();
            (
                inner.recv_evd.as_ref().map(|e| e.arc().clone()),
                inner.request_evd.as_ref().map(|e| e.arc().clone()),
            )
        };
        let [recv_cq, request_cq] =
            [recv_evd, request_evd].map(|evd| evd.as_deref().and_then(CqSource::of));
        for source in recv_cq.iter().chain(&request_cq) {
            source.poll();
        }
        if let Some(source) = request_cq {
            self.settle_unsignalled(ep, &source);
        }
    }

    /// Requests posted unsignalled after the last completion may have finished (no
    /// completion says so) or not (the QP's error flushes them, with a completion each).
    /// A signalled request posted behind them tells which: its completion comes after
    /// theirs, and the requests before it that had none finished (the way a kernel drains
    /// a QP). The QP is in its error state by now (the disconnect moved it there), so the
    /// marker itself is flushed, not sent. If the device takes no marker, or says nothing in
    /// time, the requests stay outstanding and the end flushes them.
    fn settle_unsignalled(&self, ep: &Ep, source: &CqSource) {
        let newest_posted = {
            let inner = ep.inner.lock();
            // A UD QP's marker would need an address handle; its datagrams are left to the
            // flush.
            if Ep::is_datagram(&inner) {
                return;
            }
            let Some(r) = inner.outstanding.newest() else {
                return;
            };
            r.seq
        };
        if newest_posted <= self.last_signalled.load(Ordering::Relaxed) {
            return;
        }
        let Some(qp) = self.qp.get() else { return };
        let marker = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let op = SendOp::Write {
            remote_address: 0,
            rkey: 0,
        };
        let flags = SendFlags {
            signalled: true,
            solicited: false,
            fence: false,
        };
        if qp.post_send(marker, op, &[], flags).is_err() {
            return;
        }
        let deadline = Instant::now() + SETTLE;
        loop {
            source.poll();
            if ep
                .inner
                .lock()
                .outstanding
                .oldest()
                .is_none_or(|r| r.seq > marker)
                || Instant::now() >= deadline
            {
                return;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}
