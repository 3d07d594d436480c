//! `dat_cno_query` of 1.2: its param is the IA and the agent (2.0 has a proxy type and a
//! union), its mask bits `DAT_CNO_FIELD_IA_HANDLE` and `DAT_CNO_FIELD_AGENT`.

use super::returns::return12;
use crate::abi as v2;
use crate::abi12 as v1;
use crate::api::cno;
use crate::api::edge::entry;

/// Every bit the 1.2 mask may have (`DAT_CNO_FIELD_ALL`).
const KNOWN: v1::DAT_CNO_PARAM_MASK = v1::dat_cno_param_mask::DAT_CNO_FIELD_ALL as u32;

#[export_name = "dat_cno_query@DAT_1.2"]
pub unsafe extern "C" fn dat_cno_query(
    cno_handle: v1::DAT_CNO_HANDLE,
    cno_param_mask: v1::DAT_CNO_PARAM_MASK,
    cno_param: *mut v1::DAT_CNO_PARAM,
) -> v1::DAT_RETURN {
    return12(entry! { cno::query(cno_handle, cno_param_mask, KNOWN, cno_param, param12) })
}

/// The 1.2 param of a CNO: its IA and agent. A CNO made by 2.0's `dat_cno_fd_create` has a
/// descriptor, not an agent: its agent is none (no data, no function).
fn param12(p: v2::DAT_CNO_PARAM) -> v1::DAT_CNO_PARAM {
    let agent = if p.proxy_type == v2::dat_proxy_type::DAT_PROXY_TYPE_AGENT as u32 {
        // SAFETY: the proxy type says the union holds the agent.
        unsafe { p.proxy.agent }
    } else {
        <v2::DAT_OS_WAIT_PROXY_AGENT as v2::Zeroable>::zeroed()
    };
    v1::DAT_CNO_PARAM {
        ia_handle: p.ia_handle,
        agent: v1::DAT_OS_WAIT_PROXY_AGENT {
            instance_data: agent.instance_data,
            proxy_agent_func: agent.proxy_agent_func,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    unsafe extern "C" fn wake(_: v2::DAT_PVOID, _: v2::DAT_EVD_HANDLE) {}

    #[test]
    fn the_1_2_param_is_the_ia_and_the_agent() {
        assert_eq!(size_of::<v1::DAT_CNO_PARAM>(), 24);
        assert_eq!(offset_of!(v1::DAT_CNO_PARAM, agent), 8);
        let mut p = <v2::DAT_CNO_PARAM as v2::Zeroable>::zeroed();
        p.ia_handle = 0x1a as v2::DAT_IA_HANDLE;
        p.proxy_type = v2::dat_proxy_type::DAT_PROXY_TYPE_AGENT as u32;
        p.proxy.agent = v2::DAT_OS_WAIT_PROXY_AGENT {
            instance_data: 0xda7a as v2::DAT_PVOID,
            proxy_agent_func: Some(wake),
        };
        let q = param12(p);
        assert_eq!(q.ia_handle, 0x1a as v2::DAT_IA_HANDLE);
        assert_eq!(q.agent.instance_data, 0xda7a as v2::DAT_PVOID);
        let wake_at = wake as unsafe extern "C" fn(_, _) as usize;
        assert_eq!(q.agent.proxy_agent_func.map(|f| f as usize), Some(wake_at));
    }

    #[test]
    fn a_descriptor_cno_has_no_agent() {
        let mut p = <v2::DAT_CNO_PARAM as v2::Zeroable>::zeroed();
        p.proxy_type = v2::dat_proxy_type::DAT_PROXY_TYPE_FD as u32;
        p.proxy.fd = 9;
        let q = param12(p);
        assert!(q.agent.instance_data.is_null());
        assert!(q.agent.proxy_agent_func.is_none());
    }

    #[test]
    fn the_1_2_mask_is_three_bits_wide() {
        assert_eq!(KNOWN, 0x3);
    }
}
