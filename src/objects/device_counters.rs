//! `dat_ib_start_counter` / `dat_ib_stop_counter`: an IA's device counters sampled over an
//! interval, as OpenFabrics samples them. Start puts each counter's current value where the
//! IA's counter is; stop leaves there what it grew by since. The kinds: the IB CM's messages,
//! retries and duplicates (`DCNT_IA_CM`), the port's link errors (`DCNT_IA_LNK`) and the
//! device's diagnostic counters (`DCNT_IA_DIAG`), each read by the IA's transport (an RDMA
//! device's sysfs files); one the transport cannot read counts 0, as on a TCP IA, which has no
//! device.

use super::counters::{Counters, IA_COUNTERS};
use crate::abi::*;

use dat_ia_counters as C;

/// The IB CM's counters: files under its port's directory.
const CM: &[(C, &str)] = &[
    (C::DCNT_IA_CM_REQ_TX, "cm_tx_msgs/req"),
    (C::DCNT_IA_CM_REP_TX, "cm_tx_msgs/rep"),
    (C::DCNT_IA_CM_RTU_TX, "cm_tx_msgs/rtu"),
    (C::DCNT_IA_CM_USER_REJ_TX, "cm_tx_msgs/rej"),
    (C::DCNT_IA_CM_MRA_TX, "cm_tx_msgs/mra"),
    (C::DCNT_IA_CM_DREQ_TX, "cm_tx_msgs/dreq"),
    (C::DCNT_IA_CM_DREP_TX, "cm_tx_msgs/drep"),
    (C::DCNT_IA_CM_REQ_RX, "cm_rx_msgs/req"),
    (C::DCNT_IA_CM_REP_RX, "cm_rx_msgs/rep"),
    (C::DCNT_IA_CM_RTU_RX, "cm_rx_msgs/rtu"),
    (C::DCNT_IA_CM_USER_REJ_RX, "cm_rx_msgs/rej"),
    (C::DCNT_IA_CM_MRA_RX, "cm_rx_msgs/mra"),
    (C::DCNT_IA_CM_DREQ_RX, "cm_rx_msgs/dreq"),
    (C::DCNT_IA_CM_DREP_RX, "cm_rx_msgs/drep"),
    (C::DCNT_IA_CM_ERR_REQ_RETRY, "cm_tx_retries/req"),
    (C::DCNT_IA_CM_ERR_REP_RETRY, "cm_tx_retries/rep"),
    (C::DCNT_IA_CM_ERR_RTU_RETRY, "cm_tx_retries/rtu"),
    (C::DCNT_IA_CM_ERR_MRA_RETRY, "cm_tx_retries/mra"),
    (C::DCNT_IA_CM_ERR_DREQ_RETRY, "cm_tx_retries/dreq"),
    (C::DCNT_IA_CM_ERR_DREP_RETRY, "cm_tx_retries/drep"),
    (C::DCNT_IA_CM_ERR_REQ_DUP, "cm_tx_duplicates/req"),
    (C::DCNT_IA_CM_ERR_REP_DUP, "cm_tx_duplicates/rep"),
    (C::DCNT_IA_CM_ERR_RTU_DUP, "cm_tx_duplicates/rtu"),
    (C::DCNT_IA_CM_ERR_MRA_DUP, "cm_tx_duplicates/mra"),
    (C::DCNT_IA_CM_ERR_DREQ_DUP, "cm_tx_duplicates/dreq"),
    (C::DCNT_IA_CM_ERR_DREP_DUP, "cm_tx_duplicates/drep"),
];

/// The port's counters of link errors and waits.
const LINK: &[(C, &str)] = &[
    (C::DCNT_IA_LNK_ERR_RCV, "port_rcv_errors"),
    (
        C::DCNT_IA_LNK_ERR_RCV_REM_PHYS,
        "port_rcv_remote_physical_errors",
    ),
    (
        C::DCNT_IA_LNK_ERR_RCV_CONSTRAINT,
        "port_rcv_constraint_errors",
    ),
    (C::DCNT_IA_LNK_ERR_XMT_DISCARDS, "port_xmit_discards"),
    (
        C::DCNT_IA_LNK_ERR_XMT_CONTRAINT,
        "port_xmit_constraint_errors",
    ),
    (C::DCNT_IA_LNK_ERR_INTEGRITY, "local_link_integrity_errors"),
    (
        C::DCNT_IA_LNK_ERR_EXC_BUF_OVERRUN,
        "excessive_buffer_overrun_errors",
    ),
    (
        C::DCNT_IA_LNK_WARN_RCV_SW_RELAY,
        "port_rcv_switch_relay_errors",
    ),
    (C::DCNT_IA_LNK_WARN_XMT_WAIT, "port_xmit_wait"),
];

/// The device's diagnostic counters (queue errors).
const DIAG: &[(C, &str)] = &[
    (C::DCNT_IA_DIAG_ERR_RQ_RAE, "rq_num_rae"),
    (C::DCNT_IA_DIAG_ERR_RQ_OOS, "rq_num_oos"),
    (C::DCNT_IA_DIAG_ERR_RQ_RIRE, "rq_num_rire"),
    (C::DCNT_IA_DIAG_ERR_RQ_UDSDPRD, "rq_num_udsdprd"),
    (C::DCNT_IA_DIAG_ERR_SQ_RAE, "sq_num_rae"),
    (C::DCNT_IA_DIAG_ERR_SQ_OOS, "sq_num_oos"),
    (C::DCNT_IA_DIAG_ERR_SQ_RIRE, "sq_num_rire"),
    (C::DCNT_IA_DIAG_ERR_SQ_RREE, "sq_num_rree"),
    (C::DCNT_IA_DIAG_ERR_SQ_TREE, "sq_num_tree"),
];

fn table(kind: dat_ia_counter_type) -> &'static [(C, &'static str)] {
    match kind {
        dat_ia_counter_type::DCNT_IA_CM => CM,
        dat_ia_counter_type::DCNT_IA_LNK => LINK,
        dat_ia_counter_type::DCNT_IA_DIAG => DIAG,
    }
}

/// `dat_ib_start_counter`: each counter of `kind` takes the device's value (`read` names
/// the file; None counts 0).
pub fn start(
    counters: &Counters<IA_COUNTERS>,
    kind: dat_ia_counter_type,
    read: &dyn Fn(&str) -> Option<u64>,
) {
    for (counter, file) in table(kind) {
        counters.set(*counter as usize, read(file).unwrap_or(0));
    }
}

/// `dat_ib_stop_counter`: each counter of `kind` holds what the device's value grew by since
/// the start.
pub fn stop(
    counters: &Counters<IA_COUNTERS>,
    kind: dat_ia_counter_type,
    read: &dyn Fn(&str) -> Option<u64>,
) {
    let at_start = counters.snapshot();
    for (counter, file) in table(kind) {
        let now = read(file).unwrap_or(0);
        counters.set(
            *counter as usize,
            now.wrapping_sub(at_start[*counter as usize]),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_leaves_what_each_counter_grew_by_since_start() {
        let counters = Counters::<IA_COUNTERS>::default();
        let value = std::cell::Cell::new(10);
        start(&counters, dat_ia_counter_type::DCNT_IA_CM, &|f| {
            (f == "cm_tx_msgs/req").then(|| value.get())
        });
        assert_eq!(counters.snapshot()[C::DCNT_IA_CM_REQ_TX as usize], 10);
        value.set(13);
        stop(&counters, dat_ia_counter_type::DCNT_IA_CM, &|f| {
            (f == "cm_tx_msgs/req").then(|| value.get())
        });
        let after = counters.snapshot();
        assert_eq!(
            (
                after[C::DCNT_IA_CM_REQ_TX as usize],
                after[C::DCNT_IA_CM_REP_TX as usize]
            ),
            (3, 0)
        );
        assert_eq!(
            after[C::DCNT_IA_LNK_ERR_RCV as usize],
            0,
            "another kind is left alone"
        );
    }
}
