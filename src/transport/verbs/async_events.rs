//! A device's asynchronous events (`ibv_get_async_event`), read on the progress engine and
//! reported as OpenFabrics' openib providers report them: a QP's error breaks its EP's
//! connection and posts `DAT_ASYNC_ERROR_EP_BROKEN` to its IA's async EVD; a device's or
//! port's failure posts `DAT_ASYNC_ERROR_IA_CATASTROPHIC` to the async EVD of every IA on the
//! device; a CQ's error (an overrun) is its EVD's overflow, `DAT_ASYNC_ERROR_EVD_OVERFLOW`.
//!
//! rdma-cm opens each device once per process, so one watcher serves every IA of a device.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, LazyLock, OnceLock, Weak};

use parking_lot::Mutex;
use rdma_mummy_sys as ibv;

use super::transport::conn_of_qp;
use crate::abi::*;
use crate::objects::evd::Evd;
use crate::runtime::engine::{Engine, Source, Token};
use crate::runtime::sys::debug;

/// The watcher of each open device context, by the context's address.
static WATCHERS: LazyLock<Mutex<HashMap<usize, Weak<DeviceEvents>>>> =
    LazyLock::new(Default::default);

pub struct DeviceEvents {
    context: *mut ibv::ibv_context,
    engine: Arc<Engine>,
    token: OnceLock<Token>,
    /// The async EVDs of the device's IAs, with the IA each reports for.
    sinks: Mutex<Vec<(DAT_IA_HANDLE, Weak<Evd>)>>,
}

// SAFETY: the context is used only through verbs calls, which are thread-safe; the IA handles
// are plain values.
unsafe impl Send for DeviceEvents {}
// SAFETY: as above.
unsafe impl Sync for DeviceEvents {}

impl DeviceEvents {
    /// The watcher of `context`'s events, started if it is the first.
    ///
    /// # Safety
    /// `context` is an open device context that stays open while the watcher lives.
    pub unsafe fn watch(context: *mut ibv::ibv_context) -> io::Result<Arc<DeviceEvents>> {
        let mut watchers = WATCHERS.lock();
        if let Some(w) = watchers.get(&(context as usize)).and_then(Weak::upgrade) {
            return Ok(w);
        }
        // SAFETY: `context` is an open device context; its async descriptor is made
        // non-blocking so reading the events never blocks the engine.
        let fd = unsafe {
            let fd = (*context).async_fd;
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            fd
        };
        let events = Arc::new(DeviceEvents {
            context,
            engine: Engine::get(),
            token: OnceLock::new(),
            sinks: Mutex::new(Vec::new()),
        });
        let token = events
            .engine
            .register(fd, Arc::new(Reader(Arc::downgrade(&events))))?;
        let _ = events.token.set(token);
        events.engine.arm(token, fd, libc::EPOLLIN as u32);
        watchers.retain(|_, w| w.strong_count() > 0);
        watchers.insert(context as usize, Arc::downgrade(&events));
        Ok(events)
    }

    /// Device-wide failures are reported to `evd` for `ia`.
    pub fn report_to(&self, ia: DAT_IA_HANDLE, evd: &Arc<Evd>) {
        let mut sinks = self.sinks.lock();
        sinks.retain(|(_, e)| e.strong_count() > 0);
        sinks.push((ia, Arc::downgrade(evd)));
    }

    fn fd(&self) -> i32 {
        // SAFETY: the context stays open while its ids (the device's) do, which hold us.
        unsafe { (*self.context).async_fd }
    }

    /// Takes every event waiting.
    fn read(&self) {
        loop {
            let mut event = ibv::ibv_async_event::zeroed();
            // SAFETY: an open context and a valid out-pointer; non-blocking (EAGAIN: none left).
            if unsafe { ibv::ibv_get_async_event(self.context, &mut event) } != 0 {
                break;
            }
            self.report(&event);
            // SAFETY: an event ibv_get_async_event returned, acknowledged once.
            unsafe { ibv::ibv_ack_async_event(&mut event) };
        }
    }

    fn report(&self, event: &ibv::ibv_async_event) {
        use ibv::ibv_event_type as T;
        // Read as a number: a kernel newer than our headers may send a kind we do not know.
        // SAFETY: the field is a C enum, 4 bytes, filled by the kernel.
        let kind = unsafe { std::ptr::addr_of!(event.event_type).cast::<u32>().read() };
        let is = |t: T| kind == t as u32;
        if debug() {
            eprintln!("libdat: device event {kind} ({})", event_name(kind));
        }
        if [
            T::IBV_EVENT_QP_FATAL,
            T::IBV_EVENT_QP_REQ_ERR,
            T::IBV_EVENT_QP_ACCESS_ERR,
            T::IBV_EVENT_PATH_MIG_ERR,
        ]
        .into_iter()
        .any(is)
        {
            // SAFETY: for QP events the element is the QP, live until the event is acked.
            let Some(qp) = (unsafe { event.element.qp.as_ref() }) else {
                return;
            };
            let Some(conn) = conn_of_qp(self.context as usize, qp.qp_num) else {
                return;
            };
            let Some(ep) = conn.ep() else { return };
            ep.ia
                .counters
                .bump(dat_ia_counters::DCNT_IA_ASYNC_QP_ERROR as u32);
            conn.fail();
            if let Some(evd) = ep.ia.async_evd_object() {
                evd.post_async_error(dat_event_number::DAT_ASYNC_ERROR_EP_BROKEN, ep.handle());
            }
        } else if is(T::IBV_EVENT_CQ_ERR) {
            // SAFETY: for a CQ event the element is the CQ, live until the event is acked.
            if let Some(cq) = unsafe { event.element.cq.as_ref() } {
                super::completions::overflowed(cq as *const ibv::ibv_cq as *mut ibv::ibv_cq);
            }
        } else if [T::IBV_EVENT_DEVICE_FATAL, T::IBV_EVENT_PORT_ERR]
            .into_iter()
            .any(is)
        {
            for (ia, evd) in self.sinks.lock().iter() {
                if let Some(evd) = evd.upgrade() {
                    evd.post_async_error(dat_event_number::DAT_ASYNC_ERROR_IA_CATASTROPHIC, *ia);
                }
            }
        }
    }
}

fn event_name(kind: u32) -> String {
    if kind > ibv::ibv_event_type::IBV_EVENT_DEVICE_SPEED_CHANGE as u32 {
        return "unknown".into();
    }
    // SAFETY: `kind` is one of the enum's values (checked above: they run from 0 without a
    // gap); ibv_event_type_str returns a static string or NULL.
    let s =
        unsafe { ibv::ibv_event_type_str(std::mem::transmute::<u32, ibv::ibv_event_type>(kind)) };
    if s.is_null() {
        return "unknown".into();
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { std::ffi::CStr::from_ptr(s) }
        .to_string_lossy()
        .into_owned()
}

/// What the engine reports the device's async descriptor to.
struct Reader(Weak<DeviceEvents>);

impl Source for Reader {
    fn on_event(self: Arc<Self>, _events: u32) {
        let Some(events) = self.0.upgrade() else {
            return;
        };
        events.read();
        if let Some(token) = events.token.get() {
            events.engine.arm(*token, events.fd(), libc::EPOLLIN as u32);
        }
    }
}

impl Drop for DeviceEvents {
    fn drop(&mut self) {
        if let Some(token) = self.token.get() {
            self.engine.deregister(*token, Some(self.fd()));
        }
    }
}
