//! The data path allocates nothing per operation (the TCP issue's rule): once a connection is
//! warm, sends, receives, RDMA writes and reads, polled and waited for, take no memory from
//! the allocator, in the consumer's thread or in the connection's own threads.
//!
//! The allocator of this test binary counts every allocation; the binary holds this one test
//! so that nothing else allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use dat::abi::*;
use dat::api::ep::*;

mod common;
use common::*;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// One round of every DTO: a send each way (one side polling, the other waiting), an RDMA
/// write and an RDMA read, each checked.
fn round(a: &Side, p: &Side, n: u64) {
    let ok = dat_dto_completion_status::DAT_DTO_SUCCESS;
    let flags = dat_completion_flags::DAT_COMPLETION_DEFAULT_FLAG as DAT_COMPLETION_FLAGS;
    p.post_recv(&[p.iov(0, 64)], n);
    a.post_recv(&[a.iov(0, 64)], n);
    assert_eq!(a.post_send(&[a.iov(64, 32)], n), OK);
    assert_eq!(polled(p.recv_evd), (n, ok, 32));
    assert_eq!(dto(a.req_evd).0, n);
    assert_eq!(p.post_send(&[p.iov(64, 16)], n), OK);
    assert_eq!(dto(a.recv_evd).0, n);
    assert_eq!(polled(p.req_evd), (n, ok, 16));
    let write = [a.iov(128, 256)];
    let to = p.rmr(1024, 256);
    assert_eq!(
        unsafe { dat_ep_post_rdma_write(a.ep, 1, write.as_ptr() as *mut _, cookie(n), &to, flags) },
        OK
    );
    assert_eq!(polled(a.req_evd), (n, ok, 256));
    let read = [a.iov(512, 128)];
    let from = p.rmr(2048, 128);
    assert_eq!(
        unsafe { dat_ep_post_rdma_read(a.ep, 1, read.as_ptr() as *mut _, cookie(n), &from, flags) },
        OK
    );
    assert_eq!(dto(a.req_evd), (n, ok, 128, dat_dtos::DAT_DTO_RDMA_READ));
}

#[test]
fn a_warm_connection_moves_data_without_allocating() {
    let (a, p) = connected(ALL_PRIV);
    // Warm up: queues reach their working size, threads their parking state.
    for n in 0..200 {
        round(&a, &p, n);
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    const ROUNDS: u64 = 2000;
    for n in 0..ROUNDS {
        round(&a, &p, n);
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    // Eight DTOs a round: one allocation per operation would be 16000. A handful is left for
    // what is not per operation (a thread that parks for the first time); none was seen.
    assert!(
        allocations < 20,
        "{allocations} allocations in {ROUNDS} rounds of eight DTOs"
    );
}
