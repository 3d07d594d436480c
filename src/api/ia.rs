//! IA functions: dat_ia_openv, dat_ia_query, dat_ia_close.

use std::ffi::c_char;
use std::sync::Arc;

use super::edge::{self, entry};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::handle;
use crate::objects::evd::Evd;
use crate::objects::ia::{self, Ia};
use crate::objects::limits;
use crate::registry::{self, Entry, API_MAJOR};
use crate::transport::providers;

/// `DAT_EVD_ASYNC_EXISTS`: the consumer has an async EVD elsewhere.
const ASYNC_EXISTS: usize = 0x1;
/// `DAT_EVD_OUT_OF_SCOPE`: what `dat_ia_query` reports when the IA has no async EVD.
const OUT_OF_SCOPE: usize = 0x2;

#[no_mangle]
pub unsafe extern "C" fn dat_ia_openv(
    ia_name_ptr: DAT_NAME_PTR,
    async_evd_min_qlen: DAT_COUNT,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_handle: *mut DAT_IA_HANDLE,
    dapl_major: DAT_UINT32,
    _dapl_minor: DAT_UINT32,
    thread_safety: DAT_BOOLEAN,
) -> DAT_RETURN {
    entry! {
        // SAFETY: forwarded from our caller.
        unsafe {
            openv(ia_name_ptr, async_evd_min_qlen, async_evd_handle, ia_handle, dapl_major, thread_safety, API_MAJOR)
        }
    }
}

/// `dat_ia_openv` for a caller of API major version `api_major` (this one, or 1.2's entry
/// point): a request for another major version finds no provider, as in OpenFabrics'
/// registries.
///
/// # Safety
/// The pointers are the C caller's, as `dat_ia_openv` takes them.
pub(crate) unsafe fn openv(
    ia_name_ptr: DAT_NAME_PTR,
    async_evd_min_qlen: DAT_COUNT,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_handle: *mut DAT_IA_HANDLE,
    dapl_major: DAT_UINT32,
    thread_safety: DAT_BOOLEAN,
    api_major: u32,
) -> DatResult {
    {
        // SAFETY: a non-NULL name points to the caller's string, read no further than a name
        // may go.
        let name = unsafe { edge::name_in(ia_name_ptr as *const c_char, 1)? };
        let async_inout = edge::out(async_evd_handle, 3)?;
        let ia_out = edge::out(ia_handle, 4)?;
        edge::enum_in::<dat_boolean, _>(thread_safety, 7)?;
        // Both thread-safety values are served: the library is thread-safe either way.
        let entry = registry::find(name, dapl_major)
            .filter(|_| dapl_major == api_major)
            .ok_or(DatError::new(
                Type::DAT_PROVIDER_NOT_FOUND,
                Sub::DAT_NAME_NOT_REGISTERED,
            ))?;
        // SAFETY: the in-out handle is non-NULL (checked by `out` above) and points to a
        // handle, or to DAT_HANDLE_NULL (API contract).
        let requested = unsafe { edge::read_in(async_evd_handle as *const DAT_EVD_HANDLE) }
            .unwrap_or(std::ptr::null_mut());
        // Check the consumer's async EVD before creating anything.
        let shared = match requested as usize {
            0 | ASYNC_EXISTS => None,
            _ => {
                let evd = edge::object::<Evd>(requested, Sub::DAT_INVALID_HANDLE_EVD_ASYNC)?;
                if !evd.has_stream(dat_evd_flags::DAT_EVD_ASYNC_FLAG) {
                    return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EVD_ASYNC));
                }
                Some(evd)
            }
        };
        if requested.is_null() && async_evd_min_qlen <= 0 {
            return Err(DatError::invalid_arg(2));
        }
        let ia = open(entry)?;
        let ia_h = ia.register()?;
        if requested.is_null() {
            let qlen = async_evd_min_qlen.min(limits::MAX_EVD_QLEN) as usize;
            match Evd::create(&ia, qlen, None, dat_evd_flags::DAT_EVD_ASYNC_FLAG as u32) {
                Ok((evd, h)) => {
                    ia.set_async_evd(Some(evd));
                    async_inout.set(h);
                }
                Err(e) => {
                    handle::remove::<Ia>(ia_h);
                    return Err(e);
                }
            }
        } else {
            ia.set_async_evd(shared);
        }
        ia_out.set(ia_h);
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_ia_query(
    ia_handle: DAT_IA_HANDLE,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_attr_mask: DAT_IA_ATTR_MASK,
    ia_attr: *mut DAT_IA_ATTR,
    provider_attr_mask: DAT_PROVIDER_ATTR_MASK,
    provider_attr: *mut DAT_PROVIDER_ATTR,
) -> DAT_RETURN {
    entry! {
        let ia_query = AttrQuery { mask: ia_attr_mask, all: DAT_IA_FIELD_ALL, out: ia_attr, form: std::convert::identity };
        let provider_query = AttrQuery { mask: provider_attr_mask, all: DAT_PROVIDER_FIELD_ALL, out: provider_attr, form: std::convert::identity };
        query(ia_handle, async_evd_handle, ia_query, provider_query)
    }
}

/// One of the attribute structures `dat_ia_query` fills: the caller's mask and the bits it may
/// have, the caller's structure, and how it is made from 2.0's (this API's, or 1.2's layout).
pub(crate) struct AttrQuery<T, F> {
    pub mask: u64,
    pub all: u64,
    pub out: *mut T,
    pub form: F,
}

/// `dat_ia_query` for a caller whose attributes are `I` and `P`.
pub(crate) fn query<I, P>(
    ia_handle: DAT_IA_HANDLE,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_query: AttrQuery<I, impl FnOnce(DAT_IA_ATTR) -> I>,
    provider_query: AttrQuery<P, impl FnOnce(DAT_PROVIDER_ATTR) -> P>,
) -> DatResult {
    let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
    if ia_query.mask & !ia_query.all != 0 {
        return Err(DatError::invalid_arg(3));
    }
    if provider_query.mask & !provider_query.all != 0 {
        return Err(DatError::invalid_arg(5));
    }
    let ia_out = if ia_query.mask != 0 {
        Some(edge::out(ia_query.out, 4)?)
    } else {
        None
    };
    let provider_out = if provider_query.mask != 0 {
        Some(edge::out(provider_query.out, 6)?)
    } else {
        None
    };
    if let Some(out) = edge::optional_out(async_evd_handle) {
        let h = ia.async_evd();
        out.set(if h.is_null() {
            OUT_OF_SCOPE as DAT_EVD_HANDLE
        } else {
            h
        });
    }
    if let Some(out) = ia_out {
        out.set((ia_query.form)(ia_attributes(&ia)));
    }
    if let Some(out) = provider_out {
        out.set((provider_query.form)(provider_attributes(&ia)));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_ia_close(
    ia_handle: DAT_IA_HANDLE,
    ia_flags: DAT_CLOSE_FLAGS,
) -> DAT_RETURN {
    entry! {
        let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
        let flags = edge::enum_in::<dat_close_flags, _>(ia_flags, 2)?;
        close(&ia, ia_handle, flags)
    }
}

/// Opens an IA of `entry` on the transport the provider table picks for it: the one place that
/// chooses a provider, above the objects, which are handed the transport.
fn open(entry: Arc<Entry>) -> DatResult<Arc<Ia>> {
    let ip = ia::resolve_ipv4(&entry.ia_params);
    let transport = providers::for_ia(&entry, ip)?;
    Ia::open(entry, transport, ip)
}

fn close(ia: &Arc<Ia>, h: DAT_IA_HANDLE, flags: dat_close_flags) -> DatResult {
    ia.begin_close(flags == dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG)?;
    handle::remove::<Ia>(h).ok_or(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_IA))?;
    ia.free_all();
    Ok(())
}

/// `dat_ib_open_query`: opens the IA named `name` without an async EVD for a query of its
/// attributes (each filled when its pointer is not NULL), as OpenFabrics' fast query does; the
/// handle is closed by `dat_ib_close_query` (or `dat_ia_close`). As OpenFabrics: a name no
/// provider has is `DAT_PROVIDER_NOT_FOUND` (as `dat_ia_open` says it), and both attribute
/// pointers NULL is argument 5.
pub(crate) fn open_query(
    name: &str,
    ia_handle: *mut DAT_IA_HANDLE,
    ia_attr_mask: DAT_IA_ATTR_MASK,
    ia_attr: *mut DAT_IA_ATTR,
    provider_attr_mask: DAT_PROVIDER_ATTR_MASK,
    provider_attr: *mut DAT_PROVIDER_ATTR,
) -> DatResult {
    let entry = registry::find(name, API_MAJOR).ok_or(DatError::new(
        Type::DAT_PROVIDER_NOT_FOUND,
        Sub::DAT_NAME_NOT_REGISTERED,
    ))?;
    let out = edge::out(ia_handle, 2)?;
    if ia_attr.is_null() && provider_attr.is_null() {
        return Err(DatError::invalid_arg(5));
    }
    if ia_attr_mask & !DAT_IA_FIELD_ALL != 0 {
        return Err(DatError::invalid_arg(3));
    }
    if provider_attr_mask & !DAT_PROVIDER_FIELD_ALL != 0 {
        return Err(DatError::invalid_arg(5));
    }
    let ia = open(entry)?;
    if let Some(o) = edge::optional_out(ia_attr) {
        o.set(ia_attributes(&ia));
    }
    if let Some(o) = edge::optional_out(provider_attr) {
        o.set(provider_attributes(&ia));
    }
    out.set(ia.register()?);
    Ok(())
}

/// `dat_ib_close_query`: closes what `dat_ib_open_query` opened, abruptly.
pub(crate) fn close_query(ia_handle: DAT_IA_HANDLE) -> DatResult {
    let ia = edge::object::<Ia>(ia_handle, Sub::DAT_INVALID_HANDLE_IA)?;
    close(&ia, ia_handle, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG)
}

/// Copies `s` into a fixed C name buffer, always NUL-terminated.
pub(crate) fn fill_name(dst: &mut [c_char], s: &str) {
    let n = s.len().min(dst.len() - 1);
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *b as c_char;
    }
    dst[n] = 0;
}

fn ia_attributes(ia: &Ia) -> DAT_IA_ATTR {
    let mut a = DAT_IA_ATTR::zeroed();
    fill_name(&mut a.adapter_name, &ia.entry.ia_name);
    fill_name(&mut a.vendor_name, "libdat");
    a.hardware_version_major = 0;
    a.firmware_version_major = 0;
    a.ia_address_ptr = ia.address_ptr();
    let own = ia.transport.limits();
    a.max_eps = limits::MAX_EPS;
    a.max_dto_per_ep = own.max_dto_per_ep;
    a.max_rdma_read_per_ep_in = limits::MAX_RDMA_READ_PER_EP;
    a.max_rdma_read_per_ep_out = limits::MAX_RDMA_READ_PER_EP;
    a.max_evds = limits::MAX_EVDS;
    a.max_evd_qlen = limits::MAX_EVD_QLEN;
    a.max_iov_segments_per_dto = own.max_iov;
    a.max_lmrs = limits::MAX_LMRS;
    a.max_lmr_block_size = limits::MAX_LMR_BLOCK_SIZE;
    a.max_lmr_virtual_address = limits::MAX_LMR_VIRTUAL_ADDRESS;
    a.max_pzs = limits::MAX_PZS;
    a.max_message_size = own.max_message_size;
    a.max_rdma_size = own.max_rdma_size;
    a.max_rmrs = limits::MAX_RMRS;
    a.max_rmr_target_address = limits::MAX_RMR_TARGET_ADDRESS;
    // A transport without shared receive queues reports none (dat_srq_create: NOT_IMPLEMENTED).
    if let Some((srqs, recvs)) = ia.transport.srq_limits() {
        a.max_srqs = srqs;
        a.max_ep_per_srq = limits::MAX_EP_PER_SRQ;
        a.max_recv_per_srq = recvs;
    }
    a.max_iov_segments_per_rdma_read = own.max_read_iov;
    a.max_iov_segments_per_rdma_write = own.max_iov;
    a.max_rdma_read_in = limits::MAX_RDMA_READ_PER_EP * limits::MAX_EPS;
    a.max_rdma_read_out = limits::MAX_RDMA_READ_PER_EP * limits::MAX_EPS;
    a.max_rdma_read_per_ep_in_guaranteed = dat_boolean::DAT_TRUE as DAT_BOOLEAN;
    a.max_rdma_read_per_ep_out_guaranteed = dat_boolean::DAT_TRUE as DAT_BOOLEAN;
    a.zb_supported = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    a.extension_supported = dat_extension::DAT_EXTENSION_IB as DAT_EXTENSION;
    a.extension_version = DAT_IB_EXTENSION_VERSION;
    a
}

fn provider_attributes(ia: &Ia) -> DAT_PROVIDER_ATTR {
    let mut p = DAT_PROVIDER_ATTR::zeroed();
    let t = dat_boolean::DAT_TRUE as DAT_BOOLEAN;
    fill_name(
        &mut p.provider_name,
        &format!("libdat-{}", ia.entry.transport.name()),
    );
    p.provider_version_major = 0;
    p.provider_version_minor = 1;
    p.dapl_version_major = registry::API_MAJOR;
    p.dapl_version_minor = registry::API_MINOR;
    p.lmr_mem_types_supported =
        dat_mem_type::DAT_MEM_TYPE_VIRTUAL as u32 | dat_mem_type::DAT_MEM_TYPE_LMR as u32;
    p.iov_ownership_on_return = dat_iov_ownership::DAT_IOV_CONSUMER as DAT_IOV_OWNERSHIP;
    p.dat_qos_supported = dat_qos::DAT_QOS_BEST_EFFORT as DAT_QOS;
    p.completion_flags_supported = dat_completion_flags::DAT_COMPLETION_SUPPRESS_FLAG as u32
        | dat_completion_flags::DAT_COMPLETION_SOLICITED_WAIT_FLAG as u32
        | dat_completion_flags::DAT_COMPLETION_UNSIGNALLED_FLAG as u32
        | dat_completion_flags::DAT_COMPLETION_BARRIER_FENCE_FLAG as u32;
    p.is_thread_safe = t;
    p.max_private_data_size = limits::MAX_PRIVATE_DATA_SIZE;
    p.supports_multipath = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    p.ep_creator = dat_ep_creator_for_psp::DAT_PSP_CREATES_EP_NEVER as DAT_EP_CREATOR_FOR_PSP;
    p.pz_support = dat_pz_support::DAT_PZ_UNIQUE as DAT_PZ_SUPPORT;
    p.optimal_buffer_alignment = limits::OPTIMAL_BUFFER_ALIGNMENT;
    p.evd_stream_merging_supported = [[t; 6]; 6];
    p.srq_supported = if ia.transport.srq_limits().is_some() {
        t
    } else {
        dat_boolean::DAT_FALSE as DAT_BOOLEAN
    };
    p.lmr_sync_req = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    p.dto_async_return_guaranteed = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    p.rdma_write_for_rdma_read_req = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    p.rmr_scope_supported = dat_rmr_scope::DAT_RMR_SCOPE_EP as DAT_RMR_SCOPE;
    p.is_signal_safe = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    p.ha_supported = dat_boolean::DAT_FALSE as DAT_BOOLEAN;
    let named = ia.provider_specific();
    p.num_provider_specific_attr = named.len() as DAT_COUNT;
    p.provider_specific_attr = named.as_ptr() as *mut DAT_NAMED_ATTR;
    p
}
