//! Connection management functions: PSP, RSP, CSP and CR. Service points listen on the port
//! their conn_qual maps to (any 64-bit qualifier, `objects::conn_qual`); `dat_cr_accept` hands
//! the request to the transport (a UD EP's request to a UD EP); `dat_cr_handoff` hands it to
//! another service point of the IA.

use std::sync::Arc;

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::objects::ep::Ep;
use crate::objects::ep_state::AcceptOn;
use crate::objects::evd::Evd;
use crate::objects::ia::Ia;
use crate::objects::limits;
use crate::objects::sp::{Cr, Csp, Psp, Rsp, ServicePoint, SpKind};

/// A service point's EVD: one with the CR stream that the IA can feed (see `Ia::feeds_evds_of`).
fn cr_evd(ia: &Arc<Ia>, h: DAT_EVD_HANDLE) -> DatResult<Arc<Evd>> {
    let evd = edge::object::<Evd>(h, Sub::DAT_INVALID_HANDLE_EVD_CR)?;
    if !ia.feeds_evds_of(&evd.ia) || !evd.has_stream(dat_evd_flags::DAT_EVD_CR_FLAG) {
        return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EVD_CR));
    }
    Ok(evd)
}

/// Binds a service point (qualifier 0: any free port) and returns its qualifier; a port in
/// use, by another program or by a qualifier that maps to the same one, is
/// `DAT_CONN_QUAL_IN_USE`, the bare value as OpenFabrics' providers return it.
fn listen(sp: &Arc<ServicePoint>, conn_qual: DAT_CONN_QUAL) -> DatResult<DAT_CONN_QUAL> {
    let listening = sp.listen(conn_qual).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => DatError::unclassed(Type::DAT_CONN_QUAL_IN_USE),
        _ => DatError::bare(Type::DAT_CONN_QUAL_UNAVAILABLE),
    })?;
    sp.ia
        .counters
        .bump(dat_ia_counters::DCNT_IA_CM_LISTEN as u32);
    Ok(listening)
}

fn psp_flags(flags: DAT_PSP_FLAGS, position: u8) -> DatResult {
    match edge::enum_in::<dat_psp_flags, _>(flags, position)? {
        dat_psp_flags::DAT_PSP_CONSUMER_FLAG => Ok(()),
        // Our provider never creates EPs for a PSP (ep_creator is DAT_PSP_CREATES_EP_NEVER).
        dat_psp_flags::DAT_PSP_PROVIDER_FLAG => Err(DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_psp_create(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: DAT_CONN_QUAL,
    evd_handle: DAT_EVD_HANDLE,
    psp_flags: DAT_PSP_FLAGS,
    psp_handle: *mut DAT_PSP_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let evd = cr_evd(&ia, evd_handle)?;
        self::psp_flags(psp_flags, 4)?;
        let out = edge::out(psp_handle, 5)?;
        // A qualifier a PSP of this IA listens on already: the error class with the type, as
        // OpenFabrics finds its own PSP before its provider tries the port.
        if ia.service_point(conn_qual).is_some_and(|sp| matches!(sp.kind, SpKind::Public { .. })) {
            return Err(DatError::bare(Type::DAT_CONN_QUAL_IN_USE));
        }
        let sp = ServicePoint::new(ia.clone(), evd, SpKind::Public { flags: psp_flags });
        listen(&sp, conn_qual)?;
        out.set(ia.adopt(Arc::new(Psp(sp)))?);
        ia.counters.bump(dat_ia_counters::DCNT_IA_PSP_CREATE as u32);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_psp_create_any(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: *mut DAT_CONN_QUAL,
    evd_handle: DAT_EVD_HANDLE,
    psp_flags: DAT_PSP_FLAGS,
    psp_handle: *mut DAT_PSP_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let qual_out = edge::out(conn_qual, 2)?;
        let evd = cr_evd(&ia, evd_handle)?;
        self::psp_flags(psp_flags, 4)?;
        let out = edge::out(psp_handle, 5)?;
        let sp = ServicePoint::new(ia.clone(), evd, SpKind::Public { flags: psp_flags });
        let qual = listen(&sp, 0)?;
        out.set(ia.adopt(Arc::new(Psp(sp)))?);
        ia.counters.bump(dat_ia_counters::DCNT_IA_PSP_CREATE_ANY as u32);
        qual_out.set(qual);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_psp_query(
    psp_handle: DAT_PSP_HANDLE,
    psp_param_mask: DAT_PSP_PARAM_MASK,
    psp_param: *mut DAT_PSP_PARAM,
) -> DAT_RETURN {
    entry! {
        let psp = edge::object::<Psp>(psp_handle, Sub::DAT_INVALID_HANDLE_PSP)?;
        edge::flags_in(psp_param_mask, dat_psp_param_mask::DAT_PSP_FIELD_ALL as u32, 2)?;
        let out = edge::out(psp_param, 3)?;
        let flags = match psp.0.kind {
            SpKind::Public { flags } => flags,
            _ => 0,
        };
        out.set(DAT_PSP_PARAM {
            ia_handle: psp.0.ia.handle(),
            conn_qual: psp.0.conn_qual(),
            evd_handle: psp.0.evd.handle(),
            psp_flags: flags,
        });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_psp_free(psp_handle: DAT_PSP_HANDLE) -> DAT_RETURN {
    entry! {
        let psp = edge::object::<Psp>(psp_handle, Sub::DAT_INVALID_HANDLE_PSP)?;
        psp.0.ia.release::<Psp>(psp_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_PSP))?;
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_rsp_create(
    ia_handle: DAT_IA_HANDLE,
    conn_qual: DAT_CONN_QUAL,
    ep_handle: DAT_EP_HANDLE,
    evd_handle: DAT_EVD_HANDLE,
    rsp_handle: *mut DAT_RSP_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let ep = edge::object::<Ep>(ep_handle, Sub::DAT_INVALID_HANDLE_EP)?;
        let evd = cr_evd(&ia, evd_handle)?;
        let out = edge::out(rsp_handle, 5)?;
        let sp = ep.reserve(|| {
            let sp = ServicePoint::new(ia.clone(), evd, SpKind::Reserved { ep: ep.clone() });
            listen(&sp, conn_qual)?;
            Ok(sp)
        })?;
        out.set(ia.adopt(Arc::new(Rsp(sp)))?);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_rsp_query(
    rsp_handle: DAT_RSP_HANDLE,
    rsp_param_mask: DAT_RSP_PARAM_MASK,
    rsp_param: *mut DAT_RSP_PARAM,
) -> DAT_RETURN {
    entry! {
        let rsp = edge::object::<Rsp>(rsp_handle, Sub::DAT_INVALID_HANDLE_RSP)?;
        edge::flags_in(rsp_param_mask, dat_rsp_param_mask::DAT_RSP_FIELD_ALL as u32, 2)?;
        let out = edge::out(rsp_param, 3)?;
        let ep = match &rsp.0.kind {
            SpKind::Reserved { ep } => ep.handle(),
            _ => std::ptr::null_mut(),
        };
        out.set(DAT_RSP_PARAM {
            ia_handle: rsp.0.ia.handle(),
            conn_qual: rsp.0.conn_qual(),
            evd_handle: rsp.0.evd.handle(),
            ep_handle: ep,
        });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_rsp_free(rsp_handle: DAT_RSP_HANDLE) -> DAT_RETURN {
    entry! {
        let rsp = edge::object::<Rsp>(rsp_handle, Sub::DAT_INVALID_HANDLE_RSP)?;
        rsp.0.ia.release::<Rsp>(rsp_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_RSP))?;
        if let SpKind::Reserved { ep } = &rsp.0.kind {
            ep.unreserve();
        }
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_csp_create(
    ia_handle: DAT_IA_HANDLE,
    comm: *mut DAT_COMM,
    address: DAT_IA_ADDRESS_PTR,
    evd_handle: DAT_EVD_HANDLE,
    csp_handle: *mut DAT_CSP_HANDLE,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let evd = cr_evd(&ia, evd_handle)?;
        // SAFETY: non-NULL pointers point to their types (API contract).
        let comm = unsafe { edge::required_in(comm as *const DAT_COMM, 2)? };
        // SAFETY: as above.
        let sin = unsafe { common_address(address, 3)? };
        // The CSP listens at the IA's address (or any of its own), on the address's port.
        let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
        if !ip.is_unspecified() && ip != ia.ipv4() {
            return Err(DatError::new(Type::DAT_INVALID_ADDRESS, Sub::DAT_INVALID_ADDRESS_UNREACHABLE));
        }
        let out = edge::out(csp_handle, 5)?;
        let kind = SpKind::Common { comm: Box::new(comm), address: Box::new(sin) };
        let sp = ServicePoint::new(ia.clone(), evd, kind);
        listen(&sp, u64::from(u16::from_be(sin.sin_port)))?;
        out.set(ia.adopt(Arc::new(Csp(sp)))?);
        Ok(())
    }
}

/// A common service point's address, or the remote one of `dat_ep_common_connect`: IPv4 with
/// a port (which names the service point, as a qualifier up to 0xffff does).
///
/// # Safety
/// A non-NULL `address` points to a sockaddr, a sockaddr_in when its family is AF_INET.
pub(crate) unsafe fn common_address(
    address: DAT_IA_ADDRESS_PTR,
    position: u8,
) -> DatResult<libc::sockaddr_in> {
    // SAFETY: a non-NULL address points to a sockaddr (API contract).
    let sa = unsafe { edge::required_in(address as *const libc::sockaddr, position)? };
    if i32::from(sa.sa_family) != libc::AF_INET {
        return Err(DatError::new(
            Type::DAT_INVALID_ADDRESS,
            Sub::DAT_INVALID_ADDRESS_UNSUPPORTED,
        ));
    }
    // SAFETY: an AF_INET address is a sockaddr_in.
    let sin = unsafe { edge::required_in(address as *const libc::sockaddr_in, position)? };
    if sin.sin_port == 0 {
        return Err(DatError::invalid_arg(position));
    }
    Ok(sin)
}

#[no_mangle]
pub unsafe extern "C" fn dat_csp_query(
    csp_handle: DAT_CSP_HANDLE,
    csp_param_mask: DAT_CSP_PARAM_MASK,
    csp_param: *mut DAT_CSP_PARAM,
) -> DAT_RETURN {
    entry! {
        let csp = edge::object::<Csp>(csp_handle, Sub::DAT_INVALID_HANDLE_CSP)?;
        edge::flags_in(csp_param_mask, dat_csp_param_mask::DAT_CSP_FIELD_ALL as u32, 2)?;
        let out = edge::out(csp_param, 3)?;
        let SpKind::Common { comm, address } = &csp.0.kind else {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CSP));
        };
        out.set(DAT_CSP_PARAM {
            ia_handle: csp.0.ia.handle(),
            comm: &**comm as *const DAT_COMM as *mut DAT_COMM,
            address_ptr: &**address as *const libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
            evd_handle: csp.0.evd.handle(),
        });
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_csp_free(csp_handle: DAT_CSP_HANDLE) -> DAT_RETURN {
    entry! {
        let csp = edge::object::<Csp>(csp_handle, Sub::DAT_INVALID_HANDLE_CSP)?;
        csp.0.ia.release::<Csp>(csp_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CSP))?;
        Ok(())
    }
}

fn cr(h: DAT_CR_HANDLE) -> DatResult<Arc<Cr>> {
    edge::object::<Cr>(h, Sub::DAT_INVALID_HANDLE_CR)
}

#[no_mangle]
pub unsafe extern "C" fn dat_cr_query(
    cr_handle: DAT_CR_HANDLE,
    cr_param_mask: DAT_CR_PARAM_MASK,
    cr_param: *mut DAT_CR_PARAM,
) -> DAT_RETURN {
    entry! {
        let cr = cr(cr_handle)?;
        edge::flags_in(cr_param_mask, dat_cr_param_mask::DAT_CR_FIELD_ALL as u32, 2)?;
        let out = edge::out(cr_param, 3)?;
        let local_ep = match &cr.sp.kind {
            SpKind::Reserved { ep } => ep.handle(),
            _ => std::ptr::null_mut(),
        };
        out.set(DAT_CR_PARAM {
            remote_ia_address_ptr: &*cr.remote as *const libc::sockaddr_in as DAT_IA_ADDRESS_PTR,
            remote_port_qual: u64::from(cr.remote_port),
            private_data_size: cr.private_data.len() as DAT_COUNT,
            private_data: cr.private_data.as_ptr() as DAT_PVOID,
            local_ep_handle: local_ep,
        });
        Ok(())
    }
}

/// # Safety
/// `data` points to `size` bytes when `size` is positive (API contract).
unsafe fn private_data<'a>(size: DAT_COUNT, data: DAT_PVOID, position: u8) -> DatResult<&'a [u8]> {
    if size > limits::MAX_PRIVATE_DATA_SIZE {
        return Err(DatError::invalid_arg(position));
    }
    // SAFETY: `data` points to `size` bytes when `size` is positive (our caller's promise).
    unsafe { edge::slice_in(data as *const u8, size, position) }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cr_accept(
    cr_handle: DAT_CR_HANDLE,
    ep_handle: DAT_EP_HANDLE,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
) -> DAT_RETURN {
    entry! {
        let cr = cr(cr_handle)?;
        // "If the local Endpoint is specified by the Connection Request, the ep_handle shall
        // be DAT_HANDLE_NULL" (an RSP's request); otherwise it names an EP of the CR's IA.
        let (ep, on) = match (cr.named_ep(), ep_handle.is_null()) {
            (Some(ep), true) => (ep.clone(), AcceptOn::OfTheRequest),
            (Some(_), false) => return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP)),
            (None, _) => (edge::object::<Ep>(ep_handle, Sub::DAT_INVALID_HANDLE_EP)?, AcceptOn::Given),
        };
        if !Arc::ptr_eq(&ep.ia, &cr.ia) {
            // An EP of another IA (of another provider, perhaps) cannot carry this request.
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
        }
        // SAFETY: `private_data` holds `private_data_size` bytes when the size is positive (API
        // contract).
        let pd = unsafe { self::private_data(private_data_size, private_data, 3)? };
        if cr.datagram != Ep::is_datagram(&ep.inner.lock()) {
            // A UD EP's request is accepted by a UD EP, an RC one by an RC one.
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP));
        }
        if pd.len() > cr.accept_data_limit {
            return Err(DatError::invalid_arg(3));
        }
        let take = || cr.take_request().ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR));
        let request = if cr.datagram {
            ep.check_accepts_datagrams()?;
            take()?
        } else {
            ep.begin_accept(on, cr.sp.conn_qual(), take)?
        };
        // The CR is consumed by the accept.
        cr.ia.release::<Cr>(cr_handle);
        request.accept(ep, pd)?;
        cr.ia.counters.bump(dat_ia_counters::DCNT_IA_SP_CR_ACCEPTED as u32);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cr_reject(
    cr_handle: DAT_CR_HANDLE,
    private_data_size: DAT_COUNT,
    private_data: DAT_PVOID,
) -> DAT_RETURN {
    entry! {
        let cr = cr(cr_handle)?;
        // SAFETY: `private_data` holds `private_data_size` bytes when the size is positive (API
        // contract).
        let pd = unsafe { self::private_data(private_data_size, private_data, 2)? };
        // Reject with the consumer's private data before the release refuses with none.
        cr.reject(pd);
        let cr = cr.ia.release::<Cr>(cr_handle).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR))?;
        cr.ia.counters.bump(dat_ia_counters::DCNT_IA_SP_CR_REJECTED as u32);
        cr.ia.counters.bump(dat_ia_counters::DCNT_IA_CM_USER_REJ_TX as u32);
        // "If rejected, the Local Endpoint point transitions into Unconnected state."
        cr.request_gone();
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_cr_handoff(
    cr_handle: DAT_CR_HANDLE,
    handoff: DAT_CONN_QUAL,
) -> DAT_RETURN {
    entry! {
        let cr = cr(cr_handle)?;
        // "another Connection Qualifier on the same IA": one a service point of the CR's IA
        // listens on (0 names none: a PSP created with it listens on any port).
        let target = (handoff != 0).then(|| cr.ia.service_point(handoff)).flatten().ok_or(DatError::invalid_arg(2))?;
        let request = cr.take_request().ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_CR))?;
        // "This operation also destroys the Connection Request instance"; the request, which
        // it no longer holds, arrives at the other service point as a new CR.
        cr.ia.release::<Cr>(cr_handle);
        // An RSP's EP no longer waits for it.
        cr.request_gone();
        target.arrive(request);
        Ok(())
    }
}
