//! Opening an IA and listing the registry for a 1.2 caller: the `u1.2` lines of `dat.conf`
//! and the built-in IAs.

use super::returns::return12;
use crate::abi::*;
use crate::abi12 as v1;
use crate::api::edge::entry;
use crate::api::{ia, registry as api_registry};
use crate::registry::{self, API_MAJOR_1};

/// `dat_ia_open` of 1.2 is a macro onto this, with major version 1.
#[export_name = "dat_ia_openv@DAT_1.2"]
pub unsafe extern "C" fn dat_ia_openv(
    ia_name_ptr: DAT_NAME_PTR,
    async_evd_min_qlen: DAT_COUNT,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_handle: *mut DAT_IA_HANDLE,
    dapl_major: DAT_UINT32,
    _dapl_minor: DAT_UINT32,
    thread_safety: DAT_BOOLEAN,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: forwarded from our caller; the arguments are laid out as 2.0's.
        unsafe {
            ia::openv(ia_name_ptr, async_evd_min_qlen, async_evd_handle, ia_handle, dapl_major, thread_safety, API_MAJOR_1)
        }
    })
}

#[export_name = "dat_registry_list_providers@DAT_1.2"]
pub unsafe extern "C" fn dat_registry_list_providers(
    max_to_return: DAT_COUNT,
    entries_returned: *mut DAT_COUNT,
    dat_provider_list: *mut *mut DAT_PROVIDER_INFO,
) -> v1::DAT_RETURN {
    return12(entry! {
        // SAFETY: forwarded from our caller; the provider info is laid out as 2.0's.
        unsafe {
            api_registry::list_providers(registry::entries_serving(API_MAJOR_1), API_MAJOR_1, max_to_return, entries_returned, dat_provider_list)
        }
    })
}

/// The DAT version a 1.2 caller is told it speaks.
const DAPL_MAJOR_1_2: DAT_UINT32 = API_MAJOR_1;
const DAPL_MINOR_1_2: DAT_UINT32 = 2;

#[export_name = "dat_ia_query@DAT_1.2"]
pub unsafe extern "C" fn dat_ia_query(
    ia_handle: DAT_IA_HANDLE,
    async_evd_handle: *mut DAT_EVD_HANDLE,
    ia_attr_mask: v1::DAT_IA_ATTR_MASK,
    ia_attr: *mut v1::DAT_IA_ATTR,
    provider_attr_mask: v1::DAT_PROVIDER_ATTR_MASK,
    provider_attr: *mut v1::DAT_PROVIDER_ATTR,
) -> v1::DAT_RETURN {
    // 1.2's masks: the same bits as 2.0's for the fields both have, fewer fields; which fields
    // are asked for changes nothing (every field is filled), so a mask is only checked.
    let ia_query = ia::AttrQuery {
        mask: ia_attr_mask,
        all: v1::DAT_IA_FIELD_ALL,
        out: ia_attr,
        form: ia_attr12,
    };
    let provider_query = ia::AttrQuery {
        mask: provider_attr_mask,
        all: v1::DAT_PROVIDER_FIELD_ALL,
        out: provider_attr,
        form: provider_attr12,
    };
    return12(entry! { ia::query(ia_handle, async_evd_handle, ia_query, provider_query) })
}

/// The IA's attributes in 1.2's layout: its sizes 64-bit, no zero-based or extension fields
/// (the named attributes are laid out alike: two string pointers).
fn ia_attr12(a: DAT_IA_ATTR) -> v1::DAT_IA_ATTR {
    v1::DAT_IA_ATTR {
        adapter_name: a.adapter_name,
        vendor_name: a.vendor_name,
        hardware_version_major: a.hardware_version_major,
        hardware_version_minor: a.hardware_version_minor,
        firmware_version_major: a.firmware_version_major,
        firmware_version_minor: a.firmware_version_minor,
        ia_address_ptr: a.ia_address_ptr,
        max_eps: a.max_eps,
        max_dto_per_ep: a.max_dto_per_ep,
        max_rdma_read_per_ep_in: a.max_rdma_read_per_ep_in,
        max_rdma_read_per_ep_out: a.max_rdma_read_per_ep_out,
        max_evds: a.max_evds,
        max_evd_qlen: a.max_evd_qlen,
        max_iov_segments_per_dto: a.max_iov_segments_per_dto,
        max_lmrs: a.max_lmrs,
        max_lmr_block_size: v1::DAT_VLEN::from(a.max_lmr_block_size),
        max_lmr_virtual_address: a.max_lmr_virtual_address,
        max_pzs: a.max_pzs,
        max_message_size: v1::DAT_VLEN::from(a.max_message_size),
        max_rdma_size: v1::DAT_VLEN::from(a.max_rdma_size),
        max_rmrs: a.max_rmrs,
        max_rmr_target_address: a.max_rmr_target_address,
        max_srqs: a.max_srqs,
        max_ep_per_srq: a.max_ep_per_srq,
        max_recv_per_srq: a.max_recv_per_srq,
        max_iov_segments_per_rdma_read: a.max_iov_segments_per_rdma_read,
        max_iov_segments_per_rdma_write: a.max_iov_segments_per_rdma_write,
        max_rdma_read_in: a.max_rdma_read_in,
        max_rdma_read_out: a.max_rdma_read_out,
        max_rdma_read_per_ep_in_guaranteed: a.max_rdma_read_per_ep_in_guaranteed,
        max_rdma_read_per_ep_out_guaranteed: a.max_rdma_read_per_ep_out_guaranteed,
        num_transport_attr: a.num_transport_attr,
        transport_attr: a.transport_attr.cast(),
        num_vendor_attr: a.num_vendor_attr,
        vendor_attr: a.vendor_attr.cast(),
    }
}

/// The provider's attributes in 1.2's layout, the DAT version 1.2: no RMR scope, signal-safety
/// or HA fields.
fn provider_attr12(p: DAT_PROVIDER_ATTR) -> v1::DAT_PROVIDER_ATTR {
    v1::DAT_PROVIDER_ATTR {
        provider_name: p.provider_name,
        provider_version_major: p.provider_version_major,
        provider_version_minor: p.provider_version_minor,
        dapl_version_major: DAPL_MAJOR_1_2,
        dapl_version_minor: DAPL_MINOR_1_2,
        lmr_mem_types_supported: p.lmr_mem_types_supported,
        iov_ownership_on_return: p.iov_ownership_on_return,
        dat_qos_supported: p.dat_qos_supported,
        completion_flags_supported: p.completion_flags_supported,
        is_thread_safe: p.is_thread_safe,
        max_private_data_size: p.max_private_data_size,
        supports_multipath: p.supports_multipath,
        ep_creator: p.ep_creator,
        pz_support: p.pz_support,
        optimal_buffer_alignment: p.optimal_buffer_alignment,
        evd_stream_merging_supported: p.evd_stream_merging_supported,
        srq_supported: p.srq_supported,
        srq_watermarks_supported: p.srq_watermarks_supported,
        srq_ep_pz_difference_supported: p.srq_ep_pz_difference_supported,
        srq_info_supported: p.srq_info_supported,
        ep_recv_info_supported: p.ep_recv_info_supported,
        lmr_sync_req: p.lmr_sync_req,
        dto_async_return_guaranteed: p.dto_async_return_guaranteed,
        rdma_write_for_rdma_read_req: p.rdma_write_for_rdma_read_req,
        num_provider_specific_attr: p.num_provider_specific_attr,
        provider_specific_attr: p.provider_specific_attr.cast(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn the_1_2_layouts_are_the_headers() {
        // Offsets the 1.2 headers give (offsetof in C): the sizes widen to 64 bits.
        assert_eq!(offset_of!(v1::DAT_IA_ATTR, max_lmr_block_size), 568);
        assert_eq!(offset_of!(v1::DAT_IA_ATTR, max_message_size), 592);
        assert_eq!(offset_of!(v1::DAT_IA_ATTR, num_transport_attr), 660);
        assert_eq!(size_of::<v1::DAT_IA_ATTR>(), 688);
        assert_eq!(
            offset_of!(v1::DAT_PROVIDER_ATTR, num_provider_specific_attr),
            488
        );
        assert_eq!(size_of::<v1::DAT_PROVIDER_ATTR>(), 504);
    }

    #[test]
    fn ia_attributes_keep_their_values_in_the_wider_fields() {
        let mut a = <DAT_IA_ATTR as Zeroable>::zeroed();
        ia::fill_name(&mut a.adapter_name, "tcp-lo");
        a.max_eps = 7;
        a.max_lmr_block_size = u32::MAX;
        a.max_message_size = 1 << 31;
        a.max_rdma_size = 12345;
        a.max_rmr_target_address = 0xffff_ffff_ffff;
        a.max_rdma_read_per_ep_out_guaranteed = 1;
        a.num_vendor_attr = 3;
        a.zb_supported = 1;
        let b = ia_attr12(a);
        assert_eq!(b.adapter_name[..7], a.adapter_name[..7]);
        assert_eq!(b.max_eps, 7);
        assert_eq!(b.max_lmr_block_size, u64::from(u32::MAX));
        assert_eq!(b.max_message_size, 1 << 31);
        assert_eq!(b.max_rdma_size, 12345);
        assert_eq!(b.max_rmr_target_address, 0xffff_ffff_ffff);
        assert_eq!(b.max_rdma_read_per_ep_out_guaranteed, 1);
        assert_eq!(b.num_vendor_attr, 3);
    }

    #[test]
    fn a_1_2_caller_is_told_version_1_2() {
        let mut p = <DAT_PROVIDER_ATTR as Zeroable>::zeroed();
        p.dapl_version_major = 2;
        p.dapl_version_minor = 0;
        p.provider_version_minor = 1;
        p.max_private_data_size = 200;
        p.evd_stream_merging_supported[5][4] = 1;
        p.rdma_write_for_rdma_read_req = 1;
        p.num_provider_specific_attr = 2;
        let q = provider_attr12(p);
        assert_eq!((q.dapl_version_major, q.dapl_version_minor), (1, 2));
        assert_eq!(q.provider_version_minor, 1);
        assert_eq!(q.max_private_data_size, 200);
        assert_eq!(q.evd_stream_merging_supported[5][4], 1);
        assert_eq!(q.rdma_write_for_rdma_read_req, 1);
        assert_eq!(q.num_provider_specific_attr, 2);
    }

    #[test]
    fn a_1_2_query_takes_1_2_masks_and_fills_1_2_attributes() {
        let (mut ia, mut async_evd) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a NUL-terminated name and live out-pointers.
        let rc =
            unsafe { dat_ia_openv(c"tcp-lo".as_ptr() as _, 8, &mut async_evd, &mut ia, 1, 2, 0) };
        assert_eq!(rc, 0);
        let mut a = std::mem::MaybeUninit::<v1::DAT_IA_ATTR>::uninit();
        let mut p = std::mem::MaybeUninit::<v1::DAT_PROVIDER_ATTR>::uninit();
        let (all_ia, all_provider) = (v1::DAT_IA_FIELD_ALL, v1::DAT_PROVIDER_FIELD_ALL);
        // SAFETY: a live IA and out-pointers.
        let rc = unsafe {
            dat_ia_query(
                ia,
                std::ptr::null_mut(),
                all_ia,
                a.as_mut_ptr(),
                all_provider,
                p.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: the query succeeded: both are written.
        let (a, p) = unsafe { (a.assume_init(), p.assume_init()) };
        // SAFETY: the name is NUL-terminated (fill_name).
        let name = unsafe { std::ffi::CStr::from_ptr(a.adapter_name.as_ptr()) };
        assert_eq!(name.to_str(), Ok("tcp-lo"));
        assert_eq!((p.dapl_version_major, p.dapl_version_minor), (1, 2));
        assert!(a.max_message_size > 0 && a.max_message_size <= u64::from(u32::MAX));
        // A bit 1.2 has no field for (2.0's vendor attributes) is argument 3.
        let mut spare = std::mem::MaybeUninit::<v1::DAT_IA_ATTR>::uninit();
        // SAFETY: as above.
        let rc = unsafe {
            dat_ia_query(
                ia,
                std::ptr::null_mut(),
                DAT_IA_FIELD_IA_VENDOR_ATTR,
                spare.as_mut_ptr(),
                0,
                std::ptr::null_mut(),
            )
        };
        let arg3 = v1::DAT_CLASS_ERROR
            | u32::from(v1::dat_return_type::DAT_INVALID_PARAMETER)
            | u32::from(v1::dat_return_subtype::DAT_INVALID_ARG3);
        assert_eq!(rc, arg3);
        // SAFETY: a live IA.
        assert_eq!(unsafe { crate::api::ia::dat_ia_close(ia, 0) }, 0);
    }
}
