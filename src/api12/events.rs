//! `DAT_EVENT` between the two APIs. The core queues 2.0 events (120 bytes); a 1.2 caller
//! reads 48-byte ones: the same event numbers and statuses, a 64-bit `transfered_length` and
//! no `operation` or `rmr_context` in a DTO completion, no `truncate_flag` in a CR arrival,
//! no extension data. The event numbers 1.2 does not have (HA, extension, and any other) have
//! no 1.2 form: [`event12`] gives `None` for them, and the 1.2 entry points drop such an event
//! and hand over the next one.

use crate::abi as v2;
use crate::abi12 as v1;

use v2::dat_event_number as N2;

/// The 1.2 form of a 2.0 event, or `None` for an event a 1.2 program cannot represent.
pub fn event12(e: &v2::DAT_EVENT) -> Option<v1::DAT_EVENT> {
    let number = N2::try_from(e.event_number).ok()?;
    // SAFETY: each arm reads the member of the union that its event number says is there
    // (the core writes that member for that number; a software event's is the consumer's
    // pointer, copied whole).
    let event_data = unsafe {
        match number {
            N2::DAT_DTO_COMPLETION_EVENT => {
                let d = e.event_data.dto_completion_event_data;
                v1::DAT_EVENT_DATA {
                    dto_completion_event_data: v1::DAT_DTO_COMPLETION_EVENT_DATA {
                        ep_handle: d.ep_handle,
                        user_cookie: context12(d.user_cookie),
                        status: dto_status12(d.status),
                        transfered_length: v1::DAT_VLEN::from(d.transfered_length),
                    },
                }
            }
            N2::DAT_RMR_BIND_COMPLETION_EVENT => {
                let d = e.event_data.rmr_completion_event_data;
                v1::DAT_EVENT_DATA {
                    rmr_completion_event_data: v1::DAT_RMR_BIND_COMPLETION_EVENT_DATA {
                        rmr_handle: d.rmr_handle,
                        user_cookie: context12(d.user_cookie),
                        status: dto_status12(d.status),
                    },
                }
            }
            N2::DAT_CONNECTION_REQUEST_EVENT => {
                let d = e.event_data.cr_arrival_event_data;
                v1::DAT_EVENT_DATA {
                    cr_arrival_event_data: v1::DAT_CR_ARRIVAL_EVENT_DATA {
                        // A PSP's or RSP's handle (1.2 has no CSP): the pointer either way.
                        sp_handle: v1::DAT_SP_HANDLE {
                            psp_handle: d.sp_handle.psp_handle,
                        },
                        local_ia_address_ptr: d.local_ia_address_ptr.cast(),
                        conn_qual: d.conn_qual,
                        cr_handle: d.cr_handle,
                    },
                }
            }
            N2::DAT_CONNECTION_EVENT_ESTABLISHED
            | N2::DAT_CONNECTION_EVENT_PEER_REJECTED
            | N2::DAT_CONNECTION_EVENT_NON_PEER_REJECTED
            | N2::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
            | N2::DAT_CONNECTION_EVENT_DISCONNECTED
            | N2::DAT_CONNECTION_EVENT_BROKEN
            | N2::DAT_CONNECTION_EVENT_TIMED_OUT
            | N2::DAT_CONNECTION_EVENT_UNREACHABLE => {
                let d = e.event_data.connect_event_data;
                v1::DAT_EVENT_DATA {
                    connect_event_data: v1::DAT_CONNECTION_EVENT_DATA {
                        ep_handle: d.ep_handle,
                        private_data_size: d.private_data_size,
                        private_data: d.private_data,
                    },
                }
            }
            N2::DAT_ASYNC_ERROR_EVD_OVERFLOW
            | N2::DAT_ASYNC_ERROR_IA_CATASTROPHIC
            | N2::DAT_ASYNC_ERROR_EP_BROKEN
            | N2::DAT_ASYNC_ERROR_TIMED_OUT
            | N2::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR => {
                let d = e.event_data.asynch_error_event_data;
                v1::DAT_EVENT_DATA {
                    asynch_error_event_data: v1::DAT_ASYNCH_ERROR_EVENT_DATA {
                        dat_handle: d.dat_handle,
                        reason: d.reason,
                    },
                }
            }
            N2::DAT_SOFTWARE_EVENT => v1::DAT_EVENT_DATA {
                software_event_data: v1::DAT_SOFTWARE_EVENT_DATA {
                    pointer: e.event_data.software_event_data.pointer,
                },
            },
            N2::DAT_HA_DOWN_TO_1
            | N2::DAT_HA_UP_TO_MULTI_PATH
            | N2::DAT_EXTENSION_EVENT
            | N2::DAT_IB_EXTENSION_RANGE_BASE
            | N2::DAT_IW_EXTENSION_RANGE_BASE => return None,
        }
    };
    Some(v1::DAT_EVENT {
        event_number: e.event_number,
        evd_handle: e.evd_handle,
        event_data,
    })
}

/// 2.0's `DAT_DTO_ERR_LOCAL_MM_ERROR` (a local memory-management error) is 1.2's local
/// protection error; every other status has the same value in both.
fn dto_status12(s: v2::DAT_DTO_COMPLETION_STATUS) -> v1::DAT_DTO_COMPLETION_STATUS {
    if s == v2::dat_dto_completion_status::DAT_DTO_ERR_LOCAL_MM_ERROR as u32 {
        v1::dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION as u32
    } else {
        s
    }
}

/// A context (or cookie): the same 8 bytes in both APIs.
fn context12(c: v2::DAT_CONTEXT) -> v1::DAT_CONTEXT {
    v1::DAT_CONTEXT { as_64: c.as_u64() }
}

fn context20(c: v1::DAT_CONTEXT) -> v2::DAT_CONTEXT {
    // SAFETY: every member is 8 bytes of plain data (a pointer, a u64, an unsigned long long),
    // so the 8 bytes are a valid u64 whichever member the consumer set.
    v2::DAT_CONTEXT::from_u64(unsafe { c.as_64 })
}

/// The 2.0 form of a 1.2 event (what `dat_evd_post_se` is given): every 1.2 event has one.
/// A number 1.2 does not name keeps its value and the software event's pointer, for the core
/// to judge (it accepts software events only).
pub fn event20(e: &v1::DAT_EVENT) -> v2::DAT_EVENT {
    use v1::dat_event_number as N1;
    let mut out = <v2::DAT_EVENT as v2::Zeroable>::zeroed();
    out.event_number = e.event_number;
    out.evd_handle = e.evd_handle;
    // SAFETY: as in `event12`: each arm reads the member its event number names; a number
    // 1.2 does not name is read as the software event's pointer, a plain copy of 8 bytes that
    // every member begins with.
    out.event_data = unsafe {
        match N1::try_from(e.event_number) {
            Ok(N1::DAT_DTO_COMPLETION_EVENT) => {
                let d = e.event_data.dto_completion_event_data;
                v2::DAT_EVENT_DATA {
                    dto_completion_event_data: v2::DAT_DTO_COMPLETION_EVENT_DATA {
                        ep_handle: d.ep_handle,
                        user_cookie: context20(d.user_cookie),
                        status: d.status,
                        // A length past 2.0's 32 bits is as long as 2.0 can say.
                        transfered_length: v2::DAT_SEG_LENGTH::try_from(d.transfered_length)
                            .unwrap_or(v2::DAT_SEG_LENGTH::MAX),
                        operation: 0,
                        rmr_context: 0,
                    },
                }
            }
            Ok(N1::DAT_RMR_BIND_COMPLETION_EVENT) => {
                let d = e.event_data.rmr_completion_event_data;
                v2::DAT_EVENT_DATA {
                    rmr_completion_event_data: v2::DAT_RMR_BIND_COMPLETION_EVENT_DATA {
                        rmr_handle: d.rmr_handle,
                        user_cookie: context20(d.user_cookie),
                        status: d.status,
                    },
                }
            }
            Ok(N1::DAT_CONNECTION_REQUEST_EVENT) => {
                let d = e.event_data.cr_arrival_event_data;
                v2::DAT_EVENT_DATA {
                    cr_arrival_event_data: v2::DAT_CR_ARRIVAL_EVENT_DATA {
                        sp_handle: v2::DAT_SP_HANDLE {
                            psp_handle: d.sp_handle.psp_handle,
                        },
                        local_ia_address_ptr: d.local_ia_address_ptr.cast(),
                        conn_qual: d.conn_qual,
                        cr_handle: d.cr_handle,
                        truncate_flag: v2::dat_boolean::DAT_FALSE as v2::DAT_BOOLEAN,
                    },
                }
            }
            Ok(
                N1::DAT_CONNECTION_EVENT_ESTABLISHED
                | N1::DAT_CONNECTION_EVENT_PEER_REJECTED
                | N1::DAT_CONNECTION_EVENT_NON_PEER_REJECTED
                | N1::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
                | N1::DAT_CONNECTION_EVENT_DISCONNECTED
                | N1::DAT_CONNECTION_EVENT_BROKEN
                | N1::DAT_CONNECTION_EVENT_TIMED_OUT
                | N1::DAT_CONNECTION_EVENT_UNREACHABLE,
            ) => {
                let d = e.event_data.connect_event_data;
                v2::DAT_EVENT_DATA {
                    connect_event_data: v2::DAT_CONNECTION_EVENT_DATA {
                        ep_handle: d.ep_handle,
                        private_data_size: d.private_data_size,
                        private_data: d.private_data,
                    },
                }
            }
            Ok(
                N1::DAT_ASYNC_ERROR_EVD_OVERFLOW
                | N1::DAT_ASYNC_ERROR_IA_CATASTROPHIC
                | N1::DAT_ASYNC_ERROR_EP_BROKEN
                | N1::DAT_ASYNC_ERROR_TIMED_OUT
                | N1::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
            ) => {
                let d = e.event_data.asynch_error_event_data;
                v2::DAT_EVENT_DATA {
                    asynch_error_event_data: v2::DAT_ASYNCH_ERROR_EVENT_DATA {
                        dat_handle: d.dat_handle,
                        reason: d.reason,
                    },
                }
            }
            Ok(N1::DAT_SOFTWARE_EVENT) | Err(_) => v2::DAT_EVENT_DATA {
                software_event_data: v2::DAT_SOFTWARE_EVENT_DATA {
                    pointer: e.event_data.software_event_data.pointer,
                },
            },
        }
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    use std::ptr::null_mut;

    fn h(n: usize) -> *mut std::ffi::c_void {
        n as *mut std::ffi::c_void
    }

    fn event2(number: N2, fill: impl FnOnce(&mut v2::DAT_EVENT_DATA)) -> v2::DAT_EVENT {
        let mut e = <v2::DAT_EVENT as v2::Zeroable>::zeroed();
        e.event_number = number as u32;
        e.evd_handle = h(0xe0d);
        fill(&mut e.event_data);
        e
    }

    #[test]
    fn the_1_2_layout_is_the_headers() {
        assert_eq!(size_of::<v1::DAT_EVENT>(), 48);
        assert_eq!(size_of::<v2::DAT_EVENT>(), 120);
        assert_eq!(
            offset_of!(v1::DAT_DTO_COMPLETION_EVENT_DATA, transfered_length),
            24
        );
        assert_eq!(size_of::<v1::DAT_VLEN>(), 8);
    }

    #[test]
    fn a_dto_completion_keeps_its_fields_and_widens_its_length() {
        let e = event2(N2::DAT_DTO_COMPLETION_EVENT, |d| {
            d.dto_completion_event_data = v2::DAT_DTO_COMPLETION_EVENT_DATA {
                ep_handle: h(0xe9),
                user_cookie: v2::DAT_DTO_COOKIE {
                    as_64: 0x1122_3344_5566_7788,
                },
                status: v2::dat_dto_completion_status::DAT_DTO_ERR_FLUSHED as u32,
                transfered_length: u32::MAX,
                operation: v2::dat_dtos::DAT_DTO_RECEIVE as u32,
                rmr_context: 77,
            }
        });
        let out = event12(&e).expect("a DTO completion is a 1.2 event");
        assert_eq!(out.event_number, 1);
        assert_eq!(out.evd_handle, h(0xe0d));
        // SAFETY: a DTO completion's member, just written.
        let d = unsafe { out.event_data.dto_completion_event_data };
        assert_eq!(d.ep_handle, h(0xe9));
        // SAFETY: the cookie's 64-bit member, as written.
        assert_eq!(unsafe { d.user_cookie.as_64 }, 0x1122_3344_5566_7788);
        assert_eq!(d.status, 1);
        assert_eq!(d.transfered_length, u64::from(u32::MAX));
    }

    #[test]
    fn the_2_0_memory_management_status_is_a_local_protection_error() {
        let e = event2(N2::DAT_DTO_COMPLETION_EVENT, |d| {
            d.dto_completion_event_data.status =
                v2::dat_dto_completion_status::DAT_DTO_ERR_LOCAL_MM_ERROR as u32;
        });
        // SAFETY: a DTO completion's member.
        let d = unsafe { event12(&e).unwrap().event_data.dto_completion_event_data };
        assert_eq!(
            d.status,
            v1::dat_dto_completion_status::DAT_DTO_ERR_LOCAL_PROTECTION as u32
        );
    }

    #[test]
    fn an_rmr_bind_completion_is_copied() {
        let e = event2(N2::DAT_RMR_BIND_COMPLETION_EVENT, |d| {
            d.rmr_completion_event_data = v2::DAT_RMR_BIND_COMPLETION_EVENT_DATA {
                rmr_handle: h(0x44),
                user_cookie: v2::DAT_RMR_COOKIE { as_64: 9 },
                status: v2::dat_dto_completion_status::DAT_RMR_OPERATION_FAILED as u32,
            }
        });
        let out = event12(&e).unwrap();
        assert_eq!(out.event_number, 0x1001);
        // SAFETY: an RMR bind's member.
        let d = unsafe { out.event_data.rmr_completion_event_data };
        assert_eq!(d.rmr_handle, h(0x44));
        // SAFETY: the cookie's 64-bit member.
        assert_eq!(unsafe { d.user_cookie.as_64 }, 9);
        assert_eq!(d.status, 11);
    }

    #[test]
    fn a_cr_arrival_loses_only_its_truncate_flag() {
        let e = event2(N2::DAT_CONNECTION_REQUEST_EVENT, |d| {
            d.cr_arrival_event_data = v2::DAT_CR_ARRIVAL_EVENT_DATA {
                sp_handle: v2::DAT_SP_HANDLE {
                    psp_handle: h(0x5b),
                },
                local_ia_address_ptr: h(0xadd).cast(),
                conn_qual: 0x1234_5678_9abc,
                cr_handle: h(0xc4),
                truncate_flag: 1,
            }
        });
        let out = event12(&e).unwrap();
        assert_eq!(out.event_number, 0x2001);
        // SAFETY: a CR arrival's member.
        let d = unsafe { out.event_data.cr_arrival_event_data };
        // SAFETY: the SP handle is a pointer whichever member.
        assert_eq!(unsafe { d.sp_handle.psp_handle }, h(0x5b));
        assert_eq!(d.local_ia_address_ptr, h(0xadd).cast());
        assert_eq!(d.conn_qual, 0x1234_5678_9abc);
        assert_eq!(d.cr_handle, h(0xc4));
    }

    #[test]
    fn connection_events_keep_their_private_data() {
        let pdata = [7u8; 4];
        for n in [
            N2::DAT_CONNECTION_EVENT_ESTABLISHED,
            N2::DAT_CONNECTION_EVENT_PEER_REJECTED,
            N2::DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
            N2::DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
            N2::DAT_CONNECTION_EVENT_DISCONNECTED,
            N2::DAT_CONNECTION_EVENT_BROKEN,
            N2::DAT_CONNECTION_EVENT_TIMED_OUT,
            N2::DAT_CONNECTION_EVENT_UNREACHABLE,
        ] {
            let e = event2(n, |d| {
                d.connect_event_data = v2::DAT_CONNECTION_EVENT_DATA {
                    ep_handle: h(0xe9),
                    private_data_size: 4,
                    private_data: pdata.as_ptr() as *mut _,
                }
            });
            let out = event12(&e).unwrap();
            assert_eq!(out.event_number, n as u32);
            // SAFETY: a connection event's member.
            let d = unsafe { out.event_data.connect_event_data };
            assert_eq!(d.ep_handle, h(0xe9), "{n:?}");
            assert_eq!(d.private_data_size, 4);
            assert_eq!(d.private_data, pdata.as_ptr() as *mut _);
        }
    }

    #[test]
    fn async_errors_and_software_events_are_copied() {
        for n in [
            N2::DAT_ASYNC_ERROR_EVD_OVERFLOW,
            N2::DAT_ASYNC_ERROR_IA_CATASTROPHIC,
            N2::DAT_ASYNC_ERROR_EP_BROKEN,
            N2::DAT_ASYNC_ERROR_TIMED_OUT,
            N2::DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR,
        ] {
            let e = event2(n, |d| {
                d.asynch_error_event_data = v2::DAT_ASYNCH_ERROR_EVENT_DATA {
                    dat_handle: h(0x1a),
                    reason: 1,
                }
            });
            let out = event12(&e).unwrap();
            assert_eq!(out.event_number, n as u32);
            // SAFETY: an async error's member.
            let d = unsafe { out.event_data.asynch_error_event_data };
            assert_eq!((d.dat_handle, d.reason), (h(0x1a), 1), "{n:?}");
        }
        let e = event2(N2::DAT_SOFTWARE_EVENT, |d| {
            d.software_event_data.pointer = h(0x5e);
        });
        let out = event12(&e).unwrap();
        assert_eq!(out.event_number, 0x10001);
        // SAFETY: a software event's member.
        assert_eq!(
            // SAFETY: a software event's member.
            unsafe { out.event_data.software_event_data.pointer },
            h(0x5e)
        );
    }

    #[test]
    fn events_1_2_lacks_have_no_1_2_form() {
        for n in [
            N2::DAT_HA_DOWN_TO_1 as u32,
            N2::DAT_HA_UP_TO_MULTI_PATH as u32,
            N2::DAT_EXTENSION_EVENT as u32,
            N2::DAT_IB_EXTENSION_RANGE_BASE as u32,
            N2::DAT_IB_EXTENSION_RANGE_BASE as u32 + 3,
            N2::DAT_IW_EXTENSION_RANGE_BASE as u32,
            0x7777,
        ] {
            let mut e = event2(N2::DAT_SOFTWARE_EVENT, |_| {});
            e.event_number = n;
            assert!(event12(&e).is_none(), "{n:#x}");
        }
    }

    #[test]
    fn every_1_2_event_goes_to_2_0_and_back_unchanged() {
        let mut e1 = v1::DAT_EVENT {
            event_number: 0,
            evd_handle: h(0xe0d),
            // The member without padding: every byte of the union is set, whichever member
            // the number makes of it.
            event_data: v1::DAT_EVENT_DATA {
                cr_arrival_event_data: v1::DAT_CR_ARRIVAL_EVENT_DATA {
                    sp_handle: v1::DAT_SP_HANDLE {
                        psp_handle: h(0xe9),
                    },
                    local_ia_address_ptr: h(0xadd).cast(),
                    conn_qual: 4096,
                    cr_handle: h(0xc4),
                },
            },
        };
        for n in [
            1, 0x1001, 0x2001, 0x4001, 0x4002, 0x4003, 0x4004, 0x4005, 0x4006, 0x4007, 0x4008,
            0x8001, 0x8002, 0x8003, 0x8004, 0x8005, 0x10001,
        ] {
            e1.event_number = n;
            let e2 = event20(&e1);
            assert_eq!(e2.event_number, n);
            assert_eq!(e2.evd_handle, h(0xe0d));
            let back = event12(&e2).expect("a 1.2 event has a 1.2 form");
            assert_eq!(back.event_number, n);
            // SAFETY: the first 8 bytes of every member are a handle or pointer, written.
            let first = |d: &v1::DAT_EVENT_DATA| unsafe { d.software_event_data.pointer };
            assert_eq!(first(&back.event_data), h(0xe9), "{n:#x}");
        }
    }

    #[test]
    fn a_posted_software_event_keeps_its_pointer() {
        let e1 = v1::DAT_EVENT {
            event_number: v1::dat_event_number::DAT_SOFTWARE_EVENT as u32,
            evd_handle: null_mut(),
            event_data: v1::DAT_EVENT_DATA {
                software_event_data: v1::DAT_SOFTWARE_EVENT_DATA { pointer: h(0xabc) },
            },
        };
        let e2 = event20(&e1);
        assert_eq!(e2.event_number, 0x10001);
        // SAFETY: a software event's member.
        assert_eq!(
            // SAFETY: a software event's member.
            unsafe { e2.event_data.software_event_data.pointer },
            h(0xabc)
        );
        assert_eq!(e2.event_extension_data, [0; 8]);
    }

    #[test]
    fn a_2_0_dto_length_is_at_most_32_bits() {
        let e1 = v1::DAT_EVENT {
            event_number: 1,
            evd_handle: null_mut(),
            event_data: v1::DAT_EVENT_DATA {
                dto_completion_event_data: v1::DAT_DTO_COMPLETION_EVENT_DATA {
                    ep_handle: null_mut(),
                    user_cookie: v1::DAT_DTO_COOKIE { as_64: 0 },
                    status: 0,
                    transfered_length: 1 << 40,
                },
            },
        };
        // SAFETY: a DTO completion's member.
        let d = unsafe { event20(&e1).event_data.dto_completion_event_data };
        assert_eq!(d.transfered_length, u32::MAX);
    }
}
