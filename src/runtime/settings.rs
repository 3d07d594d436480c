//! The environment variables that tune the library, each declared once here: its name, type,
//! default and bounds, and the doc comment that documents it. Each is read the first time the
//! library asks for it and kept for the process's life (a change to the environment after that
//! is not seen), so every reader gets the same value. A malformed value (not a number, not
//! UTF-8, out of its bounds where the knob says so) means the default, never an error. The
//! library reads these nowhere else.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `LIBDAT_DEBUG` | unset: off | set (to anything, even empty or `0`): the transports' diagnostics on stderr |
//! | `LIBDAT_DEBUG_WC` | unset: off | set, with `LIBDAT_DEBUG`: every RDMA work completion on stderr, not only the failed ones |
//! | `LIBDAT_DIRECT` | on | `0`: no direct path between processes of one host; every request goes over the socket |
//! | `LIBDAT_LEASE_US` | 2 ms | the longest a polling thread holds its connections on lease after it stopped polling (at least 20) |
//! | `LIBDAT_PEER_MEMORY` | 256 MiB | the most the process keeps of its peers' messages that wait for a receive |
//! | `LIBDAT_PEER_TIMEOUT` | 20 s | how long a TCP peer may go unheard before its connection breaks; an IA's `peer_timeout=` in `dat.conf` comes first |
//! | `LIBDAT_SPIN_US` | 50 µs | how long `dat_evd_wait` makes progress itself before it sleeps, at least |
//!
//! The rest of the environment that concerns the library, read elsewhere:
//!
//! - `DAT_OVERRIDE`: the `dat.conf` path, else `/etc/dat.conf` (`registry::conf_path`; the
//!   DAT standard's variable, read as the registry loads and by `datinfo`).
//! - The C side (`src/ext`) and `build.rs` read no variable.
//! - Read by the tests alone: `LIBDAT_TEST_IA` and `LIBDAT_TEST_ADDR` (the IA the Rust tests
//!   open and its IPv4 address, `tests/common`), and the roles and arguments a test binary
//!   gives the child processes it starts: `LIBDAT_TEST_CHILD`, `LIBDAT_TEST_EXITING_CHILD`,
//!   `LIBDAT_TEST_EXIT_POLLING`, `LIBDAT_TEST_EXIT_WAITING`, `LIBDAT_TEST_HOSTILE`,
//!   `LIBDAT_TEST_MEMORY_CHILD`, `LIBDAT_TEST_OTHER_USER_CHILD`, `LIBDAT_TEST_STOPPED_CHILD`,
//!   `LIBDAT_TEST_STREAM_CHILD`, `LIBDAT_TEST_STREAM_SUBMITTER`, `LIBDAT_TEST_LEASE_HOLDER`,
//!   `LIBDAT_TEST_PORT`, `LIBDAT_TEST_AT`, `LIBDAT_TEST_RKEY`. The test and bench scripts
//!   only set the library's variables above.

use std::ffi::OsStr;
use std::sync::OnceLock;
use std::time::Duration;

/// One environment variable: read the first time it is asked for, then kept.
pub struct Knob<T> {
    /// The variable's name.
    pub name: &'static str,
    /// What the variable means when unset or malformed.
    pub default: T,
    /// What a set variable's text means: None when malformed (the default then).
    parse: fn(&OsStr) -> Option<T>,
    value: OnceLock<T>,
}

impl<T: Copy> Knob<T> {
    const fn new(name: &'static str, default: T, parse: fn(&OsStr) -> Option<T>) -> Self {
        Knob {
            name,
            default,
            parse,
            value: OnceLock::new(),
        }
    }

    /// The value, read from the environment the first time it is asked for.
    // Inlined: some are asked on the data path, where once read the answer is one load.
    #[inline]
    pub fn get(&self) -> T {
        *self
            .value
            .get_or_init(|| self.value_of(std::env::var_os(self.name).as_deref()))
    }

    /// What the variable means when set to `raw` (None: unset).
    pub fn value_of(&self, raw: Option<&OsStr>) -> T {
        raw.and_then(self.parse).unwrap_or(self.default)
    }
}

/// A number as written, nothing around it.
fn number<N: std::str::FromStr>(raw: &OsStr) -> Option<N> {
    raw.to_str()?.parse().ok()
}

/// A number, spaces around it allowed.
fn number_trimmed<N: std::str::FromStr>(raw: &OsStr) -> Option<N> {
    raw.to_str()?.trim().parse().ok()
}

/// `LIBDAT_DEBUG`: set to anything (even empty or `0`), the transports print their diagnostics
/// on stderr: why a connection, an IA or one of its resources failed, how a connection's
/// requests were carried as it ends, the RDMA device's events, a failed work completion.
/// Unset: silent.
pub static DEBUG: Knob<bool> = Knob::new("LIBDAT_DEBUG", false, |_| Some(true));

/// `LIBDAT_DEBUG_WC`: set to anything, with `LIBDAT_DEBUG` set too, every RDMA work completion
/// is printed on stderr, not only the failed ones. Unset: only the failed ones.
pub static DEBUG_WC: Knob<bool> = Knob::new("LIBDAT_DEBUG_WC", false, |_| Some(true));

/// `LIBDAT_DIRECT`: `0` turns the direct path off, and every request between two processes of
/// one host goes over the socket, as between hosts. Any other value, or unset: on.
pub static DIRECT: Knob<bool> = Knob::new("LIBDAT_DIRECT", true, |raw| Some(raw != "0"));

/// The shortest `LIBDAT_LEASE_US` takes effect: a smaller value means this.
pub const LEASE_US_MIN: u64 = 20;

/// `LIBDAT_LEASE_US`, microseconds: how long a polling thread's lease on its connections lasts
/// without being pushed back, so the longest a connection waits for the library's own thread
/// after its polling thread went elsewhere. Default 2000: the timer a polling thread pushes
/// back is then set about every 1.5 ms (see `lease::PUSH_BACK_FRACTION`); at 500 us, set
/// every 250 us, those `timerfd_settime` calls (each reprogramming the CPU's timer) made a
/// polling ping-pong between two hosts 7-10% slower. At least `LEASE_US_MIN` (20); a value
/// that is not a whole number (spaces included) means the default.
pub static LEASE_US: Knob<u64> = Knob::new("LIBDAT_LEASE_US", 2000, |raw| {
    number::<u64>(raw).map(|us| us.max(LEASE_US_MIN))
});

/// `LIBDAT_PEER_MEMORY`, MiB (the value is the bytes): the most the process keeps, all its
/// TCP endpoints together, of messages its peers sent before a receive was posted for them
/// (each counted with 64 bytes beside its own). Default 256; `0` keeps none; spaces around the
/// number are allowed; a value that is not a whole number means 256; one past what a `usize`
/// holds in bytes means no bound.
pub static PEER_MEMORY: Knob<usize> = Knob::new("LIBDAT_PEER_MEMORY", 256 << 20, |raw| {
    number_trimmed::<usize>(raw).map(|mib| mib.saturating_mul(1 << 20))
});

/// The longest `LIBDAT_PEER_TIMEOUT` may be, in seconds (excluded).
pub const PEER_TIMEOUT_MAX_S: f64 = 1e9;

/// `LIBDAT_PEER_TIMEOUT`, seconds (fractions allowed): how long a TCP peer may go unheard while
/// its connection owes or expects something before the connection breaks. Default 20, about
/// what an RC QP's default retries take. Above 0 and below `PEER_TIMEOUT_MAX_S`; a value out of
/// those bounds, not finite, or not a number means 20; spaces around it are allowed. An IA's
/// own `peer_timeout=SECONDS` in its `dat.conf` line comes first: that one is read with the
/// IA's entry, whatever this says.
pub static PEER_TIMEOUT: Knob<Duration> =
    Knob::new("LIBDAT_PEER_TIMEOUT", Duration::from_secs(20), |raw| {
        number_trimmed::<f64>(raw)
            .filter(|s| s.is_finite() && *s > 0.0 && *s < PEER_TIMEOUT_MAX_S)
            .map(Duration::from_secs_f64)
    });

/// `LIBDAT_SPIN_US`, microseconds: how long `dat_evd_wait` keeps making progress itself before
/// it sleeps, at least: an answer that comes back within this is seen without a thread
/// hand-off. Each EVD adapts its own budget from there, up to four times this. Default 50; `0`
/// sleeps at once; a value that is not a whole number (spaces included) means 50.
pub static SPIN_US: Knob<Duration> =
    Knob::new("LIBDAT_SPIN_US", Duration::from_micros(50), |raw| {
        number::<u64>(raw).map(Duration::from_micros)
    });

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// What `knob` means when set to `text`.
    fn set<T: Copy>(knob: &Knob<T>, text: &str) -> T {
        knob.value_of(Some(OsStr::new(text)))
    }

    /// Bytes that are not UTF-8.
    fn not_utf8() -> &'static OsStr {
        OsStr::from_bytes(b"1\xff")
    }

    #[test]
    fn debug_is_on_when_set_to_anything() {
        for knob in [&DEBUG, &DEBUG_WC] {
            assert!(!knob.value_of(None), "{}", knob.name);
            for text in ["1", "", "0", "no"] {
                assert!(set(knob, text), "{}={text:?}", knob.name);
            }
            assert!(knob.value_of(Some(not_utf8())), "{}", knob.name);
        }
    }

    #[test]
    fn direct_is_off_for_0_alone() {
        assert!(DIRECT.value_of(None));
        assert!(!set(&DIRECT, "0"));
        for text in ["1", "", " 0", "00", "off", "false"] {
            assert!(set(&DIRECT, text), "LIBDAT_DIRECT={text:?}");
        }
        assert!(DIRECT.value_of(Some(not_utf8())));
    }

    #[test]
    fn lease_is_whole_microseconds_at_least_20() {
        assert_eq!(LEASE_US.value_of(None), 2000);
        assert_eq!(set(&LEASE_US, "3600000000"), 3_600_000_000);
        assert_eq!(set(&LEASE_US, "20"), 20);
        // Below the floor: the floor, not the default.
        assert_eq!(set(&LEASE_US, "19"), 20);
        assert_eq!(set(&LEASE_US, "0"), 20);
        for text in [
            "",
            "abc",
            " 100",
            "100 ",
            "1.5",
            "-1",
            "18446744073709551616",
        ] {
            assert_eq!(set(&LEASE_US, text), 2000, "LIBDAT_LEASE_US={text:?}");
        }
        assert_eq!(LEASE_US.value_of(Some(not_utf8())), 2000);
    }

    #[test]
    fn peer_memory_is_mib_spaces_allowed() {
        const MIB: usize = 1 << 20;
        assert_eq!(PEER_MEMORY.value_of(None), 256 * MIB);
        assert_eq!(set(&PEER_MEMORY, "16"), 16 * MIB);
        assert_eq!(set(&PEER_MEMORY, " 1\n"), MIB);
        assert_eq!(set(&PEER_MEMORY, "0"), 0);
        // More bytes than a usize holds: saturates (no bound), not the default.
        assert_eq!(set(&PEER_MEMORY, &(usize::MAX / 2).to_string()), usize::MAX);
        for text in ["", "abc", "1.5", "-1", "16M", "18446744073709551616"] {
            assert_eq!(
                set(&PEER_MEMORY, text),
                256 * MIB,
                "LIBDAT_PEER_MEMORY={text:?}"
            );
        }
        assert_eq!(PEER_MEMORY.value_of(Some(not_utf8())), 256 * MIB);
    }

    #[test]
    fn peer_timeout_is_seconds_above_0_below_1e9() {
        let secs = Duration::from_secs;
        assert_eq!(PEER_TIMEOUT.value_of(None), secs(20));
        assert_eq!(set(&PEER_TIMEOUT, "3"), secs(3));
        assert_eq!(set(&PEER_TIMEOUT, " 0.5 "), Duration::from_millis(500));
        assert_eq!(set(&PEER_TIMEOUT, "1e3"), secs(1000));
        assert_eq!(set(&PEER_TIMEOUT, "999999999"), secs(999_999_999));
        // Out of bounds, or not finite: the default, not a clamp.
        for text in ["0", "-0", "-1", "1e9", "1e300", "inf", "NaN"] {
            assert_eq!(
                set(&PEER_TIMEOUT, text),
                secs(20),
                "LIBDAT_PEER_TIMEOUT={text:?}"
            );
        }
        for text in ["", "abc", "3s", "3,5"] {
            assert_eq!(
                set(&PEER_TIMEOUT, text),
                secs(20),
                "LIBDAT_PEER_TIMEOUT={text:?}"
            );
        }
        assert_eq!(PEER_TIMEOUT.value_of(Some(not_utf8())), secs(20));
    }

    #[test]
    fn spin_is_whole_microseconds() {
        let us = Duration::from_micros;
        assert_eq!(SPIN_US.value_of(None), us(50));
        assert_eq!(set(&SPIN_US, "200"), us(200));
        // No bounds: 0 spins not at all, the largest u64 is kept as it is.
        assert_eq!(set(&SPIN_US, "0"), us(0));
        assert_eq!(set(&SPIN_US, &u64::MAX.to_string()), us(u64::MAX));
        for text in ["", "abc", " 100", "1.5", "-1", "18446744073709551616"] {
            assert_eq!(set(&SPIN_US, text), us(50), "LIBDAT_SPIN_US={text:?}");
        }
        assert_eq!(SPIN_US.value_of(Some(not_utf8())), us(50));
    }
}
