//! A completion queue with its own completion channel, whose descriptor a waiter (or the
//! progress engine) sleeps on.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::sync::Arc;

use rdma_mummy_sys as ibv;

use super::device::{uncancelled, Device};

pub type WorkCompletion = ibv::ibv_wc;

pub struct Cq {
    raw: *mut ibv::ibv_cq,
    channel: *mut ibv::ibv_comp_channel,
    pub device: Arc<Device>,
}

// SAFETY: the CQ and its channel are used only through verbs calls, which are thread-safe
// (polling one CQ from two threads at once is serialized by the caller).
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// A CQ of at least `depth` entries (capped by the device), with its channel non-blocking.
    pub fn new(device: &Arc<Device>, depth: i32) -> io::Result<Cq> {
        let ctx = device.context();
        // SAFETY: the device's context is open.
        let channel = unsafe { ibv::ibv_create_comp_channel(ctx) };
        if channel.is_null() {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `channel` was just made; O_NONBLOCK so taking an event never blocks.
        unsafe {
            let fd = (*channel).fd;
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let depth = depth.clamp(1, device.attr.max_cqe.max(1));
        // SAFETY: the context and channel are live; no CQ context pointer is used.
        let raw = unsafe { ibv::ibv_create_cq(ctx, depth, std::ptr::null_mut(), channel, 0) };
        if raw.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: made above and unused.
            unsafe { ibv::ibv_destroy_comp_channel(channel) };
            return Err(e);
        }
        Ok(Cq {
            raw,
            channel,
            device: device.clone(),
        })
    }

    pub fn raw(&self) -> *mut ibv::ibv_cq {
        self.raw
    }

    /// Takes up to `out.len()` completions; how many.
    pub fn poll(&self, out: &mut [MaybeUninit<WorkCompletion>]) -> &[WorkCompletion] {
        // SAFETY: the CQ is live and `out` has room for the entries asked.
        let n = unsafe { ibv::ibv_poll_cq(self.raw, out.len() as i32, out.as_mut_ptr().cast()) };
        let n = n.clamp(0, out.len() as i32) as usize;
        // SAFETY: ibv_poll_cq wrote the first `n` entries.
        unsafe { std::slice::from_raw_parts(out.as_ptr().cast(), n) }
    }

    /// Makes room for at least `depth` completions (capped by the device).
    pub fn resize(&self, depth: i32) -> io::Result<()> {
        let depth = depth.clamp(1, self.device.attr.max_cqe.max(1));
        // SAFETY: the CQ is live; polling it meanwhile is serialized by its owner's lock,
        // which the caller holds.
        match unsafe { ibv::ibv_resize_cq(self.raw, depth) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// Asks for the channel to report the next completion (solicited ones only when
    /// `solicited`).
    pub fn arm(&self, solicited: bool) -> io::Result<()> {
        let _off = uncancelled(&self.device);
        // SAFETY: the CQ is live.
        match unsafe { ibv::ibv_req_notify_cq(self.raw, i32::from(solicited)) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// The descriptor that becomes readable when an armed CQ has a completion.
    pub fn channel_fd(&self) -> RawFd {
        // SAFETY: the channel is live.
        unsafe { (*self.channel).fd }
    }

    /// Takes the channel's reports (the CQ is disarmed by each); whether there was one.
    pub fn take_reports(&self) -> bool {
        let mut any = false;
        loop {
            let mut cq: *mut ibv::ibv_cq = std::ptr::null_mut();
            let mut ctx: *mut libc::c_void = std::ptr::null_mut();
            // SAFETY: the channel is live and non-blocking; a report is acknowledged at once.
            if unsafe { ibv::ibv_get_cq_event(self.channel, &mut cq, &mut ctx) } != 0 {
                return any;
            }
            // SAFETY: `cq` is ours, just reported.
            unsafe { ibv::ibv_ack_cq_events(cq, 1) };
            any = true;
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: made by us, destroyed once, after every QP that used it (they hold an Arc).
        unsafe {
            ibv::ibv_destroy_cq(self.raw);
            ibv::ibv_destroy_comp_channel(self.channel);
        }
    }
}
