//! Shared receive queues for a 1.2 caller: the query, whose states 1.2 numbers the other way
//! round (OPERATIONAL 0, ERROR 1; 2.0: ERROR 0, OPERATIONAL 1, and a SHUTDOWN 1.2 lacks).

use super::query::query_into;
use crate::abi as v2;
use crate::abi::DAT_SRQ_HANDLE;
use crate::abi12 as v1;
use crate::api::srq as api_srq;

/// A 2.0 SRQ state as 1.2's: SHUTDOWN, which 1.2 has no name for, is its ERROR (the queue
/// takes no more receives).
pub fn state12(s: v2::DAT_SRQ_STATE) -> v1::DAT_SRQ_STATE {
    match v2::dat_srq_state::try_from(s) {
        Ok(v2::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL) => {
            v1::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as v1::DAT_SRQ_STATE
        }
        _ => v1::dat_srq_state::DAT_SRQ_STATE_ERROR as v1::DAT_SRQ_STATE,
    }
}

/// A 2.0 SRQ param as 1.2's: laid out alike, the state renumbered.
pub fn param12(p: &v2::DAT_SRQ_PARAM) -> v1::DAT_SRQ_PARAM {
    v1::DAT_SRQ_PARAM {
        ia_handle: p.ia_handle,
        srq_state: state12(p.srq_state),
        pz_handle: p.pz_handle,
        max_recv_dtos: p.max_recv_dtos,
        max_recv_iov: p.max_recv_iov,
        low_watermark: p.low_watermark,
        available_dto_count: p.available_dto_count,
        outstanding_dto_count: p.outstanding_dto_count,
    }
}

/// The mask: the same bits in both APIs.
#[export_name = "dat_srq_query@DAT_1.2"]
pub unsafe extern "C" fn dat_srq_query(
    srq_handle: DAT_SRQ_HANDLE,
    srq_param_mask: v1::DAT_SRQ_PARAM_MASK,
    srq_param: *mut v1::DAT_SRQ_PARAM,
) -> v1::DAT_RETURN {
    query_into(
        srq_param,
        // SAFETY: the param is NULL or ours.
        |ours| unsafe { api_srq::dat_srq_query(srq_handle, srq_param_mask, ours) },
        param12,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_by_name() {
        let s = |x: v2::dat_srq_state| state12(x as u32);
        assert_eq!(
            s(v2::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL),
            v1::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as u32
        );
        assert_eq!(
            s(v2::dat_srq_state::DAT_SRQ_STATE_ERROR),
            v1::dat_srq_state::DAT_SRQ_STATE_ERROR as u32
        );
        assert_eq!(
            s(v2::dat_srq_state::DAT_SRQ_STATE_SHUTDOWN),
            v1::dat_srq_state::DAT_SRQ_STATE_ERROR as u32
        );
        // The values really are swapped: a copy would be wrong.
        assert_ne!(
            v2::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as u32,
            v1::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as u32
        );
    }

    #[test]
    fn param_fields() {
        let p = v2::DAT_SRQ_PARAM {
            ia_handle: 1 as v2::DAT_HANDLE,
            srq_state: v2::dat_srq_state::DAT_SRQ_STATE_OPERATIONAL as u32,
            pz_handle: 2 as v2::DAT_HANDLE,
            max_recv_dtos: 3,
            max_recv_iov: 4,
            low_watermark: 5,
            available_dto_count: 6,
            outstanding_dto_count: 7,
        };
        let q = param12(&p);
        assert_eq!(
            (q.ia_handle as usize, q.pz_handle as usize, q.srq_state),
            (1, 2, 0)
        );
        assert_eq!(
            (
                q.max_recv_dtos,
                q.max_recv_iov,
                q.low_watermark,
                q.available_dto_count,
                q.outstanding_dto_count
            ),
            (3, 4, 5, 6, 7)
        );
    }
}
