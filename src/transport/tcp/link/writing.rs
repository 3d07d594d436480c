//! What this side owes the peer goes out here: answers queued (`answers`) and requests held
//! behind reads (`held`), written without blocking by whoever finds the writer free; a thread
//! that finds it taken leaves them to its holder, and a socket without room to the engine.

use std::sync::atomic::{fence, Ordering};

use super::TcpLink;
use crate::abi::*;
use crate::transport::tcp::answers::{Answer, Flushed};
use crate::transport::tcp::conn::ConnError;
use crate::transport::tcp::inbound::Stop;

impl TcpLink {
    /// Queues an answer and writes what can be written now.
    pub(in crate::transport::tcp) fn answer(&self, a: Answer) {
        self.answers.push(a);
        self.flush_answers();
    }

    /// After a write, past a `SeqCst` fence: an acknowledgement put off until the write
    /// returned (see `Sent::ack_ahead_of_write`) is handled now, by the engine.
    #[inline]
    pub(super) fn look_again_if_awaited(&self) {
        if self.writer.sent().writer_awaited() {
            self.kick();
        }
    }

    /// A kept message landed with this local status.
    pub(in crate::transport::tcp) fn landed(&self, seq: u64, status: dat_dto_completion_status) {
        if !self.answers.landed(seq, status) {
            self.stop(Ok(Stop::Broken));
        }
    }

    /// Writes the queued answers that can go now, without blocking. A thread that finds the
    /// writer taken leaves them to its holder, which looks again as it lets go; a socket with
    /// no room leaves them to the engine (or to the polls of the thread holding the lease).
    pub(super) fn flush_answers(&self) {
        loop {
            if !self.answers.pending()
                && !self.out_blocked.load(Ordering::Acquire)
                && !self.held.any()
            {
                return;
            }
            let Some(mut w) = self.writer.try_lock() else {
                self.write_wanted.store(true, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                if self.writer.try_lock().is_none() {
                    return; // its holder sees `write_wanted` after it lets go
                }
                continue;
            };
            self.write_wanted.store(false, Ordering::Relaxed);
            // Held requests first: they keep no order with the answers, and the goodbye
            // among those waits for them.
            let flushed = match self.held.write(&mut w, &self.reads()) {
                Ok(true) => Ok(Flushed::Blocked),
                Ok(false) => self.answers.write(&mut w, self.held.any()),
                Err(e) => Err(e),
            };
            let blocked = w.has_rest() || matches!(flushed, Ok(Flushed::Blocked));
            drop(w);
            self.wrote_frames();
            let was_blocked = self.out_blocked.swap(blocked, Ordering::AcqRel);
            match flushed {
                Err(e) => return self.stop(Err(ConnError::Io(e))),
                Ok(Flushed::Finished) => {}
                Ok(_) if blocked && !was_blocked && !self.lent.load(Ordering::Acquire) => {
                    self.rearm()
                }
                Ok(_) => {}
            }
            fence(Ordering::SeqCst);
            self.look_again_if_awaited();
            if !self.write_wanted.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}
