//! An EP's requests in flight, as both transports keep them: numbered by the transport in
//! posting order (its sequence numbers rise), recorded as they are posted, completed in that
//! order (every request up to a number the peer or the device names), and flushed when the
//! connection ends. The EP holds the queue under its lock; the transports use only these
//! operations, so "full", "complete through" and "flush" mean one thing everywhere.

use std::collections::VecDeque;

use super::ep::Request;
use crate::abi::DAT_COUNT;

#[derive(Default)]
pub struct Requests(VecDeque<Request>);

impl Requests {
    /// Whether `more` requests more would exceed `max_request_dtos` (the EP's attribute; an
    /// EP allows one at least).
    #[inline(always)]
    pub fn lacks_room(&self, more: usize, max_request_dtos: DAT_COUNT) -> bool {
        self.0.len() + more > max_request_dtos.max(1) as usize
    }

    /// Whether another request would exceed `max_request_dtos` (the send queue is full).
    #[inline(always)]
    pub fn is_full(&self, max_request_dtos: DAT_COUNT) -> bool {
        self.lacks_room(1, max_request_dtos)
    }

    /// Records a request as it is posted (its number above every one recorded). Returns
    /// whether it is the only one in flight.
    #[inline(always)]
    pub fn push(&mut self, request: Request) -> bool {
        debug_assert!(self.0.back().is_none_or(|r| r.seq < request.seq));
        self.0.push_back(request);
        self.0.len() == 1
    }

    /// The newest request did not go out after all (its post failed): it leaves.
    pub fn unpush(&mut self) {
        self.0.pop_back();
    }

    /// The oldest request in flight.
    #[inline(always)]
    pub fn oldest(&self) -> Option<&Request> {
        self.0.front()
    }

    /// The newest request in flight.
    pub fn newest(&self) -> Option<&Request> {
        self.0.back()
    }

    /// Takes the oldest request, which completes.
    #[inline(always)]
    pub fn take_oldest(&mut self) -> Option<Request> {
        self.0.pop_front()
    }

    /// Takes the oldest request if its number is `last` or below: the requests up to `last`
    /// complete, one per call, in order.
    #[inline(always)]
    pub fn take_through(&mut self, last: u64) -> Option<Request> {
        if self.0.front()?.seq <= last {
            self.0.pop_front()
        } else {
            None
        }
    }

    /// Takes the oldest request if its number is below `seq` (those posted before request
    /// `seq` complete with it).
    #[inline(always)]
    pub fn take_before(&mut self, seq: u64) -> Option<Request> {
        if self.0.front()?.seq < seq {
            self.0.pop_front()
        } else {
            None
        }
    }

    /// Every request in flight, in order (the connection ended: they flush). The queue keeps
    /// no room; `make_room` gives it room again for a next connection.
    pub fn take_all(&mut self) -> VecDeque<Request> {
        std::mem::take(&mut self.0)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Makes room, now, for `limit` requests in all: posts up to the limit never allocate.
    pub fn make_room(&mut self, limit: usize) {
        super::make_room(&mut self.0, limit);
    }

    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.0.capacity()
    }

    #[cfg(test)]
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_at_the_attribute_and_an_ep_allows_one_at_least() {
        let mut q = Requests::default();
        assert!(!q.is_full(0));
        assert!(q.push(Request::test_send(1)));
        assert!(q.is_full(0) && q.is_full(1));
        assert!(!q.is_full(2));
        assert!(!q.push(Request::test_send(2)));
        assert!(q.is_full(2));
        // A bind that posts two requests needs room for both.
        assert!(q.lacks_room(2, 3) && !q.lacks_room(1, 3));
    }

    #[test]
    fn requests_complete_in_order_through_a_number() {
        let mut q = Requests::default();
        for seq in [3, 5, 8, 9] {
            q.push(Request::test_send(seq));
        }
        let mut done = Vec::new();
        while let Some(r) = q.take_through(7) {
            done.push(r.seq);
        }
        assert_eq!(done, [3, 5]);
        assert_eq!(q.oldest().map(|r| r.seq), Some(8));
        assert_eq!(q.newest().map(|r| r.seq), Some(9));
        assert!(q.take_through(7).is_none());
        assert!(q.take_before(8).is_none());
        assert_eq!(q.take_before(9).map(|r| r.seq), Some(8));
        q.push(Request::test_send(8 + 3));
        q.unpush();
        assert_eq!(q.newest().map(|r| r.seq), Some(9));
        assert_eq!(q.take_oldest().map(|r| r.cookie), Some(90));
        assert!(q.is_empty());
    }

    #[test]
    fn a_flush_takes_every_request_in_order() {
        let mut q = Requests::default();
        q.make_room(4);
        for seq in 1..=3 {
            q.push(Request::test_send(seq));
        }
        let flushed: Vec<u64> = q.take_all().iter().map(|r| r.seq).collect();
        assert_eq!(flushed, [1, 2, 3]);
        assert_eq!(q.len(), 0);
        assert!(
            q.push(Request::test_send(4)),
            "the first after a flush is alone in flight"
        );
    }
}
