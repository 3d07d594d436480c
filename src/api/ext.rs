//! `dat_extension_op`: the C shim (src/ext/shim.c) reads the variadic arguments and calls
//! [`libdat_extension_op`]. The IB extension's data transfers (RDMA write with immediate data,
//! fetch-and-add, compare-and-swap) are posted as the standard ones are, with the same checks;
//! `dat_ib_open_query` / `dat_ib_close_query` open an IA for a query and close it; the
//! operations no transport of ours carries are `DAT_NOT_IMPLEMENTED`.
//!
//! `dat_strerror_extension` and `dat_strerror_ext_status` name an extension's return codes and
//! completion statuses, with OpenFabrics' strings (its header defines them inline).

use std::ffi::{c_char, CStr};

use super::edge::{self, entry};
use super::registry::error_names;
use super::{ep, ia};
use crate::abi::*;
use crate::error::{DatError, DatResult, Sub, Type};
use crate::handle::{self, Kind};
use crate::objects::counters::{reset_evd, Reading};
use crate::objects::device_counters;
use crate::objects::ep::Ep;
use crate::objects::evd::Evd;
use crate::objects::extension::{Extended, ATOMIC_LEN};
use crate::objects::ia::Ia;

/// The shim's argument array: each argument widened to 64 bits, in call order.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ExtArgs {
    pub count: i32,
    pub v: [u64; 8],
}

/// Called by the shim only; not exported from the shared library.
#[no_mangle]
pub unsafe extern "C" fn libdat_extension_op(
    handle: DAT_HANDLE,
    op: i32,
    args: *const ExtArgs,
) -> DAT_RETURN {
    entry! {
        if op != dat_ib_op::DAT_IB_OPEN_QUERY_OP as i32 && handle::kind_of(handle).is_none() {
            return Err(DatError::invalid_handle(Sub::DAT_INVALID_HANDLE1));
        }
        let Some(op) = u32::try_from(op).ok().and_then(|o| dat_ib_op::try_from(o).ok()) else {
            return Err(DatError::invalid_arg(2));
        };
        // SAFETY: the shim passes its argument array, read as the operation's macro passes
        // the arguments.
        let v = unsafe { edge::required_in(args, 3)? }.v;
        // Each operation's pointers are the caller's, in the places its macro passes them.
        match op {
            // SAFETY: the local and remote triplets the macro passes (API contract).
            dat_ib_op::DAT_IB_FETCH_AND_ADD_OP => unsafe {
                post_atomic(handle, Extended::FetchAdd(v[0]), v[1] as *const DAT_LMR_TRIPLET, v[2], v[3] as *const DAT_RMR_TRIPLET, v[4] as u32, 4)
            },
            // SAFETY: as for fetch-and-add.
            dat_ib_op::DAT_IB_CMP_AND_SWAP_OP => unsafe {
                let compare_swap = Extended::CompareSwap { compare: v[0], swap: v[1] };
                post_atomic(handle, compare_swap, v[2] as *const DAT_LMR_TRIPLET, v[3], v[4] as *const DAT_RMR_TRIPLET, v[5] as u32, 5)
            },
            // SAFETY: the local IOV of `segments` triplets and the remote triplet the macro passes
            // (API contract).
            dat_ib_op::DAT_IB_RDMA_WRITE_IMMED_OP => unsafe {
                let (segments, local, remote) = (v[0] as i64 as DAT_COUNT, v[1] as *const DAT_LMR_TRIPLET, v[3] as *const DAT_RMR_TRIPLET);
                let write = Extended::WriteImmediate(v[4] as u32);
                let cookie = DAT_DTO_COOKIE::from_u64(v[2]);
                ep::post_request(handle, segments, local, cookie, Some(remote), v[5] as u32, 7, write.carrier(), Some(write), None)
            },
            // SAFETY: the local IOV of v[0] triplets and the address handle the macro passes (API
            // contract).
            dat_ib_op::DAT_IB_UD_SEND_OP => unsafe {
                post_datagram(handle, v[0] as i64 as DAT_COUNT, v[1] as *const DAT_LMR_TRIPLET, v[2] as *const DAT_IB_ADDR_HANDLE, v[3], v[4] as u32)
            },
            dat_ib_op::DAT_IB_UD_AH_FREE_OP => {
                // SAFETY: a non-NULL address handle pointer points to one (API contract).
                let ah = unsafe { edge::read_in(v[0] as *const DAT_IB_ADDR_HANDLE) };
                free_address_handle(handle, ah)
            }
            // A UD exchange's resources go as it ends (its answer or its failure): nothing is
            // left to free.
            dat_ib_op::DAT_IB_UD_CM_FREE_OP => edge::object::<Ep>(handle, Sub::DAT_INVALID_HANDLE_EP).map(drop),
            dat_ib_op::DAT_IB_START_COUNTERS_OP => sample_device_counters(handle, v[0], device_counters::start),
            dat_ib_op::DAT_IB_STOP_COUNTERS_OP => sample_device_counters(handle, v[0], device_counters::stop),
            dat_ib_op::DAT_IB_OPEN_QUERY_OP => {
                // SAFETY: the macro passes the caller's name (read no further than a name may go).
                let name = unsafe { edge::name_in(v[0] as *const c_char, 1)? };
                ia::open_query(name, v[1] as *mut DAT_IA_HANDLE, v[2], v[3] as *mut DAT_IA_ATTR, v[4], v[5] as *mut DAT_PROVIDER_ATTR)
            }
            dat_ib_op::DAT_IB_CLOSE_QUERY_OP => ia::close_query(handle),
            // SAFETY: the counter array the macro passes, as long as the counters asked for (API
            // contract).
            dat_ib_op::DAT_IB_QUERY_COUNTERS_OP => unsafe { query_counters(handle, v[0] as i64, v[1] as *mut u64, v[2] as i64 != 0) },
            dat_ib_op::DAT_IB_PRINT_COUNTERS_OP => print_counters(handle, v[0] as i64, v[1] as i64 != 0),
            _ => Err(DatError::not_implemented()),
        }
    }
}

/// Zeroes one counter (by index) of the object read.
type Reset = Box<dyn Fn(usize)>;

/// The counters of the IA, EP or EVD `handle` names.
fn counters_of(handle: DAT_HANDLE) -> DatResult<(Reading, Reset)> {
    match handle::kind_of(handle) {
        Some(Kind::Ia) => {
            let ia = edge::object::<Ia>(handle, Sub::DAT_INVALID_HANDLE_IA)?;
            Ok((
                Reading::ia(&ia.counters),
                Box::new(move |i| ia.counters.reset(i)),
            ))
        }
        Some(Kind::Ep) => {
            let ep = edge::object::<Ep>(handle, Sub::DAT_INVALID_HANDLE_EP)?;
            let reading = Reading::ep(&ep.counters, &ep.inner.lock().posted);
            Ok((
                reading,
                Box::new(move |i| {
                    ep.counters.reset(i);
                    ep.inner.lock().posted.reset(i);
                }),
            ))
        }
        Some(Kind::Evd) => {
            let evd = edge::object::<Evd>(handle, Sub::DAT_INVALID_HANDLE1)?;
            Ok((
                Reading::evd(&evd.counters),
                Box::new(move |i| reset_evd(&evd.counters, i)),
            ))
        }
        // As OpenFabrics: other objects keep no counters.
        _ => Err(DatError::bare(Type::DAT_INVALID_HANDLE)),
    }
}

/// `dat_ib_query_counters`: counter `which` of the object (all of them when `which` is its
/// count, `DCNT_*_ALL_COUNTERS`) lands at its index in `out`, as OpenFabrics writes it.
///
/// # Safety
/// A non-NULL `out` has room for the counters up to the one asked for.
unsafe fn query_counters(handle: DAT_HANDLE, which: i64, out: *mut u64, reset: bool) -> DatResult {
    let (reading, zero) = counters_of(handle)?;
    let range = usize::try_from(which)
        .ok()
        .and_then(|w| reading.covered(w))
        .ok_or(DatError::invalid_arg(3))?;
    if out.is_null() {
        return Err(DatError::invalid_arg(4));
    }
    for i in range {
        // SAFETY: the caller's array holds the object's counters up to the one asked for
        // (the macro's contract, as OpenFabrics fills it).
        unsafe { out.add(i).write(reading.values[i]) };
        if reset {
            zero(i);
        }
    }
    Ok(())
}

/// `dat_ib_print_counters`: each counter asked for, on stdout, as OpenFabrics prints them.
fn print_counters(handle: DAT_HANDLE, which: i64, reset: bool) -> DatResult {
    use std::io::Write;
    let (reading, zero) = counters_of(handle)?;
    let range = usize::try_from(which)
        .ok()
        .and_then(|w| reading.covered(w))
        .ok_or(DatError::invalid_arg(3))?;
    let host = crate::runtime::sys::hostname();
    let pid = std::process::id();
    let mut out = std::io::stdout().lock();
    for i in range {
        let _ = writeln!(
            out,
            " {host}:0x{pid:x}: {} = {} ",
            (reading.name)(i as u32),
            reading.values[i]
        );
        if reset {
            zero(i);
        }
    }
    Ok(())
}

/// Posts an atomic: its local segment receives the peer's original word (the first
/// `ATOMIC_LEN` bytes of it; a shorter one is refused as argument `local_position`).
///
/// # Safety
/// Non-NULL `local` and `remote` point to a triplet each.
unsafe fn post_atomic(
    handle: DAT_HANDLE,
    op: Extended,
    local: *const DAT_LMR_TRIPLET,
    cookie: u64,
    remote: *const DAT_RMR_TRIPLET,
    flags: u32,
    local_position: u8,
) -> DatResult {
    // SAFETY: a non-NULL local IOV points to a triplet (API contract).
    let mut segment = unsafe { edge::required_in(local, local_position)? };
    if segment.segment_length < ATOMIC_LEN {
        return Err(DatError::invalid_arg(local_position));
    }
    segment.segment_length = ATOMIC_LEN;
    let cookie = DAT_DTO_COOKIE::from_u64(cookie);
    // SAFETY: `segment` is one triplet on our stack; a non-NULL `remote` points to a triplet
    // (our caller's promise).
    unsafe {
        ep::post_request(
            handle,
            1,
            &segment,
            cookie,
            Some(remote),
            flags,
            local_position + 3,
            op.carrier(),
            Some(op),
            None,
        )
    }
}

type Sample = fn(
    &crate::objects::counters::Counters<{ crate::objects::counters::IA_COUNTERS }>,
    dat_ia_counter_type,
    &dyn Fn(&str) -> Option<u64>,
);

/// `dat_ib_start_counter` / `dat_ib_stop_counter` on an IA: its device's counters of one
/// kind (an unknown kind is argument 2).
fn sample_device_counters(handle: DAT_HANDLE, kind: u64, sample: Sample) -> DatResult {
    let ia = edge::object::<Ia>(handle, Sub::DAT_INVALID_HANDLE_IA)?;
    let kind = u32::try_from(kind)
        .ok()
        .and_then(|k| dat_ia_counter_type::try_from(k).ok())
        .ok_or(DatError::invalid_arg(2))?;
    sample(&ia.counters, kind, &|name| {
        ia.transport.device_counter(kind, name)
    });
    Ok(())
}

/// `dat_ib_post_send_ud`: a datagram from a UD EP to the EP an address handle of its UD
/// connection events reaches (one the transport does not know, which its post looks up, is
/// argument 4).
///
/// # Safety
/// `local` points to `segments` triplets, and a non-NULL `ah` to an address handle.
unsafe fn post_datagram(
    handle: DAT_HANDLE,
    segments: DAT_COUNT,
    local: *const DAT_LMR_TRIPLET,
    ah: *const DAT_IB_ADDR_HANDLE,
    cookie: u64,
    flags: u32,
) -> DatResult {
    edge::object::<Ep>(handle, Sub::DAT_INVALID_HANDLE_EP)?;
    // SAFETY: a non-NULL address handle pointer points to one (API contract).
    let ah = unsafe { edge::required_in(ah, 4)? };
    let datagram = Extended::Datagram {
        ah: ah.ah as usize,
        qpn: ah.qpn,
    };
    let cookie = DAT_DTO_COOKIE::from_u64(cookie);
    // SAFETY: `local` points to `segments` triplets (our caller's promise).
    unsafe {
        ep::post_request(
            handle,
            segments,
            local,
            cookie,
            None,
            flags,
            6,
            datagram.carrier(),
            Some(datagram),
            None,
        )
    }
}

/// `dat_ib_ud_ah_free`: destroys an address handle a UD connection event brought (`ah`: the
/// consumer's, None for NULL).
fn free_address_handle(handle: DAT_HANDLE, ah: Option<DAT_IB_ADDR_HANDLE>) -> DatResult {
    let ep = edge::object::<Ep>(handle, Sub::DAT_INVALID_HANDLE_EP)?;
    let ah = ah.ok_or(DatError::invalid_arg(2))?;
    if !ep.ia.transport.free_address_handle(ah.ah as usize) {
        return Err(DatError::invalid_arg(2));
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn dat_strerror_extension(
    value: DAT_IB_RETURN,
    message: *mut *const c_char,
) -> DAT_RETURN {
    entry! {
        let out = edge::out(message, 2)?;
        // Every code of the IB extension's type (DAT_IB_ERR, DAT_IB_COLLECTIVE_ERR) has its name;
        // any other is a standard DAT code.
        let text = if value & DAT_TYPE_MASK as u32 == dat_ib_return::DAT_IB_ERR as u32 {
            c"DAT_IB_ERR"
        } else {
            error_names(value).ok_or(DatError::invalid_arg(1))?.0
        };
        out.set(text.as_ptr());
        Ok(())
    }
}

#[no_mangle]
pub unsafe extern "C" fn dat_strerror_ext_status(
    value: DAT_IB_STATUS,
    message: *mut *const c_char,
) -> DAT_RETURN {
    entry! {
        let out = edge::out(message, 2)?;
        let text: &CStr = match dat_ib_status::try_from(value) {
            // OpenFabrics renders success as a blank.
            Ok(dat_ib_status::DAT_OP_SUCCESS) => c" ",
            Ok(dat_ib_status::DAT_IB_OP_ERR) => c"DAT_IB_OP_ERR",
            Ok(dat_ib_status::DAT_IB_COLL_COMP_ERR) => c"DAT_IB_COLL_COMP_ERR",
            Err(_) => {
                out.set(c"unknown extension status".as_ptr());
                return Err(DatError::invalid_arg(1));
            }
        };
        out.set(text.as_ptr());
        Ok(())
    }
}
