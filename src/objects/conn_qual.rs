//! Connection qualifiers and the ports they listen on. A DAT qualifier is 64 bits; a TCP or
//! rdma-cm port is 16. A qualifier up to 0xffff is its own port. A larger one is folded into
//! the ports 33534..=65534 as OpenFabrics' rdma-cm provider folds it (`SID_TO_PORT`:
//! `qual % 32001 + 33534`), so a program on either library listens and connects on the same
//! port. Two qualifiers that fold into one port cannot both listen (`DAT_CONN_QUAL_IN_USE`);
//! a connect request carries the whole qualifier, so it never reaches the other one's listener.

/// How many ports the large qualifiers fold into.
const FOLD_PORTS: u64 = 32001;
/// The first of them: the top of the port range, less `FOLD_PORTS`.
const FOLD_BASE: u64 = 65535 - FOLD_PORTS;

/// The port qualifier `qual` listens on (0 stays 0: any free port).
pub fn port(qual: u64) -> u16 {
    match u16::try_from(qual) {
        Ok(p) => p,
        // The fold lands in FOLD_BASE..FOLD_BASE + FOLD_PORTS, below 65535.
        Err(_) => (qual % FOLD_PORTS + FOLD_BASE) as u16,
    }
}

#[cfg(test)]
mod tests {
    use super::port;

    #[test]
    fn small_qualifiers_are_their_port() {
        assert_eq!(port(0), 0);
        assert_eq!(port(45248), 45248);
        assert_eq!(port(0xffff), 0xffff);
    }

    #[test]
    fn large_qualifiers_fold_as_openfabrics_folds_them() {
        // dapltest's limit tests listen on 0xAffab1e + n.
        assert_eq!(port(0xAFFAB1E), (0xAFFAB1E % 32001 + 33534) as u16);
        assert_eq!(port(0x1_0000), 35068);
        assert_eq!(port(u64::MAX), (u64::MAX % 32001 + 33534) as u16);
        for q in [0x1_0000u64, 1 << 35, 7 << 35, 0xdead_beef_cafe, u64::MAX] {
            assert!((33534..=65534).contains(&port(q)), "{q:#x}");
        }
        // Qualifiers FOLD_PORTS apart share a port: that collision is DAT_CONN_QUAL_IN_USE.
        assert_eq!(port(0x2_0000), port(0x2_0000 + 32001));
    }
}
