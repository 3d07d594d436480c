/* A ping-pong that one source builds as a DAT 1.2 program (include/dat, -ldat) and as a DAT 2.0
 * program (include/dat2, -DPINGPONG_DAT2 -ldat2), so that a 1.2 side and a 2.0 side can be run against each other
 * through the same library. The two sides connect, swap where their RDMA buffers are, then:
 *   - messages of several sizes go each way (send/recv), every byte checked by the receiver;
 *   - each side RDMA-writes a buffer into the other's, then sends "written": the receiver checks
 *     every byte of its buffer.
 * usage: pingpong -s IA            (server: prints "pingpong: ready" once it listens)
 *        pingpong IA SERVER_IPV4   (client)
 * Exit status 0 and a last line "pingpong: PASSED" when every check held. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef PINGPONG_DAT2
#include <dat2/udat.h>
#else
#include <dat/udat.h>
#endif

#define CONN_QUAL 45270
#define TIMEOUT_US (20 * 1000 * 1000)
#define MAX_SIZE (1 << 20)

static const int sizes[] = {1, 100, 4096, 65537, MAX_SIZE};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* The two APIs' only differences this program meets. */
#if DAT_VERSION_MAJOR == 1
#define LMR_CREATE(ia, region, len, pz, priv, lmr, lctx, rctx, rlen, raddr) \
    dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, len, pz, priv, lmr, lctx, rctx, rlen, raddr)
#define RMR_ADDRESS target_address
#else
#define LMR_CREATE(ia, region, len, pz, priv, lmr, lctx, rctx, rlen, raddr) \
    dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, len, pz, priv, DAT_VA_TYPE_VA, lmr, lctx, rctx, rlen, raddr)
#define RMR_ADDRESS virtual_address
#endif

/* One registered buffer: two receive slots, a send area and the area the peer writes into. */
enum { RECV0, RECV1, SEND, TARGET, AREAS };
static unsigned char *buf;
static DAT_LMR_CONTEXT lmr_context;
static DAT_EVD_HANDLE req_evd, rcv_evd, conn_evd;
static DAT_EP_HANDLE ep;
static const char *me;

/* What a side tells the other of its target area (both sides run on one architecture). */
struct where {
    uint32_t rmr_context;
    uint64_t address;
};

static unsigned char *area(int a) { return buf + (size_t)a * MAX_SIZE; }

static void die(const char *what, DAT_RETURN ret)
{
    const char *major = "", *minor = "";
    dat_strerror(ret, &major, &minor);
    printf("pingpong %s: FAILED: %s: %s %s\n", me, what, major, minor);
    exit(1);
}

static void check(const char *what, DAT_RETURN ret)
{
    if (ret != DAT_SUCCESS)
        die(what, ret);
}

static void fail(const char *fmt, long a, long b)
{
    printf("pingpong %s: FAILED: ", me);
    printf(fmt, a, b);
    printf("\n");
    exit(1);
}

/* The byte at i of a buffer of `size` bytes filled by `who` (so a stale or swapped buffer shows). */
static unsigned char pattern(int who, int size, int i) { return (unsigned char)(who * 31 + size * 7 + i * 13 + (i >> 8)); }

static void fill(unsigned char *p, int who, int size)
{
    for (int i = 0; i < size; i++)
        p[i] = pattern(who, size, i);
}

static void verify(const unsigned char *p, int who, int size, const char *fmt)
{
    for (int i = 0; i < size; i++)
        if (p[i] != pattern(who, size, i))
            fail(fmt, size, i);
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd, const char *what)
{
    DAT_EVENT event;
    DAT_COUNT nmore;
    check(what, dat_evd_wait(evd, TIMEOUT_US, 1, &event, &nmore));
    return event;
}

/* Waits for the completion of the DTO with this cookie on `evd`; returns its length. */
static long completed(DAT_EVD_HANDLE evd, uint64_t cookie, const char *what)
{
    DAT_EVENT event = wait_event(evd, what);
    const DAT_DTO_COMPLETION_EVENT_DATA *dto = &event.event_data.dto_completion_event_data;
    if (event.event_number != DAT_DTO_COMPLETION_EVENT)
        fail("event 0x%lx where a DTO completion was awaited (%ld)", (long)event.event_number, 0);
    if (dto->status != DAT_DTO_SUCCESS)
        fail("DTO status %ld (cookie %ld)", (long)dto->status, (long)cookie);
    if (dto->user_cookie.as_64 != cookie)
        fail("cookie %ld where %ld was awaited", (long)dto->user_cookie.as_64, (long)cookie);
    return (long)dto->transfered_length;
}

static DAT_LMR_TRIPLET segment(int a, int len)
{
    DAT_LMR_TRIPLET iov;
    memset(&iov, 0, sizeof(iov));
    iov.lmr_context = lmr_context;
    iov.virtual_address = (DAT_VADDR)(uintptr_t)area(a);
    iov.segment_length = (DAT_VLEN)len;
    return iov;
}

static void post_recv(int slot)
{
    DAT_LMR_TRIPLET iov = segment(slot, MAX_SIZE);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 100 + slot;
    check("dat_ep_post_recv", dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG));
}

static int next_slot;

/* Receives the next message into a slot, reposts that slot, and returns it (a side sends only
 * after it received the peer's last message, so one receive posted ahead is always enough). */
static unsigned char *receive(long *len)
{
    int slot = next_slot;
    next_slot = !next_slot;
    *len = completed(rcv_evd, 100 + slot, "dat_evd_wait (receive)");
    static unsigned char copy[MAX_SIZE];
    memcpy(copy, area(slot), (size_t)*len);
    post_recv(slot);
    return copy;
}

static void send_message(int len)
{
    DAT_LMR_TRIPLET iov = segment(SEND, len);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = 1;
    check("dat_ep_post_send", dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG));
    completed(req_evd, 1, "dat_evd_wait (send)");
}

static void rdma_write(const struct where *peer, int len)
{
    DAT_LMR_TRIPLET iov = segment(SEND, len);
    DAT_RMR_TRIPLET target;
    DAT_DTO_COOKIE cookie;
    memset(&target, 0, sizeof(target));
    target.rmr_context = peer->rmr_context;
    target.RMR_ADDRESS = peer->address;
    target.segment_length = (DAT_VLEN)len;
    cookie.as_64 = 2;
    check("dat_ep_post_rdma_write", dat_ep_post_rdma_write(ep, 1, &iov, cookie, &target, DAT_COMPLETION_DEFAULT_FLAG));
    completed(req_evd, 2, "dat_evd_wait (RDMA write)");
}

static void expect_text(const char *want)
{
    long len;
    unsigned char *got = receive(&len);
    if (len != (long)strlen(want) + 1 || memcmp(got, want, (size_t)len) != 0)
        fail("a message of %ld bytes where a word of %ld was awaited", len, (long)strlen(want) + 1);
}

static void send_text(const char *text)
{
    memcpy(area(SEND), text, strlen(text) + 1);
    send_message((int)strlen(text) + 1);
}

static int run_side(int server, char *ia_name, const char *server_address)
{
    me = server ? "server" : "client";
    int who = server ? 1 : 2, peer_who = server ? 2 : 1;

    DAT_IA_HANDLE ia;
    DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
    DAT_PZ_HANDLE pz;
    check("dat_ia_open", dat_ia_open(ia_name, 8, &async_evd, &ia));
    check("dat_pz_create", dat_pz_create(ia, &pz));
    check("dat_evd_create (requests)", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req_evd));
    check("dat_evd_create (receives)", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &rcv_evd));
    check("dat_evd_create (connection)", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd));
    check("dat_ep_create", dat_ep_create(ia, pz, rcv_evd, req_evd, conn_evd, NULL, &ep));

    buf = calloc(AREAS, MAX_SIZE);
    if (buf == NULL)
        return 1;
    DAT_REGION_DESCRIPTION region;
    DAT_LMR_HANDLE lmr;
    DAT_RMR_CONTEXT rmr_context;
    DAT_VLEN registered_length;
    DAT_VADDR registered_address;
    region.for_va = buf;
    check("dat_lmr_create",
          LMR_CREATE(ia, region, (DAT_VLEN)AREAS * MAX_SIZE, pz,
                     DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG, &lmr,
                     &lmr_context, &rmr_context, &registered_length, &registered_address));
    post_recv(RECV0);
    post_recv(RECV1);

    DAT_EVENT event;
    DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
    if (server) {
        DAT_EVD_HANDLE cr_evd;
        check("dat_evd_create (CR)", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
        check("dat_psp_create", dat_psp_create(ia, CONN_QUAL, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
        printf("pingpong: ready (DAT %d.%d)\n", DAT_VERSION_MAJOR, DAT_VERSION_MINOR);
        fflush(stdout);
        event = wait_event(cr_evd, "dat_evd_wait (connection request)");
        if (event.event_number != DAT_CONNECTION_REQUEST_EVENT)
            fail("event 0x%lx where a connection request was awaited (%ld)", (long)event.event_number, 0);
        check("dat_cr_accept", dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, ep, 0, NULL));
    } else {
        struct sockaddr_in addr;
        memset(&addr, 0, sizeof(addr));
        addr.sin_family = AF_INET;
        if (inet_pton(AF_INET, server_address, &addr.sin_addr) != 1)
            fail("not an IPv4 address (%ld, %ld)", 0, 0);
        check("dat_ep_connect", dat_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&addr, CONN_QUAL, TIMEOUT_US, 0, NULL,
                                               DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
    }
    event = wait_event(conn_evd, "dat_evd_wait (connection)");
    if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
        fail("event 0x%lx where the connection was awaited (%ld)", (long)event.event_number, 0);

    /* Where each side's target area is. */
    struct where mine = {rmr_context, (uint64_t)(uintptr_t)area(TARGET)}, peer;
    memcpy(area(SEND), &mine, sizeof(mine));
    send_message(sizeof(mine));
    long len;
    unsigned char *got = receive(&len);
    if (len != (long)sizeof(peer))
        fail("the peer's buffer message has %ld bytes, not %ld", len, (long)sizeof(peer));
    memcpy(&peer, got, sizeof(peer));

    /* Messages: the client sends each size, the server checks it and answers with its own. */
    for (int k = 0; k < NSIZES; k++) {
        int size = sizes[k];
        if (!server) {
            fill(area(SEND), who, size);
            send_message(size);
        }
        got = receive(&len);
        if (len != size)
            fail("a message of %ld bytes where %ld were sent", len, size);
        verify(got, peer_who, size, "message of %ld bytes: byte %ld differs");
        if (server) {
            fill(area(SEND), who, size);
            send_message(size);
        }
    }
    printf("pingpong %s: %d messages each way, every byte checked\n", me, NSIZES);

    /* RDMA writes: the client writes each size, then the server; "written" tells the peer. */
    for (int writer = 2; writer >= 1; writer--) {
        for (int k = 0; k < NSIZES; k++) {
            int size = sizes[k];
            if (who == writer) {
                fill(area(SEND), who, size);
                rdma_write(&peer, size);
                send_text("written");
                expect_text("checked");
            } else {
                expect_text("written");
                verify(area(TARGET), writer, size, "RDMA write of %ld bytes: byte %ld differs");
                memset(area(TARGET), 0, (size_t)size);
                send_text("checked");
            }
        }
    }
    printf("pingpong %s: %d RDMA writes each way, every byte checked\n", me, NSIZES);

    /* The client ends the connection; both see it end. */
    if (!server)
        check("dat_ep_disconnect", dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG));
    event = wait_event(conn_evd, "dat_evd_wait (disconnection)");
    if (event.event_number != DAT_CONNECTION_EVENT_DISCONNECTED)
        fail("event 0x%lx where the disconnection was awaited (%ld)", (long)event.event_number, 0);
    check("dat_ia_close", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
    printf("pingpong %s (DAT %d.%d): PASSED\n", me, DAT_VERSION_MAJOR, DAT_VERSION_MINOR);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "-s") == 0)
        return run_side(1, argv[2], NULL);
    if (argc == 3)
        return run_side(0, argv[1], argv[2]);
    fprintf(stderr, "usage: pingpong -s IA | pingpong IA SERVER_IPV4\n");
    return 2;
}
