//! The IA, registry, EVD, CNO and any-handle functions through their exported C entry points:
//! handle and parameter checks with the exact DAT_RETURN, and the happy paths.

use std::ffi::c_char;
use std::ptr::null_mut;

use dat::abi::*;
use dat::api::{cno::*, evd::*, ia::*, misc::*, registry::*};
use dat::error::{DatError, Sub, Type};

const OK: DAT_RETURN = 0;

fn handle_err(sub: Sub) -> DAT_RETURN {
    DatError::invalid_handle(sub).code()
}
fn arg_err(n: u8) -> DAT_RETURN {
    DatError::invalid_arg(n).code()
}
fn state_err(sub: Sub) -> DAT_RETURN {
    DatError::invalid_state(sub).code()
}

/// Handles no live object has: NULL, garbage, and a pointer to real memory.
fn bad_handles() -> Vec<DAT_HANDLE> {
    static SOME_MEMORY: u64 = 0;
    vec![
        null_mut(),
        0x1234 as DAT_HANDLE,
        usize::MAX as DAT_HANDLE,
        &SOME_MEMORY as *const u64 as DAT_HANDLE,
    ]
}

struct OpenIa {
    ia: DAT_IA_HANDLE,
    async_evd: DAT_EVD_HANDLE,
}

fn open(name: &str) -> Result<OpenIa, DAT_RETURN> {
    let name = std::ffi::CString::new(name).unwrap();
    let mut async_evd: DAT_EVD_HANDLE = null_mut();
    let mut ia: DAT_IA_HANDLE = null_mut();
    let rc = unsafe {
        dat_ia_openv(
            name.as_ptr() as DAT_NAME_PTR,
            8,
            &mut async_evd,
            &mut ia,
            2,
            0,
            1,
        )
    };
    if rc == OK {
        Ok(OpenIa { ia, async_evd })
    } else {
        Err(rc)
    }
}

fn close(ia: DAT_IA_HANDLE, flags: dat_close_flags) -> DAT_RETURN {
    unsafe { dat_ia_close(ia, flags as DAT_CLOSE_FLAGS) }
}

fn evd_create(ia: DAT_IA_HANDLE, qlen: i32, flags: u32) -> DAT_EVD_HANDLE {
    let mut evd = null_mut();
    assert_eq!(
        unsafe { dat_evd_create(ia, qlen, null_mut(), flags, &mut evd) },
        OK
    );
    evd
}

fn software_event(pointer: usize) -> DAT_EVENT {
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    e.event_number = dat_event_number::DAT_SOFTWARE_EVENT as DAT_EVENT_NUMBER;
    e.event_data.software_event_data.pointer = pointer as DAT_PVOID;
    e
}

const SOFTWARE: u32 = dat_evd_flags::DAT_EVD_SOFTWARE_FLAG as u32;

#[test]
fn ia_opens_by_builtin_name_and_closes() {
    let o = open("tcp-lo").expect("tcp-lo is built in");
    assert!(!o.ia.is_null());
    assert!(!o.async_evd.is_null());
    let mut t: DAT_HANDLE_TYPE = 0;
    assert_eq!(unsafe { dat_get_handle_type(o.ia, &mut t) }, OK);
    assert_eq!(t, dat_handle_type::DAT_HANDLE_TYPE_IA as DAT_HANDLE_TYPE);
    assert_eq!(unsafe { dat_get_handle_type(o.async_evd, &mut t) }, OK);
    assert_eq!(t, dat_handle_type::DAT_HANDLE_TYPE_EVD as DAT_HANDLE_TYPE);
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG), OK);
    // Closed: the IA and its async EVD are dead handles.
    assert_eq!(
        close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG),
        handle_err(Sub::DAT_INVALID_HANDLE_IA)
    );
    assert_eq!(
        unsafe { dat_get_handle_type(o.async_evd, &mut t) },
        handle_err(Sub::DAT_INVALID_HANDLE1)
    );
}

#[test]
fn unknown_name_and_wrong_major_are_not_registered() {
    let not_found =
        DatError::new(Type::DAT_PROVIDER_NOT_FOUND, Sub::DAT_NAME_NOT_REGISTERED).code();
    assert_eq!(open("no-such-ia").err(), Some(not_found));
    let mut async_evd: DAT_EVD_HANDLE = null_mut();
    let mut ia: DAT_IA_HANDLE = null_mut();
    let rc = unsafe {
        dat_ia_openv(
            c"tcp-lo".as_ptr() as DAT_NAME_PTR,
            8,
            &mut async_evd,
            &mut ia,
            1,
            2,
            1,
        )
    };
    assert_eq!(rc, not_found);
    // Both thread-safety values are accepted.
    let rc = unsafe {
        dat_ia_openv(
            c"tcp-lo".as_ptr() as DAT_NAME_PTR,
            8,
            &mut async_evd,
            &mut ia,
            2,
            0,
            0,
        )
    };
    assert_eq!(rc, OK);
    assert_eq!(close(ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn ia_open_checks_its_parameters() {
    let mut async_evd: DAT_EVD_HANDLE = null_mut();
    let mut ia: DAT_IA_HANDLE = null_mut();
    let name = c"tcp-lo".as_ptr() as DAT_NAME_PTR;
    unsafe {
        assert_eq!(
            dat_ia_openv(null_mut(), 8, &mut async_evd, &mut ia, 2, 0, 1),
            arg_err(1)
        );
        let long = vec![b'x' as c_char; 300]
            .into_iter()
            .chain([0])
            .collect::<Vec<_>>();
        assert_eq!(
            dat_ia_openv(
                long.as_ptr() as DAT_NAME_PTR,
                8,
                &mut async_evd,
                &mut ia,
                2,
                0,
                1
            ),
            arg_err(1)
        );
        assert_eq!(
            dat_ia_openv(name, 8, null_mut(), &mut ia, 2, 0, 1),
            arg_err(3)
        );
        assert_eq!(
            dat_ia_openv(name, 8, &mut async_evd, null_mut(), 2, 0, 1),
            arg_err(4)
        );
        assert_eq!(
            dat_ia_openv(name, 0, &mut async_evd, &mut ia, 2, 0, 1),
            arg_err(2)
        );
        assert_eq!(
            dat_ia_openv(name, 8, &mut async_evd, &mut ia, 2, 0, 7),
            arg_err(7)
        );
        let mut garbage = 0x5555 as DAT_EVD_HANDLE;
        assert_eq!(
            dat_ia_openv(name, 8, &mut garbage, &mut ia, 2, 0, 1),
            handle_err(Sub::DAT_INVALID_HANDLE_EVD_ASYNC)
        );
    }
}

#[test]
fn second_open_can_share_the_async_evd() {
    let first = open("tcp-lo").unwrap();
    let mut shared = first.async_evd;
    let mut ia2: DAT_IA_HANDLE = null_mut();
    let rc = unsafe {
        dat_ia_openv(
            c"tcp-lo".as_ptr() as DAT_NAME_PTR,
            0,
            &mut shared,
            &mut ia2,
            2,
            0,
            1,
        )
    };
    assert_eq!(rc, OK);
    assert_eq!(shared, first.async_evd);
    let mut reported: DAT_EVD_HANDLE = null_mut();
    let rc = unsafe { dat_ia_query(ia2, &mut reported, 0, null_mut(), 0, null_mut()) };
    assert_eq!(rc, OK);
    assert_eq!(reported, first.async_evd);
    assert_eq!(close(ia2, dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG), OK);
    assert_eq!(
        close(first.ia, dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG),
        OK
    );
}

#[test]
fn ia_query_reports_address_and_limits() {
    let o = open("tcp-lo").unwrap();
    let mut a: DAT_IA_ATTR = unsafe { std::mem::zeroed() };
    let mut p: DAT_PROVIDER_ATTR = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        dat_ia_query(
            o.ia,
            null_mut(),
            DAT_IA_FIELD_ALL,
            &mut a,
            DAT_PROVIDER_FIELD_ALL,
            &mut p,
        )
    };
    assert_eq!(rc, OK);
    let sin = unsafe { &*(a.ia_address_ptr as *const libc::sockaddr_in) };
    assert_eq!(i32::from(sin.sin_family), libc::AF_INET);
    assert_eq!(
        u32::from_be(sin.sin_addr.s_addr),
        u32::from(std::net::Ipv4Addr::LOCALHOST)
    );
    assert!(a.max_eps > 0 && a.max_evd_qlen > 0 && a.max_iov_segments_per_dto > 0);
    assert!(a.max_message_size > 0 && a.max_rdma_size > 0);
    assert_eq!(p.dapl_version_major, 2);
    assert!(p.max_private_data_size > 0);
    unsafe {
        assert_eq!(
            dat_ia_query(
                o.ia,
                null_mut(),
                DAT_IA_FIELD_ALL,
                null_mut(),
                0,
                null_mut()
            ),
            arg_err(4)
        );
        assert_eq!(
            dat_ia_query(
                o.ia,
                null_mut(),
                0,
                null_mut(),
                DAT_PROVIDER_FIELD_ALL,
                null_mut()
            ),
            arg_err(6)
        );
        assert_eq!(
            dat_ia_query(o.ia, null_mut(), !0, &mut a, 0, null_mut()),
            arg_err(3)
        );
    }
    for h in bad_handles() {
        assert_eq!(
            unsafe { dat_ia_query(h, null_mut(), 0, null_mut(), 0, null_mut()) },
            handle_err(Sub::DAT_INVALID_HANDLE_IA)
        );
        assert_eq!(
            close(h, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG),
            handle_err(Sub::DAT_INVALID_HANDLE_IA)
        );
    }
    assert_eq!(unsafe { dat_ia_close(o.ia, 9) }, arg_err(2));
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn graceful_close_is_refused_while_objects_exist_and_abrupt_frees_them() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    assert_eq!(
        close(o.ia, dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG),
        state_err(Sub::DAT_INVALID_STATE_IA_IN_USE)
    );
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
    let mut p: DAT_EVD_PARAM = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { dat_evd_query(evd, dat_evd_param_mask::DAT_EVD_FIELD_ALL as u32, &mut p) },
        handle_err(Sub::DAT_INVALID_HANDLE1)
    );
}

/// An abrupt close frees every object of the IA, even those another thread makes while it
/// closes: each creation either fails or makes a handle the close then frees (none outlives
/// the IA). EVDs stand in for every kind: all go through one adoption.
#[test]
fn objects_made_during_an_abrupt_close_do_not_outlive_it() {
    for round in 0..200 {
        let o = open("tcp-lo").unwrap();
        let ia = o.ia as usize;
        let maker = std::thread::spawn(move || {
            let mut made = Vec::new();
            loop {
                let mut evd = null_mut();
                let rc = unsafe {
                    dat_evd_create(ia as DAT_IA_HANDLE, 4, null_mut(), SOFTWARE, &mut evd)
                };
                if rc != OK {
                    return made;
                }
                made.push(evd as usize);
            }
        });
        // Let the maker run a little, more each round.
        for _ in 0..round * 50 {
            std::hint::spin_loop();
        }
        assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
        let made = maker.join().unwrap();
        for evd in made {
            let mut t = 0;
            assert_ne!(
                unsafe { dat_get_handle_type(evd as DAT_HANDLE, &mut t) },
                OK,
                "an EVD outlived its IA (round {round})"
            );
        }
    }
}

#[test]
fn wrong_type_handles_are_refused() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    let mut a: DAT_IA_ATTR = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { dat_ia_query(evd, null_mut(), DAT_IA_FIELD_ALL, &mut a, 0, null_mut()) },
        handle_err(Sub::DAT_INVALID_HANDLE_IA)
    );
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { dat_evd_dequeue(o.ia, &mut e) },
        handle_err(Sub::DAT_INVALID_HANDLE1)
    );
    assert_eq!(
        unsafe { dat_cno_free(evd) },
        handle_err(Sub::DAT_INVALID_HANDLE_CNO)
    );
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn evd_functions_refuse_bad_handles() {
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    let mut n = 0;
    let mut p: DAT_EVD_PARAM = unsafe { std::mem::zeroed() };
    let ev = software_event(0);
    let bad = handle_err(Sub::DAT_INVALID_HANDLE1);
    for h in bad_handles() {
        unsafe {
            assert_eq!(dat_evd_dequeue(h, &mut e), bad);
            assert_eq!(dat_evd_wait(h, 0, 1, &mut e, &mut n), bad);
            assert_eq!(dat_evd_query(h, 0, &mut p), bad);
            assert_eq!(dat_evd_free(h), bad);
            assert_eq!(dat_evd_resize(h, 4), bad);
            assert_eq!(dat_evd_post_se(h, &ev), bad);
            assert_eq!(dat_evd_enable(h), bad);
            assert_eq!(dat_evd_disable(h), bad);
            assert_eq!(dat_evd_set_unwaitable(h), bad);
            assert_eq!(dat_evd_clear_unwaitable(h), bad);
            assert_eq!(dat_evd_modify_cno(h, null_mut()), bad);
            let mut evd = null_mut();
            assert_eq!(
                dat_evd_create(h, 4, null_mut(), SOFTWARE, &mut evd),
                handle_err(Sub::DAT_INVALID_HANDLE_IA)
            );
        }
    }
}

#[test]
fn evd_create_checks_parameters() {
    let o = open("tcp-lo").unwrap();
    let mut evd = null_mut();
    unsafe {
        assert_eq!(
            dat_evd_create(o.ia, 0, null_mut(), SOFTWARE, &mut evd),
            arg_err(2)
        );
        assert_eq!(
            dat_evd_create(o.ia, -1, null_mut(), SOFTWARE, &mut evd),
            arg_err(2)
        );
        assert_eq!(
            dat_evd_create(o.ia, 4, 0x77 as DAT_HANDLE, SOFTWARE, &mut evd),
            handle_err(Sub::DAT_INVALID_HANDLE_CNO)
        );
        assert_eq!(
            dat_evd_create(o.ia, 4, null_mut(), 0x4000_0000, &mut evd),
            arg_err(4)
        );
        assert_eq!(dat_evd_create(o.ia, 4, null_mut(), 0, &mut evd), arg_err(4));
        assert_eq!(
            dat_evd_create(o.ia, 4, null_mut(), SOFTWARE, null_mut()),
            arg_err(5)
        );
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn software_events_flow_in_order_and_the_queue_bounds() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 2, SOFTWARE);
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    unsafe {
        assert_eq!(
            dat_evd_dequeue(evd, &mut e),
            DatError::bare(Type::DAT_QUEUE_EMPTY).code()
        );
        assert_eq!(dat_evd_post_se(evd, &software_event(1)), OK);
        assert_eq!(dat_evd_post_se(evd, &software_event(2)), OK);
        assert_eq!(
            dat_evd_post_se(evd, &software_event(3)),
            DatError::bare(Type::DAT_QUEUE_FULL).code()
        );
        assert_eq!(dat_evd_post_se(evd, null_mut()), arg_err(2));
        let mut not_software = software_event(4);
        not_software.event_number = dat_event_number::DAT_DTO_COMPLETION_EVENT as DAT_EVENT_NUMBER;
        assert_eq!(dat_evd_post_se(evd, &not_software), arg_err(2));
        let mut n = -1;
        assert_eq!(dat_evd_wait(evd, 0, 1, &mut e, &mut n), OK);
        assert_eq!(e.event_data.software_event_data.pointer as usize, 1);
        assert_eq!(e.evd_handle, evd);
        assert_eq!(n, 1);
        assert_eq!(dat_evd_dequeue(evd, &mut e), OK);
        assert_eq!(e.event_data.software_event_data.pointer as usize, 2);
        assert_eq!(dat_evd_dequeue(evd, null_mut()), arg_err(2));
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn evd_wait_times_out_and_checks_threshold() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    let mut n = -1;
    unsafe {
        assert_eq!(
            dat_evd_wait(evd, 1000, 1, &mut e, &mut n),
            u32::from(Type::DAT_TIMEOUT_EXPIRED)
        );
        assert_eq!(n, 0);
        assert_eq!(dat_evd_wait(evd, 0, 0, &mut e, &mut n), arg_err(3));
        assert_eq!(dat_evd_wait(evd, 0, 5, &mut e, &mut n), arg_err(3));
        assert_eq!(dat_evd_wait(evd, 0, 1, null_mut(), &mut n), arg_err(4));
        // A threshold not yet reached times out and leaves the events queued.
        assert_eq!(dat_evd_post_se(evd, &software_event(9)), OK);
        assert_eq!(
            dat_evd_wait(evd, 1000, 2, &mut e, &mut n),
            u32::from(Type::DAT_TIMEOUT_EXPIRED)
        );
        assert_eq!(n, 1);
        assert_eq!(dat_evd_set_unwaitable(evd), OK);
        assert_eq!(
            dat_evd_wait(evd, 0, 1, &mut e, &mut n),
            state_err(Sub::DAT_INVALID_STATE_EVD_UNWAITABLE)
        );
        assert_eq!(dat_evd_clear_unwaitable(evd), OK);
        assert_eq!(dat_evd_wait(evd, 0, 1, &mut e, &mut n), OK);
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

/// Blocks until thread `tid` of this process sleeps (its /proc state is S): a waiter that spun
/// and went to sleep in its wait.
fn until_asleep(tid: libc::pid_t) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let stat =
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, state)| state.trim_start().starts_with('S'))
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the waiting thread never slept"
        );
        std::thread::yield_now();
    }
}

/// A thread that waits on `evd` with `threshold` (no time bound): its thread id, and what its
/// wait returns with the first event's pointer and the count left.
fn sleeping_evd_waiter(
    evd: DAT_EVD_HANDLE,
    threshold: DAT_COUNT,
) -> std::thread::JoinHandle<(DAT_RETURN, usize, DAT_COUNT)> {
    let evd = evd as usize;
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
        let mut n = -1;
        let rc = unsafe {
            dat_evd_wait(
                evd as DAT_EVD_HANDLE,
                DAT_TIMEOUT_INFINITE,
                threshold,
                &mut e,
                &mut n,
            )
        };
        let pointer = if rc == OK {
            (unsafe { e.event_data.software_event_data.pointer }) as usize
        } else {
            0
        };
        (rc, pointer, n)
    });
    until_asleep(tid_rx.recv().unwrap());
    waiter
}

#[test]
fn a_sleeping_waiter_wakes_once_its_threshold_is_met() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    let waiter = sleeping_evd_waiter(evd, 3);
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    unsafe {
        assert_eq!(dat_evd_post_se(evd, &software_event(1)), OK);
        assert_eq!(dat_evd_post_se(evd, &software_event(2)), OK);
        // Still in its wait: a dequeue is refused for it.
        assert_eq!(
            dat_evd_dequeue(evd, &mut e),
            state_err(Sub::DAT_INVALID_STATE_EVD_WAITER)
        );
        assert_eq!(dat_evd_post_se(evd, &software_event(3)), OK);
    }
    // The oldest event, and the two behind it.
    assert_eq!(waiter.join().unwrap(), (OK, 1, 2));
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn a_sleeping_waiter_fails_when_its_evd_becomes_unwaitable_or_is_freed() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    // dat_evd_wait(3DAT): "if dat_evd_set_unwaitable(3DAT) is called on an EVD on which a
    // thread is blocked in this function, the function returns with DAT_INVALID_STATE".
    let waiter = sleeping_evd_waiter(evd, 1);
    assert_eq!(unsafe { dat_evd_set_unwaitable(evd) }, OK);
    assert_eq!(
        waiter.join().unwrap().0,
        state_err(Sub::DAT_INVALID_STATE_EVD_UNWAITABLE)
    );
    assert_eq!(unsafe { dat_evd_clear_unwaitable(evd) }, OK);
    // Freed under its waiter: the wait is aborted.
    let waiter = sleeping_evd_waiter(evd, 1);
    assert_eq!(unsafe { dat_evd_free(evd) }, OK);
    assert_eq!(
        waiter.join().unwrap().0,
        DatError::bare(Type::DAT_ABORT).code()
    );
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn a_sleeping_cno_waiter_wakes_on_a_trigger_from_another_thread() {
    let o = open("tcp-lo").unwrap();
    let mut cno = null_mut();
    assert_eq!(
        unsafe { dat_cno_create(o.ia, std::mem::zeroed(), &mut cno) },
        OK
    );
    let mut evd = null_mut();
    assert_eq!(
        unsafe { dat_evd_create(o.ia, 4, cno, SOFTWARE, &mut evd) },
        OK
    );
    let cno_addr = cno as usize;
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        let mut which: DAT_EVD_HANDLE = null_mut();
        let rc =
            unsafe { dat_cno_wait(cno_addr as DAT_CNO_HANDLE, DAT_TIMEOUT_INFINITE, &mut which) };
        (rc, which as usize)
    });
    until_asleep(tid_rx.recv().unwrap());
    assert_eq!(unsafe { dat_evd_post_se(evd, &software_event(7)) }, OK);
    assert_eq!(waiter.join().unwrap(), (OK, evd as usize));
    unsafe {
        assert_eq!(dat_evd_free(evd), OK);
        assert_eq!(dat_cno_free(cno), OK);
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn a_waiter_wakes_on_an_event_from_another_thread() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 4, SOFTWARE);
    let evd_addr = evd as usize;
    let poster = std::thread::spawn(move || {
        let evd = evd_addr as DAT_EVD_HANDLE;
        unsafe { dat_evd_post_se(evd, &software_event(42)) }
    });
    let mut e: DAT_EVENT = unsafe { std::mem::zeroed() };
    let mut n = 0;
    assert_eq!(
        unsafe { dat_evd_wait(evd, DAT_TIMEOUT_INFINITE, 1, &mut e, &mut n) },
        OK
    );
    assert_eq!(poster.join().unwrap(), OK);
    assert_eq!(
        unsafe { e.event_data.software_event_data.pointer } as usize,
        42
    );
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn overflow_is_reported_on_the_async_evd() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 1, SOFTWARE);
    unsafe {
        assert_eq!(dat_evd_post_se(evd, &software_event(1)), OK);
        assert_eq!(
            dat_evd_post_se(evd, &software_event(2)),
            DatError::bare(Type::DAT_QUEUE_FULL).code()
        );
        let mut e: DAT_EVENT = std::mem::zeroed();
        assert_eq!(dat_evd_dequeue(o.async_evd, &mut e), OK);
        assert_eq!(
            e.event_number,
            dat_event_number::DAT_ASYNC_ERROR_EVD_OVERFLOW as DAT_EVENT_NUMBER
        );
        assert_eq!(e.event_data.asynch_error_event_data.dat_handle, evd);
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn evd_query_resize_and_free() {
    let o = open("tcp-lo").unwrap();
    let evd = evd_create(o.ia, 3, SOFTWARE);
    let mut p: DAT_EVD_PARAM = unsafe { std::mem::zeroed() };
    unsafe {
        assert_eq!(
            dat_evd_query(evd, dat_evd_param_mask::DAT_EVD_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, o.ia);
        assert_eq!(p.evd_qlen, 3);
        assert_eq!(p.evd_flags, SOFTWARE);
        assert_eq!(dat_evd_query(evd, 0x8000, &mut p), arg_err(2));
        assert_eq!(dat_evd_query(evd, 1, null_mut()), arg_err(3));
        assert_eq!(dat_evd_resize(evd, 0), arg_err(2));
        assert_eq!(dat_evd_post_se(evd, &software_event(1)), OK);
        assert_eq!(dat_evd_post_se(evd, &software_event(2)), OK);
        assert_eq!(dat_evd_resize(evd, 1), state_err(Sub::DAT_NO_SUBTYPE));
        assert_eq!(dat_evd_resize(evd, 8), OK);
        assert_eq!(
            dat_evd_query(evd, dat_evd_param_mask::DAT_EVD_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.evd_qlen, 8);
        assert_eq!(dat_evd_free(evd), OK);
        assert_eq!(dat_evd_free(evd), handle_err(Sub::DAT_INVALID_HANDLE1));
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_GRACEFUL_FLAG), OK);
}

#[test]
fn cno_collects_triggers_and_is_in_use_while_an_evd_has_it() {
    let o = open("tcp-lo").unwrap();
    let mut cno = null_mut();
    let mut fd: DAT_FD = -1;
    unsafe {
        assert_eq!(dat_cno_fd_create(o.ia, &mut fd, &mut cno), OK);
        assert!(fd >= 0);
        let mut evd = null_mut();
        assert_eq!(dat_evd_create(o.ia, 4, cno, SOFTWARE, &mut evd), OK);
        assert_eq!(
            dat_cno_free(cno),
            state_err(Sub::DAT_INVALID_STATE_CNO_IN_USE)
        );
        let mut which: DAT_EVD_HANDLE = 0x99 as DAT_HANDLE;
        assert_eq!(dat_cno_trigger(cno, &mut which), OK);
        assert!(which.is_null());
        // The man page: a timeout is DAT_QUEUE_EMPTY, with the EVD handle set to NULL.
        which = 0x99 as DAT_HANDLE;
        assert_eq!(
            dat_cno_wait(cno, 1000, &mut which),
            DatError::bare(Type::DAT_QUEUE_EMPTY).code()
        );
        assert!(which.is_null());
        assert_eq!(dat_evd_post_se(evd, &software_event(1)), OK);
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        assert_eq!(libc::poll(&mut pfd, 1, 0), 1);
        assert_eq!(dat_cno_wait(cno, DAT_TIMEOUT_INFINITE, &mut which), OK);
        assert_eq!(which, evd);
        let mut p: DAT_CNO_PARAM = std::mem::zeroed();
        assert_eq!(
            dat_cno_query(cno, dat_cno_param_mask::DAT_CNO_FIELD_ALL as u32, &mut p),
            OK
        );
        assert_eq!(p.ia_handle, o.ia);
        assert_eq!(
            p.proxy_type,
            dat_proxy_type::DAT_PROXY_TYPE_FD as DAT_PROXY_TYPE
        );
        assert_eq!(dat_cno_query(cno, 0x100, &mut p), arg_err(2));
        assert_eq!(dat_cno_wait(cno, 0, null_mut()), arg_err(3));
        assert_eq!(dat_evd_modify_cno(evd, null_mut()), OK);
        assert_eq!(dat_cno_free(cno), OK);
        assert_eq!(dat_cno_free(cno), handle_err(Sub::DAT_INVALID_HANDLE_CNO));
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn cno_functions_refuse_bad_handles() {
    let bad = handle_err(Sub::DAT_INVALID_HANDLE_CNO);
    let agent: DAT_OS_WAIT_PROXY_AGENT = unsafe { std::mem::zeroed() };
    for h in bad_handles() {
        let mut evd = null_mut();
        let mut p: DAT_CNO_PARAM = unsafe { std::mem::zeroed() };
        unsafe {
            assert_eq!(dat_cno_free(h), bad);
            assert_eq!(dat_cno_wait(h, 0, &mut evd), bad);
            assert_eq!(dat_cno_trigger(h, &mut evd), bad);
            assert_eq!(dat_cno_query(h, 1, &mut p), bad);
            assert_eq!(dat_cno_modify_agent(h, agent), bad);
            let mut cno = null_mut();
            let mut fd = 0;
            assert_eq!(
                dat_cno_create(h, agent, &mut cno),
                handle_err(Sub::DAT_INVALID_HANDLE_IA)
            );
            assert_eq!(
                dat_cno_fd_create(h, &mut fd, &mut cno),
                handle_err(Sub::DAT_INVALID_HANDLE_IA)
            );
        }
    }
}

#[test]
fn consumer_context_and_handle_type() {
    let o = open("tcp-lo").unwrap();
    let mut ctx = DAT_CONTEXT { as_64: 0 };
    unsafe {
        assert_eq!(dat_get_consumer_context(o.ia, &mut ctx), OK);
        assert_eq!(ctx.as_64, 0);
        assert_eq!(
            dat_set_consumer_context(o.ia, DAT_CONTEXT { as_64: 0xfeed }),
            OK
        );
        assert_eq!(dat_get_consumer_context(o.ia, &mut ctx), OK);
        assert_eq!(ctx.as_64, 0xfeed);
        assert_eq!(dat_get_consumer_context(o.ia, null_mut()), arg_err(2));
        let mut t: DAT_HANDLE_TYPE = 0;
        assert_eq!(dat_get_handle_type(o.ia, null_mut()), arg_err(2));
        for h in bad_handles() {
            let bad = handle_err(Sub::DAT_INVALID_HANDLE1);
            assert_eq!(dat_set_consumer_context(h, DAT_CONTEXT { as_64: 1 }), bad);
            assert_eq!(dat_get_consumer_context(h, &mut ctx), bad);
            assert_eq!(dat_get_handle_type(h, &mut t), bad);
        }
    }
    assert_eq!(close(o.ia, dat_close_flags::DAT_CLOSE_ABRUPT_FLAG), OK);
}

#[test]
fn list_providers_includes_the_builtin_loopback_ia() {
    let mut count = -1;
    unsafe {
        // With max 0: the count, and DAT_INVALID_PARAMETER as the man page says.
        assert_eq!(
            dat_registry_list_providers(0, &mut count, null_mut()),
            arg_err(1)
        );
        assert!(count >= 1);
        let mut infos: Vec<DAT_PROVIDER_INFO> = vec![std::mem::zeroed(); count as usize];
        let mut ptrs: Vec<*mut DAT_PROVIDER_INFO> = infos.iter_mut().map(|i| i as *mut _).collect();
        let mut returned = -1;
        assert_eq!(
            dat_registry_list_providers(count, &mut returned, ptrs.as_mut_ptr()),
            OK
        );
        assert_eq!(returned, count);
        let names: Vec<String> = infos
            .iter()
            .map(|i| {
                std::ffi::CStr::from_ptr(i.ia_name.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert!(names.iter().any(|n| n == "tcp-lo"), "{names:?}");
        assert_eq!(infos[0].dapl_version_major, 2);
        assert_eq!(
            dat_registry_list_providers(1, null_mut(), ptrs.as_mut_ptr()),
            arg_err(2)
        );
        assert_eq!(
            dat_registry_list_providers(1, &mut returned, null_mut()),
            arg_err(3)
        );
        assert_eq!(
            dat_registry_list_providers(-1, &mut returned, ptrs.as_mut_ptr()),
            arg_err(1)
        );
    }
}

#[test]
fn runtime_providers_are_added_listed_and_removed() {
    let mut info: DAT_PROVIDER_INFO = unsafe { std::mem::zeroed() };
    for (d, s) in info.ia_name.iter_mut().zip(b"runtime-test\0") {
        *d = *s as c_char;
    }
    info.dapl_version_major = 2;
    let provider: DAT_PROVIDER = unsafe { std::mem::zeroed() };
    unsafe {
        assert_eq!(dat_registry_add_provider(null_mut(), &info), arg_err(1));
        assert_eq!(dat_registry_add_provider(&provider, null_mut()), arg_err(2));
        assert_eq!(dat_registry_add_provider(&provider, &info), OK);
        assert_eq!(
            dat_registry_add_provider(&provider, &info),
            DatError::bare(Type::DAT_PROVIDER_ALREADY_REGISTERED).code()
        );
        assert_eq!(
            open("runtime-test").err(),
            Some(DatError::not_implemented().code())
        );
        assert_eq!(dat_registry_remove_provider(&provider, &info), OK);
        // The man page: "DAT_INVALID_PARAMETER: The Provider was not found."
        assert_eq!(dat_registry_remove_provider(&provider, &info), arg_err(2));
    }
}

fn code_of_ep() -> DAT_RETURN {
    DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP).code()
}

#[test]
fn strerror_names_every_type_and_subtype() {
    let mut major: *const c_char = std::ptr::null();
    let mut minor: *const c_char = std::ptr::null();
    let s = |p: *const c_char| {
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_str()
            .unwrap()
            .to_owned()
    };
    unsafe {
        let code = DatError::invalid_handle(Sub::DAT_INVALID_HANDLE_EP).code();
        assert_eq!(dat_strerror(code, &mut major, &mut minor), OK);
        assert_eq!(s(major), "DAT_INVALID_HANDLE");
        assert_eq!(s(minor), "DAT_INVALID_HANDLE_EP");
        assert_eq!(dat_strerror(0, &mut major, &mut minor), OK);
        assert_eq!(s(major), "DAT_SUCCESS");
        assert_eq!(s(minor), "DAT_NO_SUBTYPE");
        for t in 0..=0x17u32 {
            let code = DAT_CLASS_ERROR | (t << 16);
            assert_eq!(
                dat_strerror(code, &mut major, &mut minor),
                OK,
                "type {t:#x}"
            );
        }
        let last = Sub::DAT_THREAD_SAFETY_NOT_FOUND as u32;
        for sub in 0..=last {
            assert_eq!(
                dat_strerror(DAT_CLASS_ERROR | 0x0006_0000 | sub, &mut major, &mut minor),
                OK,
                "sub {sub}"
            );
            assert!(!s(minor).is_empty());
        }
        assert_eq!(
            dat_strerror(0x0fff_0000, &mut major, &mut minor),
            arg_err(1)
        );
        assert_eq!(dat_strerror(0, null_mut(), &mut minor), arg_err(2));
        // The minor message is optional.
        assert_eq!(dat_strerror(code_of_ep(), &mut major, null_mut()), OK);
        assert_eq!(s(major), "DAT_INVALID_HANDLE");
    }
}
