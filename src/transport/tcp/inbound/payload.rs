//! A frame whose payload arrives in pieces: where its bytes go (`Sink`), kept with the frame
//! (`Partial`) from one look at the socket to the next, filled with what the socket has each
//! time, and what the frame was for carried out once the payload is whole (`finish`).

use std::sync::Arc;

use super::messages::{keep_arrived, receive_landed};
use super::peer_checks::{self, Share};
use super::remote_access::{atomic, land_write_piece, take_last_byte, write_landed};
use super::replies::read_data_landed;
use super::{established, refuse, Inbound, Stop};
use crate::abi::*;
use crate::objects::ep::{Ep, Request};
use crate::objects::evd::Evd;
use crate::objects::lmr::Lmr;
use crate::objects::pz::Pz;
use crate::objects::srq::{PostedRecv, Segments};
use crate::transport::tcp::conn::{ConnError, Reader};
use crate::transport::tcp::direct::Offer;
use crate::transport::tcp::link::TcpLink;
use crate::transport::tcp::wire::{Header, Op, ATOMIC_OPERANDS};

/// A frame whose payload is still arriving.
pub(super) struct Partial {
    pub(super) h: Header,
    /// Payload bytes not yet read.
    left: usize,
    pub(super) sink: Sink,
    /// Set when the access failed as the payload came in (its region was freed meanwhile):
    /// the peer hears this status as the frame ends.
    pub(super) refused: Option<dat_dto_completion_status>,
}

/// Where a payload's bytes go.
pub(super) enum Sink {
    /// An RDMA write, into registered memory already checked, which stays registered while
    /// each piece lands (`Lmr::access`; none for a write of nothing). Its final byte is read
    /// aside (`last`) and stored once the acknowledgement is due: a program that polls that
    /// byte and answers at once finds the acknowledgement ready to ride with its answer,
    /// instead of the engine sending it alone (a second wake-up of the peer per message).
    Memory {
        at: u64,
        region: Option<Arc<Lmr>>,
        last: Option<u8>,
    },
    /// A message, into a posted receive (its segments checked one by one as they fill).
    Receive {
        recv: PostedRecv,
        pz: Arc<Pz>,
        evd: Option<Arc<Evd>>,
        walk: Walk,
    },
    /// A message nobody posted a receive for yet: kept until one is (`filled` of its bytes
    /// are in).
    Early { data: Vec<u8>, filled: usize },
    /// The data of one of our RDMA reads.
    Read {
        request: Request,
        targets: Segments,
        pz: Option<Arc<Pz>>,
        walk: Walk,
    },
    /// A small payload of fixed length: an atomic's operands, or a direct offer's cookie
    /// (`filled` of its bytes are in).
    Operands {
        data: [u8; ATOMIC_OPERANDS as usize],
        filled: usize,
    },
    /// A payload refused (the peer was told why): the connection breaks as the frame starts,
    /// without waiting for the rest of it (a peer that stops sending it midway would keep the
    /// connection up with no event); what the peer still sends is dropped as the connection
    /// lingers (`LINGER`, no longer).
    Refused,
}

/// How far a payload has filled a list of segments.
#[derive(Default)]
pub(super) struct Walk {
    segment: usize,
    within: usize,
    /// The local status of a segment that failed its check: the frame ends there (the
    /// connection breaks).
    failed: Option<dat_dto_completion_status>,
}

/// Starts a frame's payload into `sink`; a payload of nothing finishes at once.
pub(super) fn start(inb: &mut Inbound, h: Header, sink: Sink) -> Option<Stop> {
    inb.partial = Some(Partial {
        left: h.payload_len as usize,
        h,
        sink,
        refused: None,
    });
    None
}

/// How long a consumer's poll waits for the rest of a frame that is arriving as it reads.
const ARRIVING_US: u64 = 50;

/// [`feed`]; a consumer's poll that took part of a payload waits up to `ARRIVING_US` for the
/// rest while it keeps coming (a local peer is still writing it). A thread that returns with
/// the completion it polled for may go off to poll memory, holding the connection on lease:
/// the rest of a frame behind that completion (a write's data behind its acknowledgement)
/// would wait for the lease to run out.
pub(super) fn feed_arriving(
    reader: &mut Reader,
    p: &mut Partial,
    in_caller: bool,
    share: &mut Share,
) -> Result<bool, ConnError> {
    // Until when bytes that stop coming are waited for (0: none came yet).
    let mut until = 0;
    loop {
        let left = p.left;
        if feed(reader, p, share)? {
            return Ok(true);
        }
        if !in_caller || share.spent() {
            return Ok(false);
        }
        let now = crate::runtime::sys::monotonic_micros();
        if p.left < left {
            until = now + ARRIVING_US;
        } else if now >= until {
            return Ok(false);
        }
        std::hint::spin_loop();
    }
}

/// Reads what the socket has of a partial frame's payload into its sink. True when the
/// payload is complete.
fn feed(reader: &mut Reader, p: &mut Partial, share: &mut Share) -> Result<bool, ConnError> {
    while p.left > 0 {
        if share.spent() {
            return Ok(false);
        }
        let got = match &mut p.sink {
            Sink::Memory { last, .. } if p.left == 1 => Some(take_last_byte(reader, last)?),
            // None: freed under the write; the peer is refused and the connection breaks (below).
            Sink::Memory { at, region, .. } => {
                land_write_piece(reader, at, region.as_ref(), p.left)?
            }
            Sink::Early { data, filled } => {
                let n = reader.read_some(&mut data[*filled..], 0)?;
                *filled += n;
                Some(n)
            }
            Sink::Operands { data, filled } => {
                let n = reader.read_some(&mut data[*filled..], 0)?;
                *filled += n;
                Some(n)
            }
            Sink::Receive { recv, pz, walk, .. } => {
                walk.fill(&recv.segments, p.left, Some(pz), reader)?
            }
            Sink::Read {
                targets, pz, walk, ..
            } => walk.fill(targets, p.left, pz.as_ref(), reader)?,
            Sink::Refused => return Ok(true),
        };
        let Some(got) = got else {
            // A region freed under an RDMA write: the peer hears so. A segment that failed its
            // check (`Walk::failed`): the receive or read completes with its status. Either
            // way the connection breaks now, the rest of the payload unread.
            if let Sink::Memory { .. } = p.sink {
                p.refused = Some(dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS);
                p.sink = Sink::Refused;
            }
            return Ok(true);
        };
        if got == 0 {
            return Ok(false);
        }
        share.bytes(got);
        p.left -= got;
        if p.left > 0 && reader.buffered() == 0 && reader.drained() {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Walk {
    /// Reads up to `left` payload bytes into `segments` from where the walk stands: each
    /// segment is checked against its live region (local write privilege, the EP's zone) as
    /// it begins to fill. Returns the bytes taken (0: none were there), or None once a
    /// check failed (`failed`).
    fn fill(
        &mut self,
        segments: &[DAT_LMR_TRIPLET],
        left: usize,
        pz: Option<&Arc<Pz>>,
        reader: &mut Reader,
    ) -> Result<Option<usize>, ConnError> {
        while self.failed.is_none() {
            let (Some(s), Some(pz)) = (segments.get(self.segment), pz) else {
                // No zone to check against (the caller checked the room).
                self.failed = Some(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION);
                break;
            };
            let length = s.segment_length as usize;
            if self.within == length {
                // Full (or empty): the next one.
                self.segment += 1;
                self.within = 0;
                continue;
            }
            let n = (length - self.within).min(left);
            let at = s.virtual_address + self.within as u64;
            // Checked, and held registered while this piece lands (a region freed between two
            // pieces of a message takes no byte after its free returned).
            let Ok(hold) = peer_checks::hold_landing(s.lmr_context, at, n as u64, pz) else {
                self.failed = Some(dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION);
                break;
            };
            // SAFETY: just checked and held: inside a live region with local write privilege
            // in the EP's zone, which the consumer keeps until the receive (or read) completes.
            let dst = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, n) };
            let got = reader.read_some(dst, left - n)?;
            drop(hold);
            self.within += got;
            return Ok(Some(got));
        }
        Ok(None)
    }
}

/// A whole frame's payload is in: what it was for is done.
pub(super) fn finish(ep: &Arc<Ep>, link: &TcpLink, p: Partial, in_caller: bool) -> Option<Stop> {
    let h = p.h;
    if let Some(status) = p.refused {
        refuse(link, h.id, status);
    }
    match p.sink {
        Sink::Memory { at, region, last } => write_landed(link, &h, at, region, last, in_caller),
        Sink::Receive {
            recv, evd, walk, ..
        } => receive_landed(ep, link, &h, recv, evd, walk.failed, in_caller),
        Sink::Early { data, .. } => {
            keep_arrived(ep, link, &h, data);
            None
        }
        Sink::Operands { data, .. } if h.op == Op::Ready => {
            established(link, Offer::from_ready(&h, &data).ok().flatten())
        }
        Sink::Operands { data, .. } => atomic(ep, link, &h, data),
        Sink::Read { request, walk, .. } => read_data_landed(ep, link, request, walk.failed),
        Sink::Refused => Some(Stop::Broken),
    }
}
