//! What registered memory a peer can reach. `dat_lmr_create` registers only memory the
//! process may access as the registration's privileges say (wholly mapped, readable, and
//! writable where a privilege lets anyone write: as pinning the pages for a verbs
//! registration demands), so a peer's RDMA write, which the TCP transport copies into the
//! region in user space, never lands in read-only or unmapped memory. And the keys peers name
//! regions by are random: the keys a peer is handed tell it nothing of the others.
//!
//! The peer's writes run in a child process (this test binary run again): where the library
//! let one land in memory the process may not write, the child dies of the fault, and the
//! test fails on what the child printed, not with it.

use std::collections::HashSet;
use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{ia::dat_ia_close, lmr::*, rmr::*};
use dat::error::{DatError, Sub, Type};

mod common;
use common::*;

const PRIV_LOCAL_READ: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_READ_FLAG as u32;
const PRIV_LOCAL_WRITE: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_LOCAL_WRITE_FLAG as u32;
const PRIV_REMOTE_READ: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_READ_FLAG as u32;
const PRIV_REMOTE_WRITE: u32 = dat_mem_priv_flags::DAT_MEM_PRIV_REMOTE_WRITE_FLAG as u32;
const PRIV_REMOTE_ATOMIC: u32 = dat_ib_mem_priv_flags::DAT_IB_MEM_PRIV_REMOTE_ATOMIC as u32;
const READ_ONLY_PRIV: u32 = PRIV_LOCAL_READ | PRIV_REMOTE_READ;
const VIRTUAL: DAT_MEM_TYPE = dat_mem_type::DAT_MEM_TYPE_VIRTUAL as DAT_MEM_TYPE;
const FROM_LMR: DAT_MEM_TYPE = dat_mem_type::DAT_MEM_TYPE_LMR as DAT_MEM_TYPE;
const VA: DAT_VA_TYPE = dat_va_type::DAT_VA_TYPE_VA as DAT_VA_TYPE;

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Pages of anonymous memory, filled with a pattern and then given `prot`; unmapped on drop.
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(pages: usize, prot: i32) -> Mapping {
        let len = pages * page();
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh anonymous mapping.
        let base = unsafe {
            libc::mmap(
                null_mut(),
                len,
                rw,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base as *mut u8;
        for i in 0..len {
            // SAFETY: inside the mapping, still writable.
            unsafe { *base.add(i) = (i % 251) as u8 };
        }
        let m = Mapping { base, len };
        m.protect(0, pages, prot);
        m
    }
    fn at(&self, page_index: usize) -> u64 {
        self.base as u64 + (page_index * page()) as u64
    }
    fn protect(&self, first: usize, pages: usize, prot: i32) {
        // SAFETY: pages of our own mapping.
        assert_eq!(
            unsafe { libc::mprotect(self.at(first) as *mut libc::c_void, pages * page(), prot) },
            0
        );
    }
    /// Unmaps pages of the mapping: a hole nothing else maps (in all likelihood: the process
    /// may map memory meanwhile, and the kernel may put it there).
    fn unmap(&self, first: usize, pages: usize) {
        // SAFETY: pages of our own mapping, which nothing else uses.
        assert_eq!(
            unsafe { libc::munmap(self.at(first) as *mut libc::c_void, pages * page()) },
            0
        );
    }
    /// The byte at `offset` (in a readable page).
    fn byte(&self, offset: usize) -> u8 {
        assert!(offset < self.len);
        // SAFETY: inside the mapping; the caller reads readable pages only.
        unsafe { *self.base.add(offset) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping (unmapping a hole in it again is harmless).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// A registration: its return code, and its handle and contexts where it succeeded.
struct Made {
    rc: DAT_RETURN,
    lmr: DAT_LMR_HANDLE,
    context: DAT_LMR_CONTEXT,
    rmr_context: DAT_RMR_CONTEXT,
}

fn register(
    ia: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    address: u64,
    length: usize,
    privileges: u32,
) -> Made {
    let region = DAT_REGION_DESCRIPTION {
        for_va: address as DAT_PVOID,
    };
    register_as(ia, pz, VIRTUAL, region, length as u64, privileges)
}

fn register_as(
    ia: DAT_IA_HANDLE,
    pz: DAT_PZ_HANDLE,
    kind: DAT_MEM_TYPE,
    region: DAT_REGION_DESCRIPTION,
    length: u64,
    privileges: u32,
) -> Made {
    let mut made = Made {
        rc: 0,
        lmr: null_mut(),
        context: 0,
        rmr_context: 0,
    };
    // SAFETY: live handles and valid out-pointers.
    made.rc = unsafe {
        dat_lmr_create(
            ia,
            kind,
            region,
            length,
            pz,
            privileges,
            VA,
            &mut made.lmr,
            &mut made.context,
            &mut made.rmr_context,
            null_mut(),
            null_mut(),
        )
    };
    made
}

fn free(lmr: DAT_LMR_HANDLE) {
    assert_eq!(unsafe { dat_lmr_free(lmr) }, OK);
}

/// `dat_lmr_create`'s refusal of memory the process cannot access as asked: an invalid
/// parameter naming the region (3), its length (4) or the privileges (6).
fn refused(position: u8) -> DAT_RETURN {
    DatError::invalid_arg(position).code()
}

#[test]
fn read_only_memory_is_registered_only_with_privileges_that_write_nothing() {
    let (ia, pz) = open_ia_and_pz();
    let m = Mapping::new(2, libc::PROT_READ);
    for privileges in [
        PRIV_LOCAL_WRITE,
        PRIV_REMOTE_WRITE,
        PRIV_REMOTE_ATOMIC,
        PRIV_LOCAL_READ | PRIV_LOCAL_WRITE,
        PRIV_REMOTE_READ | PRIV_REMOTE_WRITE | PRIV_LOCAL_WRITE,
        ALL_PRIV,
        ALL_PRIV | PRIV_REMOTE_ATOMIC,
    ] {
        let made = register(ia, pz, m.at(0), 2 * page(), privileges);
        assert_eq!(
            made.rc,
            refused(6),
            "read-only memory registered with privileges {privileges:#x}"
        );
        // Any part of it, too.
        assert_eq!(
            register(ia, pz, m.at(1) + 100, 10, privileges).rc,
            refused(6)
        );
    }
    for privileges in [0, PRIV_LOCAL_READ, PRIV_REMOTE_READ, READ_ONLY_PRIV] {
        let made = register(ia, pz, m.at(0), 2 * page(), privileges);
        assert_eq!(
            made.rc, OK,
            "read-only memory registered with privileges {privileges:#x}"
        );
        free(made.lmr);
    }
    // Writable memory with one read-only page among it: refused for writing, as a whole.
    let mixed = Mapping::new(3, libc::PROT_READ | libc::PROT_WRITE);
    mixed.protect(1, 1, libc::PROT_READ);
    assert_eq!(
        register(ia, pz, mixed.at(0), 3 * page(), ALL_PRIV).rc,
        refused(6)
    );
    let made = register(ia, pz, mixed.at(2), page(), ALL_PRIV);
    assert_eq!(made.rc, OK, "the writable page alone");
    free(made.lmr);
    // Memory no one may read is registered for nothing: every region may be read locally.
    let none = Mapping::new(1, libc::PROT_NONE);
    for privileges in [0, PRIV_LOCAL_READ, ALL_PRIV] {
        assert_eq!(
            register(ia, pz, none.at(0), page(), privileges).rc,
            refused(6)
        );
    }
    unsafe {
        dat_ia_close(
            ia,
            dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
        )
    };
}

#[test]
fn a_range_not_wholly_mapped_is_refused() {
    let (ia, pz) = open_ia_and_pz();
    let m = Mapping::new(4, libc::PROT_READ | libc::PROT_WRITE);
    m.unmap(2, 2);
    for privileges in [0, READ_ONLY_PRIV, ALL_PRIV] {
        // Starting in the hole: the region's description names no memory.
        assert_eq!(register(ia, pz, m.at(2), page(), privileges).rc, refused(3));
        assert_eq!(register(ia, pz, m.at(3) + 8, 8, privileges).rc, refused(3));
        // Running off the end of the mapping into the hole: too long.
        assert_eq!(
            register(ia, pz, m.at(1), 2 * page(), privileges).rc,
            refused(4)
        );
        assert_eq!(register(ia, pz, m.at(2) - 1, 2, privileges).rc, refused(4));
    }
    // The mapped part is registered.
    let made = register(ia, pz, m.at(0), 2 * page(), ALL_PRIV);
    assert_eq!(made.rc, OK);
    free(made.lmr);
    unsafe {
        dat_ia_close(
            ia,
            dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
        )
    };
}

/// A region made from another (DAT_MEM_TYPE_LMR) names the same memory, which its own
/// privileges may ask more of.
#[test]
fn a_region_made_from_another_is_checked_for_its_own_privileges() {
    let (ia, pz) = open_ia_and_pz();
    let m = Mapping::new(1, libc::PROT_READ);
    let parent = register(ia, pz, m.at(0), page(), READ_ONLY_PRIV);
    assert_eq!(parent.rc, OK);
    let from = DAT_REGION_DESCRIPTION {
        for_lmr_handle: parent.lmr,
    };
    assert_eq!(
        register_as(ia, pz, FROM_LMR, from, 0, ALL_PRIV).rc,
        refused(6)
    );
    assert_eq!(
        register_as(ia, pz, FROM_LMR, from, 0, PRIV_REMOTE_WRITE).rc,
        refused(6)
    );
    let child = register_as(ia, pz, FROM_LMR, from, 0, PRIV_REMOTE_READ);
    assert_eq!(child.rc, OK);
    free(child.lmr);
    free(parent.lmr);
    unsafe {
        dat_ia_close(
            ia,
            dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
        )
    };
}

/// What the child of `a_peer_reaches_read_only_or_unmapped_memory_never` saw, one line each.
const CHILD_MARK: &str = "MEMORY ";

fn say(what: String) {
    use std::io::Write;
    println!("{CHILD_MARK}{what}");
    std::io::stdout().flush().unwrap();
}

/// A 1-byte RDMA write from `a` to `rmr_context` at `address`: its completion status, after
/// which the connection is broken unless it succeeded.
fn write_one_byte(
    a: &Side,
    rmr_context: DAT_RMR_CONTEXT,
    address: u64,
    c: u64,
) -> dat_dto_completion_status {
    let local = [a.iov(0, 1)];
    let remote = DAT_RMR_TRIPLET {
        rmr_context,
        virtual_address: address,
        segment_length: 1,
    };
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    assert_eq!(
        unsafe {
            dat::api::ep::dat_ep_post_rdma_write(
                a.ep,
                1,
                local.as_ptr() as *mut _,
                cookie(c),
                &remote,
                flags,
            )
        },
        OK
    );
    let (got, status, _, _) = dto(a.req_evd);
    assert_eq!(got, c);
    status
}

/// Registers `length` bytes at `address` on the passive side with every privilege; where the
/// library accepts, the active side writes one byte at `target` through it (a fault kills the
/// process here).
fn try_to_expose(name: &str, address: u64, length: usize, target: u64) {
    let (a, p) = connected(ALL_PRIV);
    let made = register(p.ia, p.pz, address, length, ALL_PRIV);
    if made.rc != OK {
        say(format!("{name}: refused {:#x}", made.rc));
        return;
    }
    let status = write_one_byte(&a, made.rmr_context, target, 1);
    say(format!(
        "{name}: registered, the peer's write completed with {status:?}"
    ));
}

/// Runs as the child of `a_peer_reaches_read_only_or_unmapped_memory_never`.
#[test]
fn memory_access_child() {
    if std::env::var_os("LIBDAT_TEST_MEMORY_CHILD").is_none() {
        return; // only the child does anything
    }
    let read_only = Mapping::new(2, libc::PROT_READ);
    try_to_expose(
        "read-only",
        read_only.at(0),
        2 * page(),
        read_only.at(1) + 7,
    );
    let hole = Mapping::new(3, libc::PROT_READ | libc::PROT_WRITE);
    hole.unmap(1, 2);
    try_to_expose("unmapped", hole.at(1), page(), hole.at(1) + 7);
    try_to_expose("past the end", hole.at(0), 2 * page(), hole.at(1) + 7);

    // Registered for reading only: the peer reads it, and its write is a remote access error.
    let (a, p) = connected(ALL_PRIV);
    let made = register(p.ia, p.pz, read_only.at(0), 2 * page(), READ_ONLY_PRIV);
    assert_eq!(made.rc, OK);
    let into = [a.iov(100, 16)];
    let from = DAT_RMR_TRIPLET {
        rmr_context: made.rmr_context,
        virtual_address: read_only.at(1) + 32,
        segment_length: 16,
    };
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    assert_eq!(
        unsafe {
            dat::api::ep::dat_ep_post_rdma_read(
                a.ep,
                1,
                into.as_ptr() as *mut _,
                cookie(2),
                &from,
                flags,
            )
        },
        OK
    );
    let (_, status, length, _) = dto(a.req_evd);
    let same = (0..16).all(|i| a.buf[100 + i] == read_only.byte(page() + 32 + i));
    say(format!("read-only for reading: the peer's read completed with {status:?}, {length} bytes, same bytes {same}"));
    let status = write_one_byte(&a, made.rmr_context, read_only.at(1) + 7, 3);
    say(format!(
        "read-only for reading: the peer's write completed with {status:?}"
    ));
    drop((a, p));

    // An RMR cannot lend the peer's atomics (which write) a region that writes nothing.
    let (a, p) = connected(ALL_PRIV);
    let made = register(p.ia, p.pz, read_only.at(0), 2 * page(), READ_ONLY_PRIV);
    assert_eq!(made.rc, OK);
    let mut rmr = null_mut();
    assert_eq!(unsafe { dat_rmr_create(p.pz, &mut rmr) }, OK);
    let word = DAT_LMR_TRIPLET {
        lmr_context: made.context,
        virtual_address: read_only.at(1),
        segment_length: 8,
    };
    let mut context = 0;
    let rc = unsafe {
        dat_rmr_bind(
            rmr,
            made.lmr,
            &word,
            PRIV_REMOTE_ATOMIC | PRIV_REMOTE_READ,
            VA,
            p.ep,
            cookie(4),
            flags,
            &mut context,
        )
    };
    if rc != OK {
        say(format!("atomics through a window: refused {rc:#x}"));
    } else {
        let e = wait(p.req_evd);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as u32
        );
        let result = a.iov(200, 8);
        let target = DAT_RMR_TRIPLET {
            rmr_context: context,
            virtual_address: read_only.at(1),
            segment_length: 8,
        };
        let args = [
            1,
            &result as *const _ as u64,
            5,
            &target as *const _ as u64,
            flags as u64,
        ];
        let mut ext = dat::api::ext::ExtArgs {
            count: args.len() as i32,
            v: [0; 8],
        };
        ext.v[..args.len()].copy_from_slice(&args);
        let rc = unsafe {
            dat::api::ext::libdat_extension_op(
                a.ep,
                dat_ib_op::DAT_IB_FETCH_AND_ADD_OP as i32,
                &ext,
            )
        };
        assert_eq!(rc, OK);
        let e = wait(a.req_evd);
        let status = unsafe { e.event_data.dto_completion_event_data.status };
        say(format!("atomics through a window: bound, the peer's fetch-and-add completed with status {status}"));
    }
    say("done".into());
}

#[test]
fn a_peer_reaches_read_only_or_unmapped_memory_never() {
    let out = test_child("memory_access_child")
        .env("LIBDAT_TEST_MEMORY_CHILD", "1")
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split(CHILD_MARK).nth(1))
        .collect();
    let report = format!(
        "the child ({}) said {said:#?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    let expected = [
        format!("read-only: refused {:#x}", refused(6)),
        format!("unmapped: refused {:#x}", refused(3)),
        format!("past the end: refused {:#x}", refused(4)),
        "read-only for reading: the peer's read completed with DAT_DTO_SUCCESS, 16 bytes, same bytes true".into(),
        "read-only for reading: the peer's write completed with DAT_DTO_ERR_REMOTE_ACCESS".into(),
        format!("atomics through a window: refused {:#x}", DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code()),
        "done".into(),
    ];
    assert_eq!(said, expected, "{report}");
}

/// An RMR lends a peer reads of read-only memory over TCP, never writes; over RDMA, where the
/// memory is pinned for reading and no memory window binds onto it, the bind is refused and
/// the connection goes on.
#[test]
fn a_window_onto_read_only_memory_lends_reads_only() {
    let (a, p) = connected(ALL_PRIV);
    let m = Mapping::new(1, libc::PROT_READ);
    let made = register(p.ia, p.pz, m.at(0), page(), READ_ONLY_PRIV);
    assert_eq!(made.rc, OK);
    let mut rmr = null_mut();
    assert_eq!(unsafe { dat_rmr_create(p.pz, &mut rmr) }, OK);
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    let part = DAT_LMR_TRIPLET {
        lmr_context: made.context,
        virtual_address: m.at(0) + 64,
        segment_length: 64,
    };
    let bind = |privileges, context: &mut DAT_RMR_CONTEXT| unsafe {
        dat_rmr_bind(
            rmr,
            made.lmr,
            &part,
            privileges,
            VA,
            p.ep,
            cookie(1),
            flags,
            context,
        )
    };
    let mut window = 0;
    let no_write = DatError::new(Type::DAT_PRIVILEGES_VIOLATION, Sub::DAT_PRIVILEGES_WRITE).code();
    assert_eq!(bind(PRIV_REMOTE_WRITE, &mut window), no_write);
    assert_eq!(
        bind(PRIV_REMOTE_READ | PRIV_REMOTE_ATOMIC, &mut window),
        no_write
    );
    let context = if on_rdma() {
        assert_eq!(
            bind(PRIV_REMOTE_READ, &mut window),
            DatError::bare(Type::DAT_MODEL_NOT_SUPPORTED).code()
        );
        made.rmr_context // the region itself, still reachable
    } else {
        assert_eq!(bind(PRIV_REMOTE_READ, &mut window), OK);
        assert_eq!(
            wait(p.req_evd).event_number,
            dat_event_number::DAT_RMR_BIND_COMPLETION_EVENT as u32
        );
        window
    };
    let offset = 100;
    let into = [a.iov(0, 16)];
    let from = DAT_RMR_TRIPLET {
        rmr_context: context,
        virtual_address: m.at(0) + offset as u64,
        segment_length: 16,
    };
    assert_eq!(
        unsafe {
            dat::api::ep::dat_ep_post_rdma_read(
                a.ep,
                1,
                into.as_ptr() as *mut _,
                cookie(2),
                &from,
                flags,
            )
        },
        OK
    );
    assert_eq!(dto(a.req_evd).1, dat_dto_completion_status::DAT_DTO_SUCCESS);
    assert!((0..16).all(|i| a.buf[i] == m.byte(offset + i)));
    assert_eq!(
        write_one_byte(&a, context, m.at(0) + offset as u64, 3),
        dat_dto_completion_status::DAT_DTO_ERR_REMOTE_ACCESS
    );
}

/// The multiplier of an earlier key scheme, `key = n * M ^ seed` for a counter `n`: the
/// attack below finds the seed of such keys.
const M: u32 = 0x9E37_79B1;

/// Whether `keys` are `n * M ^ seed` for one seed and counters `n` below `2^20` (a process
/// registers fewer): tries every counter for the first key, and checks that the seed it gives
/// turns every other key into such a counter too. A peer that finds the seed so knows every
/// key the process hands out.
fn derivable(keys: &[u32]) -> bool {
    const BELOW: u32 = 1 << 20;
    let mut inverse = M; // Newton's iteration for M's inverse modulo 2^32
    for _ in 0..5 {
        inverse = inverse.wrapping_mul(2u32.wrapping_sub(M.wrapping_mul(inverse)));
    }
    assert_eq!(M.wrapping_mul(inverse), 1);
    (0..BELOW).any(|n| {
        let seed = keys[0] ^ n.wrapping_mul(M);
        keys[1..]
            .iter()
            .all(|k| (k ^ seed).wrapping_mul(inverse) < BELOW)
    })
}

#[test]
fn the_attack_finds_keys_of_the_earlier_scheme() {
    // What the earlier scheme handed out: a seed, and counters in registration order (with
    // gaps where other threads registered meanwhile).
    let seed = 0x5bd1_e995u32;
    let keys: Vec<u32> = (0..64u32)
        .map(|i| (1000 + 3 * i).wrapping_mul(M) ^ seed)
        .collect();
    assert!(derivable(&keys));
}

/// Keys of many regions registered one after another: none 0, none repeated among the live
/// regions (`lmr_context`, and `rmr_context` where a remote privilege asks for one), and no
/// relation between them that lets a peer derive one from others.
#[test]
fn region_keys_are_unrelated_and_unique_among_live_regions() {
    if on_rdma() {
        return; // the device makes a verbs region's keys
    }
    const REGIONS: usize = 3000;
    let (ia, pz) = open_ia_and_pz();
    let mut buf = vec![0u8; REGIONS * 16];
    let mut keys = Vec::new();
    let mut lmrs = Vec::new();
    for i in 0..REGIONS {
        let privileges = if i % 2 == 0 { ALL_PRIV } else { LOCAL_PRIV };
        let made = register(ia, pz, buf[i * 16..].as_mut_ptr() as u64, 16, privileges);
        assert_eq!(made.rc, OK);
        assert_ne!(made.context, 0);
        if privileges & PRIV_REMOTE_READ != 0 {
            assert_eq!(
                made.rmr_context, made.context,
                "over TCP a region's keys are one"
            );
        } else {
            assert_eq!(made.rmr_context, 0, "no remote privilege, no rmr_context");
        }
        keys.push(made.context);
        lmrs.push(made.lmr);
    }
    let distinct: HashSet<u32> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), REGIONS, "a key repeated among live regions");
    assert!(
        !derivable(&keys[..64]),
        "the keys are of the earlier scheme"
    );
    // Consecutive keys differ by no constant, under xor or subtraction.
    let xors: HashSet<u32> = keys.windows(2).map(|w| w[0] ^ w[1]).collect();
    let differences: HashSet<u32> = keys.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    assert!(xors.len() > REGIONS / 2 && differences.len() > REGIONS / 2);
    // Freed regions' keys go; new ones are still not any live region's.
    for lmr in lmrs.drain(..REGIONS / 2) {
        free(lmr);
    }
    let live: HashSet<u32> = keys[REGIONS / 2..].iter().copied().collect();
    for i in 0..REGIONS / 2 {
        let made = register(ia, pz, buf[i * 16..].as_mut_ptr() as u64, 16, ALL_PRIV);
        assert_eq!(made.rc, OK);
        assert!(
            !live.contains(&made.context),
            "a new region has a live region's key"
        );
        keys[i] = made.context;
        lmrs.push(made.lmr);
    }
    let distinct: HashSet<u32> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), REGIONS, "a key repeated among live regions");
    unsafe {
        dat_ia_close(
            ia,
            dat_close_flags::DAT_CLOSE_ABRUPT_FLAG as DAT_CLOSE_FLAGS,
        )
    };
}
