//! EP functions: creation and its checks, query, modify, status, reset, free; connect and
//! disconnect; posting DTOs, whose C arguments are converted here and whose rules are the
//! objects' (`objects::posting`).

use std::sync::Arc;

use super::edge::{self, data_path_entry, entry};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::{self, Ep, Parts};
use crate::objects::ep_state::{self, Post};
use crate::objects::evd::Evd;
use crate::objects::extension::Extended;
use crate::objects::ia::Ia;
use crate::objects::limits;
use crate::objects::lmr;
use crate::objects::posting::{check_completion_flags, RequestPost};
use crate::objects::pz::Pz;
use crate::objects::rmr::Window;
use crate::objects::srq::Srq;

fn ep(h: DAT_EP_HANDLE) -> DatResult<Arc<Ep>> {
    edge::object::<Ep>(h, Sub::DAT_INVALID_HANDLE_EP)
}

thread_local! {
    /// The EP this thread last posted a DTO on.
    static RECENT: edge::Recent<Ep> = const { edge::Recent::new() };
}

/// Lends `body` the EP behind `h`, as the data-transfer calls look it up.
fn with_ep<R>(h: DAT_EP_HANDLE, body: impl FnOnce(&Ep) -> DatResult<R>) -> DatResult<R> {
    edge::with_object(&RECENT, h, Sub::DAT_INVALID_HANDLE_EP, body)
}

/// An EVD the EP will feed: NULL, or an EVD with the right stream that the IA's connections
/// can feed (its own, or another TCP IA's).
fn stream_evd(
    h: DAT_EVD_HANDLE,
    ia: &Arc<Ia>,
    stream: dat_evd_flags,
    sub: Sub,
) -> DatResult<Option<Arc<Evd>>> {
    let evd = edge::optional_object::<Evd>(h, sub)?;
    if let Some(e) = &evd {
        if !ia.feeds_evds_of(&e.ia) || !e.has_stream(stream) {
            return Err(DatError::invalid_handle(sub));
        }
    }
    Ok(evd)
}

/// The body of `dat_ep_create` and `dat_ep_create_with_srq` of both APIs.
/// `ep_attributes`: the consumer's attributes, if it gave any (or why they cannot be read,
/// returned where the attributes are checked); `attr_position` their place among the
/// arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) fn create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    srq_handle: Option<DAT_SRQ_HANDLE>,
    ep_attributes: DatResult<Option<DAT_EP_ATTR>>,
    attr_position: u8,
    ep_handle: *mut DAT_EP_HANDLE,
) -> DatResult {
    let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
    let pz = edge::optional_object::<Pz>(pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
    if pz.as_ref().is_some_and(|p| !Arc::ptr_eq(&p.ia, &ia)) {
        return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PZ));
    }
    let recv_evd = stream_evd(
        recv_evd_handle,
        &ia,
        dat_evd_flags::DAT_EVD_DTO_FLAG,
        Sub::DAT_INVALID_HANDLE_EVD_RECV,
    )?;
    let request_evd = stream_evd(
        request_evd_handle,
        &ia,
        dat_evd_flags::DAT_EVD_DTO_FLAG,
        Sub::DAT_INVALID_HANDLE_EVD_REQUEST,
    )?;
    let connect_evd = stream_evd(
        connect_evd_handle,
        &ia,
        dat_evd_flags::DAT_EVD_CONNECTION_FLAG,
        Sub::DAT_INVALID_HANDLE_EVD_CONN,
    )?;
    let srq = match srq_handle {
        Some(h) => {
            let srq = edge::object::<Srq>(h, Sub::DAT_INVALID_HANDLE_SRQ)?;
            if !Arc::ptr_eq(&srq.ia, &ia) {
                return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_SRQ));
            }
            Some(srq)
        }
        None => None,
    };
    let attr = match ep_attributes? {
        Some(a) => ep::check_attr(
            &a,
            attr_position,
            ia.transport.datagrams(),
            &ia.transport.limits(),
        )?,
        // dat_ep_create_with_srq: "Consumer can not specify NULL for ep_attributes".
        None if srq.is_some() => return Err(DatError::invalid_arg(attr_position)),
        None => ep::default_attr_for(&ia.transport.limits()),
    };
    let out = edge::out(ep_handle, attr_position + 1)?;
    let datagram =
        attr.service_type == dat_ib_service_type::DAT_IB_SERVICE_TYPE_UD as DAT_SERVICE_TYPE;
    if datagram && srq.is_some() {
        // A UD EP takes its receives from its own queue on every transport of ours.
        return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
    }
    let parts = Parts {
        pz,
        recv_evd,
        request_evd,
        connect_evd,
        srq,
    };
    let ep = Arc::new(Ep::new(ia.clone(), parts, attr));
    if datagram {
        // Its QP carries its posts from the start: a UD EP is never connected.
        ia.transport.datagram_endpoint(&ep)?;
    }
    match ia.adopt(ep.clone()) {
        Ok(handle) => out.set(handle),
        Err(e) => {
            // The IA closed meanwhile: a UD EP's link leaves the EVDs it joined.
            crate::handle::Object::on_release(&*ep);
            return Err(e);
        }
    }
    if !datagram {
        ia.transport.endpoint_created(&ep);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_create(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    ep_attributes: *const DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> DAT_RETURN {
    entry! {
        // SAFETY: a non-NULL attribute pointer points to a DAT_EP_ATTR (API contract).
        let attr = unsafe { edge::read_in(ep_attributes) };
        create(ia_handle, pz_handle, recv_evd_handle, request_evd_handle, connect_evd_handle, None, Ok(attr), 6, ep_handle)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_create_with_srq(
    ia_handle: DAT_IA_HANDLE,
    pz_handle: DAT_PZ_HANDLE,
    recv_evd_handle: DAT_EVD_HANDLE,
    request_evd_handle: DAT_EVD_HANDLE,
    connect_evd_handle: DAT_EVD_HANDLE,
    srq_handle: DAT_SRQ_HANDLE,
    ep_attributes: *const DAT_EP_ATTR,
    ep_handle: *mut DAT_EP_HANDLE,
) -> DAT_RETURN {
    entry! {
        // SAFETY: a non-NULL attribute pointer points to a DAT_EP_ATTR (API contract).
        let attr = unsafe { edge::read_in(ep_attributes) };
        create(ia_handle, pz_handle, recv_evd_handle, request_evd_handle, connect_evd_handle, Some(srq_handle), Ok(attr), 7, ep_handle)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_query(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: DAT_EP_PARAM_MASK,
    ep_param: *mut DAT_EP_PARAM,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        if ep_param_mask & !DAT_EP_FIELD_ALL != 0 {
            return Err(DatError::invalid_arg(2));
        }
        let out = edge::out(ep_param, 3)?;
        let inner = ep.inner.lock();
        let handle_of = |e: &Option<crate::objects::Held<Evd>>| e.as_ref().map_or(std::ptr::null_mut(), |e| e.handle());
        let mut p = DAT_EP_PARAM::zeroed();
        p.ia_handle = ep.ia.handle();
        p.ep_state = inner.state as DAT_EP_STATE;
        p.local_ia_address_ptr = ep.ia.address_ptr();
        p.local_port_qual = inner.local_port;
        p.remote_port_qual = inner.remote_port;
        p.remote_ia_address_ptr = inner
            .remote_addr
            .as_ref()
            .map_or(std::ptr::null_mut(), |a| &**a as *const libc::sockaddr_in as DAT_IA_ADDRESS_PTR);
        p.pz_handle = inner.pz.as_ref().map_or(std::ptr::null_mut(), |p| p.handle());
        p.recv_evd_handle = handle_of(&inner.recv_evd);
        p.request_evd_handle = handle_of(&inner.request_evd);
        p.connect_evd_handle = handle_of(&inner.connect_evd);
        p.srq_handle = inner.srq.as_ref().map_or(std::ptr::null_mut(), |s| s.handle());
        p.ep_attr = inner.attr;
        out.set(p);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_modify(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: DAT_EP_PARAM_MASK,
    ep_param: *const DAT_EP_PARAM,
) -> DAT_RETURN {
    entry! {
        // SAFETY: a non-NULL parameter pointer points to a DAT_EP_PARAM (API contract).
        modify(ep_handle, ep_param_mask, || unsafe { edge::required_in(ep_param, 3) })
    }
}

/// The body of `dat_ep_modify` of both APIs: `ep_param` reads the parameters (argument 3)
/// once the handle and the mask have been checked.
pub(crate) fn modify(
    ep_handle: DAT_EP_HANDLE,
    ep_param_mask: DAT_EP_PARAM_MASK,
    ep_param: impl FnOnce() -> DatResult<DAT_EP_PARAM>,
) -> DatResult {
    let ep = ep(ep_handle)?;
    if ep_param_mask & !DAT_EP_FIELD_ALL != 0 {
        return Err(DatError::invalid_arg(2));
    }
    let p = ep_param()?;
    // Read-only fields cannot be modified.
    let read_only = DAT_EP_FIELD_IA_HANDLE
        | DAT_EP_FIELD_EP_STATE
        | DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR
        | DAT_EP_FIELD_LOCAL_PORT_QUAL
        | DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR
        | DAT_EP_FIELD_REMOTE_PORT_QUAL
        | DAT_EP_FIELD_SRQ_HANDLE;
    if ep_param_mask & read_only != 0 {
        return Err(DatError::invalid_arg(2));
    }
    let mut inner = ep.inner.lock();
    if Ep::is_datagram(&inner) {
        // A UD EP's QP, made with it on its PZ and EVDs, is in use from the start.
        return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
    }
    ep_state::modify(inner.state)?;
    // Only the attributes the mask names change; the others keep their values.
    let attr = if ep_param_mask & DAT_EP_FIELD_EP_ATTR_ALL != 0 {
        let own = ep.ia.transport.limits();
        let asked = masked_attr(inner.attr, &p.ep_attr, ep_param_mask);
        Some(ep::check_attr(&asked, 3, false, &own)?)
    } else {
        None
    };
    let ia = &ep.ia;
    if ep_param_mask & DAT_EP_FIELD_PZ_HANDLE != 0 {
        let pz = edge::optional_object::<Pz>(p.pz_handle, Sub::DAT_INVALID_HANDLE_PZ)?;
        inner.pz = pz.map(crate::objects::Held::new);
    }
    if ep_param_mask & DAT_EP_FIELD_RECV_EVD_HANDLE != 0 {
        let e = stream_evd(
            p.recv_evd_handle,
            ia,
            dat_evd_flags::DAT_EVD_DTO_FLAG,
            Sub::DAT_INVALID_HANDLE_EVD_RECV,
        )?;
        inner.recv_evd = e.map(crate::objects::Held::new);
    }
    if ep_param_mask & DAT_EP_FIELD_REQUEST_EVD_HANDLE != 0 {
        let e = stream_evd(
            p.request_evd_handle,
            ia,
            dat_evd_flags::DAT_EVD_DTO_FLAG,
            Sub::DAT_INVALID_HANDLE_EVD_REQUEST,
        )?;
        inner.request_evd = e.map(crate::objects::Held::new);
    }
    if ep_param_mask & DAT_EP_FIELD_CONNECT_EVD_HANDLE != 0 {
        let e = stream_evd(
            p.connect_evd_handle,
            ia,
            dat_evd_flags::DAT_EVD_CONNECTION_FLAG,
            Sub::DAT_INVALID_HANDLE_EVD_CONN,
        )?;
        inner.connect_evd = e.map(crate::objects::Held::new);
    }
    if let Some(a) = attr {
        inner.attr = a;
        inner.size_queues();
    }
    Ok(())
}

/// `current` with the attributes of `new` that `mask` names (DAT_EP_FIELD_EP_ATTR_*).
fn masked_attr(current: DAT_EP_ATTR, new: &DAT_EP_ATTR, mask: DAT_EP_PARAM_MASK) -> DAT_EP_ATTR {
    let mut a = current;
    macro_rules! take {
        ($($field:ident: $bit:ident),* $(,)?) => {$(
            if mask & $bit != 0 {
                a.$field = new.$field;
            }
        )*};
    }
    take! {
        service_type: DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE,
        max_message_size: DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE,
        max_rdma_size: DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE,
        qos: DAT_EP_FIELD_EP_ATTR_QOS,
        recv_completion_flags: DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS,
        request_completion_flags: DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS,
        max_recv_dtos: DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS,
        max_request_dtos: DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS,
        max_recv_iov: DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV,
        max_request_iov: DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV,
        max_rdma_read_in: DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN,
        max_rdma_read_out: DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT,
        srq_soft_hw: DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW,
        max_rdma_read_iov: DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV,
        max_rdma_write_iov: DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV,
        ep_transport_specific_count: DAT_EP_FIELD_EP_ATTR_NUM_TRANSPORT_ATTR,
        ep_transport_specific: DAT_EP_FIELD_EP_ATTR_TRANSPORT_SPECIFIC_ATTR,
        ep_provider_specific_count: DAT_EP_FIELD_EP_ATTR_NUM_PROVIDER_ATTR,
        ep_provider_specific: DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR,
    }
    a
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_get_status(
    ep_handle: DAT_EP_HANDLE,
    ep_state: *mut DAT_EP_STATE,
    recv_idle: *mut DAT_BOOLEAN,
    request_idle: *mut DAT_BOOLEAN,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        let inner = ep.inner.lock();
        // Each output is optional: the man page names no invalid parameter, and programs
        // (dtestx) ask for the idle flags alone, as OpenFabrics allows.
        if let Some(o) = edge::optional_out(ep_state) {
            o.set(inner.state as DAT_EP_STATE);
        }
        let bool_of = |b: bool| if b { dat_boolean::DAT_TRUE } else { dat_boolean::DAT_FALSE } as DAT_BOOLEAN;
        if let Some(o) = edge::optional_out(recv_idle) {
            o.set(bool_of(inner.recvs.is_empty()));
        }
        if let Some(o) = edge::optional_out(request_idle) {
            o.set(bool_of(inner.outstanding.is_empty()));
        }
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_free(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        // The release tears down a connection and flushes what was posted.
        ep.ia.release::<Ep>(ep_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP))?;
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_reset(ep_handle: DAT_EP_HANDLE) -> DAT_RETURN {
    entry! {
        ep(ep_handle)?.reset()
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_recv_query(
    ep_handle: DAT_EP_HANDLE,
    nbufs_allocated: *mut DAT_COUNT,
    bufs_alloc_span: *mut DAT_COUNT,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        let inner = ep.inner.lock();
        // "When an EP does not use SRQ, a buffer is allocated as soon as it is posted": its
        // receives not yet completed, which messages fill in order (so the span is the
        // same). An SRQ's receive is the EP's only while a message streams into it, which no
        // transport of ours counts: DAT_VALUE_UNKNOWN, as the man page allows.
        let count = match inner.srq {
            None => inner.recvs.len().min(DAT_COUNT::MAX as usize) as DAT_COUNT,
            Some(_) => DAT_VALUE_UNKNOWN as DAT_COUNT,
        };
        if let Some(o) = edge::optional_out(nbufs_allocated) {
            o.set(count);
        }
        if let Some(o) = edge::optional_out(bufs_alloc_span) {
            o.set(count);
        }
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_set_watermark(
    ep_handle: DAT_EP_HANDLE,
    soft_high_watermark: DAT_COUNT,
    hard_high_watermark: DAT_COUNT,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        let inner = ep.inner.lock();
        let valid = |w: DAT_COUNT| w >= 0 || w == DAT_WATERMARK_INFINITE as DAT_COUNT;
        if !valid(soft_high_watermark) {
            return Err(DatError::invalid_arg(2));
        }
        if !valid(hard_high_watermark) {
            return Err(DatError::invalid_arg(3));
        }
        // The count the watermarks watch, an SRQ's receives allocated to the EP and not yet
        // completed, is one neither transport keeps (dat_ep_recv_query reports it unknown):
        // "DAT_MODEL_NOT_SUPPORTED: ... The Provider does not support EP Soft or Hard High
        // Watermarks", except for the default, no watermark at all, which asks for nothing.
        let infinite = DAT_WATERMARK_INFINITE as DAT_COUNT;
        if inner.srq.is_none() || soft_high_watermark != infinite || hard_high_watermark != infinite {
            return Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED));
        }
        Ok(())
    }
}

/// Private data as a slice: a negative size, a size over the provider's limit, or a NULL
/// pointer with a size are `DAT_INVALID_PARAMETER` naming the size's position.
///
/// # Safety
/// `data` points to `size` bytes when `size` is positive.
unsafe fn private_data<'a>(size: DAT_COUNT, data: DAT_PVOID, position: u8) -> DatResult<&'a [u8]> {
    if size > limits::MAX_PRIVATE_DATA_SIZE {
        return Err(DatError::invalid_arg(position));
    }
    // SAFETY: the caller passes `size` bytes at `data` (API contract).
    unsafe { edge::slice_in(data as *const u8, size, position) }
}

/// An IPv4 remote address: NULL or another family is `DAT_INVALID_ADDRESS`.
///
/// # Safety
/// A non-NULL `p` points to a sockaddr, a sockaddr_in when its family is AF_INET.
unsafe fn remote_address(p: DAT_IA_ADDRESS_PTR) -> DatResult<std::net::Ipv4Addr> {
    let malformed = DatError::new(
        Type::DAT_INVALID_ADDRESS,
        Sub::DAT_INVALID_ADDRESS_MALFORMED,
    );
    // SAFETY: a non-NULL address points to a sockaddr (API contract).
    let sa = unsafe { edge::read_in(p) }.ok_or(malformed)?;
    if i32::from(sa.sa_family) != libc::AF_INET {
        return Err(DatError::new(
            Type::DAT_INVALID_ADDRESS,
            Sub::DAT_INVALID_ADDRESS_UNSUPPORTED,
        ));
    }
    // SAFETY: an AF_INET address is a sockaddr_in.
    let sin = unsafe { edge::read_in(p as *const libc::sockaddr_in) }.ok_or(malformed)?;
    Ok(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
}

/// A connect's time limit (argument `position`): DAT_TIMEOUT_INFINITE is none at all; 0 is
/// `DAT_INVALID_PARAMETER` ("Values must be positive").
fn connect_timeout(timeout: DAT_TIMEOUT, position: u8) -> DatResult<Option<std::time::Duration>> {
    match timeout {
        0 => Err(DatError::invalid_arg(position)),
        DAT_TIMEOUT_INFINITE => Ok(None),
        t => Ok(Some(std::time::Duration::from_micros(u64::from(t)))),
    }
}

/// A connect's flags (argument `position`): unknown values are invalid; multipath, requested
/// or required, is a model no transport of ours gives ("DAT_MODEL_NOT_SUPPORTED").
fn connect_flags_supported(flags: DAT_CONNECT_FLAGS, position: u8) -> DatResult {
    match edge::enum_in::<dat_connect_flags, _>(flags, position)? {
        dat_connect_flags::DAT_CONNECT_DEFAULT_FLAG => Ok(()),
        _ => Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED)),
    }
}

#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub unsafe extern "C" fn dat_ep_connect(
    ep_handle: DAT_EP_HANDLE,
    remote_ia_address: DAT_IA_ADDRESS_PTR,
    remote_conn_qual: DAT_CONN_QUAL,
    timeout: DAT_TIMEOUT,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
    quality_of_service: DAT_QOS,
    connect_flags: DAT_CONNECT_FLAGS,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        // SAFETY: a non-NULL remote address points to a sockaddr, an AF_INET one to a sockaddr_in
        // (API contract).
        let ip = unsafe { remote_address(remote_ia_address)? };
        // Qualifier 0 names no listener (it listens on any port); every other 64-bit value
        // does, on the port it maps to.
        if remote_conn_qual == 0 {
            return Err(DatError::invalid_arg(3));
        }
        let timeout = connect_timeout(timeout, 4)?;
        // SAFETY: `private_data` holds `private_data_size` bytes when the size is positive (API
        // contract).
        let pd = unsafe { self::private_data(private_data_size, private_data, 5)? };
        best_effort_only(quality_of_service, 7)?;
        connect_flags_supported(connect_flags, 8)?;
        if Ep::is_datagram(&ep.inner.lock()) {
            return ep.connect_datagram(ip, remote_conn_qual, pd);
        }
        ep.check_connectable()?;
        ep.connect(ip, remote_conn_qual, timeout, pd)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_dup_connect(
    ep_handle: DAT_EP_HANDLE,
    ep_dup_handle: DAT_EP_HANDLE,
    timeout: DAT_TIMEOUT,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
    quality_of_service: DAT_QOS,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        let dup = edge::object::<Ep>(ep_dup_handle, Sub::DAT_INVALID_HANDLE2)?;
        let timeout = connect_timeout(timeout, 3)?;
        // SAFETY: `private_data` holds `private_data_size` bytes when the size is positive (API
        // contract).
        let pd = unsafe { self::private_data(private_data_size, private_data, 4)? };
        best_effort_only(quality_of_service, 6)?;
        // The duplicate names its peer: connected, with an address and a port.
        let (ip, port) = {
            let inner = dup.inner.lock();
            if !ep_state::post_request(inner.state).is_ok_and(|p| p == Post::Run) {
                return Err(DatError::invalid_state(ep_state::subtype(inner.state)));
            }
            let sin = inner.remote_addr.as_ref().ok_or(DatError::invalid_state(ep_state::subtype(inner.state)))?;
            (std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)), inner.remote_port)
        };
        ep.check_connectable()?;
        ep.connect(ip, port, timeout, pd)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_common_connect(
    ep_handle: DAT_EP_HANDLE,
    remote_ia_address: DAT_IA_ADDRESS_PTR,
    timeout: DAT_TIMEOUT,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        // SAFETY: a non-NULL remote address points to a sockaddr, an AF_INET one to a sockaddr_in
        // (API contract).
        let ip = unsafe { remote_address(remote_ia_address)? };
        // The common service point is named by the address's port (a CSP listens there).
        // SAFETY: as above.
        let sin = unsafe { super::cm::common_address(remote_ia_address, 2)? };
        let timeout = connect_timeout(timeout, 3)?;
        // SAFETY: `private_data` holds `private_data_size` bytes when the size is positive (API
        // contract).
        let pd = unsafe { self::private_data(private_data_size, private_data, 4)? };
        ep.check_connectable()?;
        ep.connect(ip, u64::from(u16::from_be(sin.sin_port)), timeout, pd)
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_disconnect(
    ep_handle: DAT_EP_HANDLE,
    close_flags: DAT_CLOSE_FLAGS,
) -> DAT_RETURN {
    entry! {
        let ep = ep(ep_handle)?;
        let flags = edge::enum_in::<dat_close_flags, _>(close_flags, 2)?;
        ep.disconnect(flags == dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG)
    }
}

/// A connect's QoS (argument `position`): unknown values are invalid; of the known ones, the
/// transports give best effort only ("DAT_MODEL_NOT_SUPPORTED: ... requested qos was not
/// supported").
fn best_effort_only(quality_of_service: DAT_QOS, position: u8) -> DatResult {
    match edge::enum_in::<dat_qos, _>(quality_of_service, position)? {
        dat_qos::DAT_QOS_BEST_EFFORT => Ok(()),
        _ => Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED)),
    }
}

/// The common checks and the flush of a request DTO (send, RDMA write, RDMA read, and the
/// IB extension's, `extended`, which move data as `operation`).
///
/// # Safety
/// `local_iov` points to `num_segments` triplets, and a non-NULL `remote_iov` to a triplet.
// Never inlined: every request DTO runs this one copy, so a program that sends and writes
// keeps one post path in its instruction cache, not one per entry point.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn post_request(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *const DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: Option<*const DAT_RMR_TRIPLET>,
    completion_flags: DAT_COMPLETION_FLAGS,
    flags_position: u8,
    operation: dat_dtos,
    extended: Option<Extended>,
    invalidate: Option<u32>,
) -> DatResult {
    let post = RequestPost {
        num_segments,
        cookie: user_cookie.as_u64(),
        completion_flags,
        flags_position,
        operation,
        extended,
        invalidate,
    };
    // SAFETY: the caller passes `num_segments` triplets at `local_iov` (API contract).
    let local = |n| unsafe { edge::slice_in(local_iov, n, 3) };
    let remote = || match remote_iov {
        // SAFETY: a non-NULL remote IOV points to a triplet (API contract).
        Some(r) => unsafe { edge::required_in(r, 5) }.map(Some),
        None => Ok(None),
    };
    post_request_with(ep_handle, post, local, remote)
}

/// A request DTO on the EP behind `ep_handle`: `local` gives its `num_segments` segments
/// (argument 3), `remote` its remote triplet (argument 5) where it has one, each read where
/// the checks before it passed (the 1.2 entry points convert theirs there).
// The body inlined: a data-transfer call makes one call of its own, not two.
#[inline(always)]
pub(crate) fn post_request_with<'a>(
    ep_handle: DAT_EP_HANDLE,
    post: RequestPost,
    local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
    remote: impl FnOnce() -> DatResult<Option<DAT_RMR_TRIPLET>>,
) -> DatResult {
    with_ep(
        ep_handle,
        #[inline(always)]
        |ep| ep.post_request(post, local, remote),
    )
}

/// A receive on the EP behind `ep_handle`: `local` gives its `num_segments` segments
/// (argument 3) once the count has been checked.
#[inline(always)]
pub(crate) fn post_recv_with<'a>(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local: impl FnOnce(DAT_COUNT) -> DatResult<&'a [DAT_LMR_TRIPLET]>,
    cookie: u64,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DatResult {
    with_ep(
        ep_handle,
        #[inline(always)]
        |ep| ep.post_recv(num_segments, local, cookie, completion_flags),
    )
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_send(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, None, completion_flags, 5, dat_dtos::DAT_DTO_SEND, None, None) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_send_with_invalidate(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
    invalidate_flag: DAT_BOOLEAN,
    rmr_context: DAT_RMR_CONTEXT,
) -> DAT_RETURN {
    data_path_entry! {
        ep(ep_handle)?;
        let invalidate = edge::enum_in::<dat_boolean, _>(invalidate_flag, 6)? == dat_boolean::DAT_TRUE;
        // The peer unbinds its RMR of this context as the message lands (TCP: a flag of the
        // send's frame; verbs: IBV_WR_SEND_WITH_INV, the peer's device invalidating the
        // window).
        let invalidate = invalidate.then_some(rmr_context);
        // SAFETY: `local_iov` holds `num_segments` triplets (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, None, completion_flags, 5, dat_dtos::DAT_DTO_SEND, None, invalidate) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_rdma_write(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets, and a non-NULL `remote_iov` points to
        // a triplet (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, Some(remote_iov), completion_flags, 6, dat_dtos::DAT_DTO_RDMA_WRITE, None, None) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_rdma_read(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    data_path_entry! {
        // SAFETY: `local_iov` holds `num_segments` triplets, and a non-NULL `remote_iov` points to
        // a triplet (API contract).
        unsafe { post_request(ep_handle, num_segments, local_iov, user_cookie, Some(remote_iov), completion_flags, 6, dat_dtos::DAT_DTO_RDMA_READ, None, None) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_rdma_read_to_rmr(
    ep_handle: DAT_EP_HANDLE,
    local_iov: *const DAT_RMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    remote_iov: *const DAT_RMR_TRIPLET,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    data_path_entry! {
        let ep = ep(ep_handle)?;
        // SAFETY: non-NULL triplet pointers point to triplets (API contract).
        let local = unsafe { edge::required_in(local_iov, 2)? };
        // SAFETY: as above.
        unsafe { edge::required_in(remote_iov, 4)? };
        let attr = ep.inner.lock().attr;
        check_completion_flags(completion_flags, attr.request_completion_flags, 5)?;
        ep_state::post_request(ep.state())?;
        // The data lands as a peer's write into the RMR would: within an RMR bound through
        // this EP with remote write privilege, in the region behind it (a read's local
        // segment names that region: verbs reads into memory regions, not windows).
        let length = u64::from(local.segment_length);
        let lmr = Window::lookup(&ep, local.rmr_context)
            .and_then(|w| w.reach(local.virtual_address, length, lmr::PRIV_REMOTE_WRITE))
            .ok_or(DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_RDMA_WRITE))?;
        let segment = DAT_LMR_TRIPLET { lmr_context: lmr.context, virtual_address: local.virtual_address, segment_length: local.segment_length };
        // SAFETY: `segment` is one triplet on our stack; `remote_iov` points to a triplet (read
        // above).
        unsafe { post_request(ep_handle, 1, &segment, user_cookie, Some(remote_iov), completion_flags, 5, dat_dtos::DAT_DTO_RDMA_READ, None, None) }
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ep_post_recv(
    ep_handle: DAT_EP_HANDLE,
    num_segments: DAT_COUNT,
    local_iov: *mut DAT_LMR_TRIPLET,
    user_cookie: DAT_DTO_COOKIE,
    completion_flags: DAT_COMPLETION_FLAGS,
) -> DAT_RETURN {
    data_path_entry! {
        // The body inlined: a data-transfer call makes one call of its own, not two.
        // SAFETY: the caller passes `num_segments` triplets at `local_iov` (API contract).
        let local = |n| unsafe { edge::slice_in(local_iov as *const DAT_LMR_TRIPLET, n, 3) };
        post_recv_with(ep_handle, num_segments, local, user_cookie.as_u64(), completion_flags)
    }
}
