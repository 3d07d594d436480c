//! `DAT_RETURN` codes between the two APIs. The core speaks 2.0; a 1.2 caller gets the same
//! type and subtype by name in 1.2's numbering (76 of the 102 subtypes moved, and
//! `DAT_NOT_IMPLEMENTED` is another value). The few 2.0 codes 1.2 has no name for become the
//! nearest 1.2 one.

use crate::abi as v2;
use crate::abi12 as v1;

/// The 2.0 types and subtypes that 1.2 names too, in 1.2's order.
macro_rules! by_name {
    (types [$($t:ident,)+] subtypes [$($s:ident,)+]) => {
        fn type12(t: v2::dat_return_type) -> v1::dat_return_type {
            match t {
                $(v2::dat_return_type::$t => v1::dat_return_type::$t,)+
                v2::dat_return_type::DAT_PORT_IN_USE => v1::dat_return_type::DAT_CONN_QUAL_IN_USE,
                v2::dat_return_type::DAT_COMM_NOT_SUPPORTED
                | v2::dat_return_type::DAT_EXTENSION_BASE => v1::dat_return_type::DAT_MODEL_NOT_SUPPORTED,
                v2::dat_return_type::DAT_RESERVED_LMR => v1::dat_return_type::DAT_INVALID_STATE,
            }
        }

        fn subtype12(s: v2::dat_return_subtype) -> v1::dat_return_subtype {
            match s {
                $(v2::dat_return_subtype::$s => v1::dat_return_subtype::$s,)+
                v2::dat_return_subtype::DAT_INVALID_STATE_SRQ_SHUTDOWN => {
                    v1::dat_return_subtype::DAT_INVALID_STATE_SRQ_ERROR
                }
                _ => v1::dat_return_subtype::DAT_NO_SUBTYPE,
            }
        }

        fn type20(t: v1::dat_return_type) -> v2::dat_return_type {
            match t {
                $(v1::dat_return_type::$t => v2::dat_return_type::$t,)+
            }
        }

        fn subtype20(s: v1::dat_return_subtype) -> v2::dat_return_subtype {
            match s {
                $(v1::dat_return_subtype::$s => v2::dat_return_subtype::$s,)+
            }
        }
    };
}

by_name! {
    types [
    DAT_SUCCESS,
    DAT_ABORT,
    DAT_CONN_QUAL_IN_USE,
    DAT_INSUFFICIENT_RESOURCES,
    DAT_INTERNAL_ERROR,
    DAT_INVALID_HANDLE,
    DAT_INVALID_PARAMETER,
    DAT_INVALID_STATE,
    DAT_LENGTH_ERROR,
    DAT_MODEL_NOT_SUPPORTED,
    DAT_PROVIDER_NOT_FOUND,
    DAT_PRIVILEGES_VIOLATION,
    DAT_PROTECTION_VIOLATION,
    DAT_QUEUE_EMPTY,
    DAT_QUEUE_FULL,
    DAT_TIMEOUT_EXPIRED,
    DAT_PROVIDER_ALREADY_REGISTERED,
    DAT_PROVIDER_IN_USE,
    DAT_INVALID_ADDRESS,
    DAT_INTERRUPTED_CALL,
    DAT_CONN_QUAL_UNAVAILABLE,
    DAT_NOT_IMPLEMENTED,
    ]
    subtypes [
    DAT_NO_SUBTYPE,
    DAT_SUB_INTERRUPTED,
    DAT_RESOURCE_MEMORY,
    DAT_RESOURCE_DEVICE,
    DAT_RESOURCE_TEP,
    DAT_RESOURCE_TEVD,
    DAT_RESOURCE_PROTECTION_DOMAIN,
    DAT_RESOURCE_MEMORY_REGION,
    DAT_RESOURCE_ERROR_HANDLER,
    DAT_RESOURCE_CREDITS,
    DAT_RESOURCE_SRQ,
    DAT_INVALID_HANDLE_IA,
    DAT_INVALID_HANDLE_EP,
    DAT_INVALID_HANDLE_LMR,
    DAT_INVALID_HANDLE_RMR,
    DAT_INVALID_HANDLE_PZ,
    DAT_INVALID_HANDLE_PSP,
    DAT_INVALID_HANDLE_RSP,
    DAT_INVALID_HANDLE_CR,
    DAT_INVALID_HANDLE_CNO,
    DAT_INVALID_HANDLE_EVD_CR,
    DAT_INVALID_HANDLE_EVD_REQUEST,
    DAT_INVALID_HANDLE_EVD_RECV,
    DAT_INVALID_HANDLE_EVD_CONN,
    DAT_INVALID_HANDLE_EVD_ASYNC,
    DAT_INVALID_HANDLE_SRQ,
    DAT_INVALID_HANDLE1,
    DAT_INVALID_HANDLE2,
    DAT_INVALID_HANDLE3,
    DAT_INVALID_HANDLE4,
    DAT_INVALID_HANDLE5,
    DAT_INVALID_HANDLE6,
    DAT_INVALID_HANDLE7,
    DAT_INVALID_HANDLE8,
    DAT_INVALID_HANDLE9,
    DAT_INVALID_HANDLE10,
    DAT_INVALID_ARG1,
    DAT_INVALID_ARG2,
    DAT_INVALID_ARG3,
    DAT_INVALID_ARG4,
    DAT_INVALID_ARG5,
    DAT_INVALID_ARG6,
    DAT_INVALID_ARG7,
    DAT_INVALID_ARG8,
    DAT_INVALID_ARG9,
    DAT_INVALID_ARG10,
    DAT_INVALID_STATE_EP_UNCONNECTED,
    DAT_INVALID_STATE_EP_ACTCONNPENDING,
    DAT_INVALID_STATE_EP_PASSCONNPENDING,
    DAT_INVALID_STATE_EP_TENTCONNPENDING,
    DAT_INVALID_STATE_EP_CONNECTED,
    DAT_INVALID_STATE_EP_DISCONNECTED,
    DAT_INVALID_STATE_EP_RESERVED,
    DAT_INVALID_STATE_EP_COMPLPENDING,
    DAT_INVALID_STATE_EP_DISCPENDING,
    DAT_INVALID_STATE_EP_PROVIDERCONTROL,
    DAT_INVALID_STATE_EP_NOTREADY,
    DAT_INVALID_STATE_EP_RECV_WATERMARK,
    DAT_INVALID_STATE_EP_PZ,
    DAT_INVALID_STATE_EP_EVD_REQUEST,
    DAT_INVALID_STATE_EP_EVD_RECV,
    DAT_INVALID_STATE_EP_EVD_CONNECT,
    DAT_INVALID_STATE_EP_UNCONFIGURED,
    DAT_INVALID_STATE_EP_UNCONFRESERVED,
    DAT_INVALID_STATE_EP_UNCONFPASSIVE,
    DAT_INVALID_STATE_EP_UNCONFTENTATIVE,
    DAT_INVALID_STATE_CNO_IN_USE,
    DAT_INVALID_STATE_CNO_DEAD,
    DAT_INVALID_STATE_EVD_OPEN,
    DAT_INVALID_STATE_EVD_ENABLED,
    DAT_INVALID_STATE_EVD_DISABLED,
    DAT_INVALID_STATE_EVD_WAITABLE,
    DAT_INVALID_STATE_EVD_UNWAITABLE,
    DAT_INVALID_STATE_EVD_IN_USE,
    DAT_INVALID_STATE_EVD_CONFIG_NOTIFY,
    DAT_INVALID_STATE_EVD_CONFIG_SOLICITED,
    DAT_INVALID_STATE_EVD_CONFIG_THRESHOLD,
    DAT_INVALID_STATE_EVD_WAITER,
    DAT_INVALID_STATE_EVD_ASYNC,
    DAT_INVALID_STATE_IA_IN_USE,
    DAT_INVALID_STATE_LMR_IN_USE,
    DAT_INVALID_STATE_LMR_FREE,
    DAT_INVALID_STATE_PZ_IN_USE,
    DAT_INVALID_STATE_PZ_FREE,
    DAT_INVALID_STATE_SRQ_OPERATIONAL,
    DAT_INVALID_STATE_SRQ_ERROR,
    DAT_INVALID_STATE_SRQ_IN_USE,
    DAT_PRIVILEGES_READ,
    DAT_PRIVILEGES_WRITE,
    DAT_PRIVILEGES_RDMA_READ,
    DAT_PRIVILEGES_RDMA_WRITE,
    DAT_PROTECTION_READ,
    DAT_PROTECTION_WRITE,
    DAT_PROTECTION_RDMA_READ,
    DAT_PROTECTION_RDMA_WRITE,
    DAT_INVALID_ADDRESS_UNSUPPORTED,
    DAT_INVALID_ADDRESS_UNREACHABLE,
    DAT_INVALID_ADDRESS_MALFORMED,
    DAT_NAME_NOT_REGISTERED,
    DAT_MAJOR_NOT_FOUND,
    DAT_MINOR_NOT_FOUND,
    DAT_THREAD_SAFETY_NOT_FOUND,
    ]
}

const TYPE_MASK: u32 = 0x3fff_0000;
const SUBTYPE_MASK: u32 = 0xffff;
const CLASS_MASK: u32 = 0xc000_0000;

/// A 2.0 `DAT_RETURN` in 1.2's numbering: the class bits kept, type and subtype by name.
pub fn return12(code: v2::DAT_RETURN) -> v1::DAT_RETURN {
    if code == 0 {
        return 0;
    }
    let class = code & CLASS_MASK;
    let Ok(t) = v2::dat_return_type::try_from(code & TYPE_MASK) else {
        return code;
    };
    let sub = v2::dat_return_subtype::try_from(code & SUBTYPE_MASK)
        .map(|s| u32::from(subtype12(s)))
        .unwrap_or(code & SUBTYPE_MASK);
    class | u32::from(type12(t)) | sub
}

/// A 1.2 `DAT_RETURN` in 2.0's numbering (what `dat_strerror` is asked to name).
pub fn return20(code: v1::DAT_RETURN) -> v2::DAT_RETURN {
    if code & 0xffff_0000 == u32::from(v1::dat_return_type::DAT_NOT_IMPLEMENTED) {
        return v2::DAT_CLASS_ERROR
            | u32::from(v2::dat_return_type::DAT_NOT_IMPLEMENTED)
            | (code & SUBTYPE_MASK);
    }
    let class = code & CLASS_MASK;
    let Ok(t) = v1::dat_return_type::try_from(code & TYPE_MASK) else {
        return code;
    };
    let sub = v1::dat_return_subtype::try_from(code & SUBTYPE_MASK)
        .map(|s| u32::from(subtype20(s)))
        .unwrap_or(code & SUBTYPE_MASK);
    class | u32::from(type20(t)) | sub
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err2(t: v2::dat_return_type, s: v2::dat_return_subtype) -> u32 {
        v2::DAT_CLASS_ERROR | u32::from(t) | u32::from(s)
    }

    fn err1(t: v1::dat_return_type, s: v1::dat_return_subtype) -> u32 {
        v1::DAT_CLASS_ERROR | u32::from(t) | u32::from(s)
    }

    #[test]
    fn success_and_the_bare_waiting_statuses_keep_their_values() {
        assert_eq!(return12(0), 0);
        let empty = u32::from(v2::dat_return_type::DAT_QUEUE_EMPTY);
        assert_eq!(
            return12(empty),
            u32::from(v1::dat_return_type::DAT_QUEUE_EMPTY)
        );
    }

    #[test]
    fn moved_subtypes_are_renumbered_by_name() {
        use v1::dat_return_subtype as S1;
        use v2::dat_return_subtype as S2;
        let pairs = [
            (S2::DAT_INVALID_HANDLE1, S1::DAT_INVALID_HANDLE1),
            (S2::DAT_INVALID_ARG3, S1::DAT_INVALID_ARG3),
            (
                S2::DAT_INVALID_STATE_EP_DISCONNECTED,
                S1::DAT_INVALID_STATE_EP_DISCONNECTED,
            ),
            (S2::DAT_PRIVILEGES_READ, S1::DAT_PRIVILEGES_READ),
            (
                S2::DAT_INVALID_ADDRESS_UNREACHABLE,
                S1::DAT_INVALID_ADDRESS_UNREACHABLE,
            ),
        ];
        for (s2, s1) in pairs {
            let t2 = v2::dat_return_type::DAT_INVALID_PARAMETER;
            let t1 = v1::dat_return_type::DAT_INVALID_PARAMETER;
            assert_eq!(return12(err2(t2, s2)), err1(t1, s1), "{s2:?}");
            assert_eq!(return20(err1(t1, s1)), err2(t2, s2), "{s1:?}");
        }
        assert_ne!(
            S2::DAT_PRIVILEGES_READ as u32,
            S1::DAT_PRIVILEGES_READ as u32
        );
    }

    #[test]
    fn not_implemented_is_the_1_2_value() {
        let ni = err2(
            v2::dat_return_type::DAT_NOT_IMPLEMENTED,
            v2::dat_return_subtype::DAT_NO_SUBTYPE,
        );
        assert_eq!(return12(ni), 0xffff_0000);
        assert_eq!(return20(0xffff_0000), ni);
    }

    #[test]
    fn codes_1_2_lacks_become_the_nearest() {
        let port = err2(
            v2::dat_return_type::DAT_PORT_IN_USE,
            v2::dat_return_subtype::DAT_NO_SUBTYPE,
        );
        assert_eq!(
            return12(port),
            err1(
                v1::dat_return_type::DAT_CONN_QUAL_IN_USE,
                v1::dat_return_subtype::DAT_NO_SUBTYPE
            )
        );
        let csp = err2(
            v2::dat_return_type::DAT_INVALID_HANDLE,
            v2::dat_return_subtype::DAT_INVALID_HANDLE_CSP,
        );
        assert_eq!(
            return12(csp),
            err1(
                v1::dat_return_type::DAT_INVALID_HANDLE,
                v1::dat_return_subtype::DAT_NO_SUBTYPE
            )
        );
    }
}
