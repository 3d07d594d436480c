/*
 * callcount: the data path's calls, one at a time, for an instruction count under callgrind
 * (bench/callcount.sh runs it and prints instructions per call). The program forks: the parent
 * listens, the child connects, over the IA given (default: the built-in tcp-lo).
 *
 *   callcount [-P ia] [-n iterations]
 *
 * Each round, once the parent said (through a pipe) that its receive is posted, the child posts
 * an 8-byte send and waits for its completion, then tells the parent through another pipe; the
 * parent's receive has its message by then (on TCP its bytes are in
 * the parent's socket or, between processes of one host, in its memory; on RDMA the send
 * completed once the receiver's device had the message), so the parent's one dequeue finds
 * the completion; the parent then posts the next receive. So every call finds the same
 * state each round, and its count is the same run to run. The calls measured are wrappers of
 * their own, so that callgrind can count them alone (--toggle-collect):
 *   measured_post_send      one dat_ep_post_send (the child)
 *   measured_post_recv      one dat_ep_post_recv (the parent)
 *   measured_found_dequeue  one dat_evd_dequeue that finds a receive's completion (the parent)
 *   measured_empty_dequeue  one dat_evd_dequeue of the receive EVD that finds nothing: the
 *                           parent's, after it posted the next receive and before it lets the
 *                           child send (the poll a spinning program makes again and again; on
 *                           TCP it asks the socket, one recv(2))
 * A dequeue that found nothing is retried outside the measured wrapper and counted: the
 * figures hold only if they are rare (the program prints how many).
 */
#include <dat2/udat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PORT_BASE 41000
#define SLOT 64

static char *ia_name = "tcp-lo";
static long iterations = 2000;

struct side {
	DAT_IA_HANDLE ia;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE recv_evd, req_evd, conn_evd, cr_evd, async_evd;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lmr_ctx;
	DAT_RMR_CONTEXT rmr_ctx;
	unsigned char *buf;
};

static void check(DAT_RETURN rc, const char *what)
{
	if (rc != DAT_SUCCESS) {
		const char *major = "?", *minor = "?";
		dat_strerror(rc, &major, &minor);
		fprintf(stderr, "callcount: %s: %s %s\n", what, major, minor);
		exit(1);
	}
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_COUNT more;
	check(dat_evd_wait(evd, 10 * 1000 * 1000, 1, &e, &more), "dat_evd_wait");
	return e;
}

static void open_side(struct side *s)
{
	DAT_REGION_DESCRIPTION region;
	DAT_EP_ATTR attr;
	DAT_VLEN registered;
	DAT_VADDR address;
	memset(s, 0, sizeof(*s));
	s->async_evd = DAT_HANDLE_NULL;
	check(dat_ia_open(ia_name, 8, &s->async_evd, &s->ia), "dat_ia_open");
	check(dat_pz_create(s->ia, &s->pz), "dat_pz_create");
	check(dat_evd_create(s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->recv_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->req_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s->conn_evd), "dat_evd_create");
	check(dat_evd_create(s->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &s->cr_evd), "dat_evd_create");
	memset(&attr, 0, sizeof(attr));
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.max_message_size = SLOT;
	attr.max_rdma_size = SLOT;
	attr.qos = DAT_QOS_BEST_EFFORT;
	attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.max_recv_dtos = 4;
	attr.max_request_dtos = 4;
	attr.max_recv_iov = 1;
	attr.max_request_iov = 1;
	attr.max_rdma_read_in = 1;
	attr.max_rdma_read_out = 1;
	attr.max_rdma_read_iov = 1;
	attr.max_rdma_write_iov = 1;
	check(dat_ep_create(s->ia, s->pz, s->recv_evd, s->req_evd, s->conn_evd, &attr, &s->ep), "dat_ep_create");
	s->buf = aligned_alloc(4096, 4096);
	if (!s->buf) {
		perror("callcount: aligned_alloc");
		exit(1);
	}
	memset(s->buf, 0, 4096);
	region.for_va = s->buf;
	check(dat_lmr_create(s->ia, DAT_MEM_TYPE_VIRTUAL, region, 4096, s->pz, DAT_MEM_PRIV_ALL_FLAG,
			     DAT_VA_TYPE_VA, &s->lmr, &s->lmr_ctx, &s->rmr_ctx, &registered, &address),
	      "dat_lmr_create");
}

static DAT_LMR_TRIPLET iov(struct side *s, long offset, long len)
{
	DAT_LMR_TRIPLET t;
	t.lmr_context = s->lmr_ctx;
	t.virtual_address = (DAT_VADDR)(uintptr_t)(s->buf + offset);
	t.segment_length = (DAT_SEG_LENGTH)len;
	return t;
}

__attribute__((noinline)) DAT_RETURN measured_post_send(DAT_EP_HANDLE ep, DAT_LMR_TRIPLET *t, DAT_DTO_COOKIE c)
{
	return dat_ep_post_send(ep, 1, t, c, DAT_COMPLETION_DEFAULT_FLAG);
}

__attribute__((noinline)) DAT_RETURN measured_post_recv(DAT_EP_HANDLE ep, DAT_LMR_TRIPLET *t, DAT_DTO_COOKIE c)
{
	return dat_ep_post_recv(ep, 1, t, c, DAT_COMPLETION_DEFAULT_FLAG);
}

__attribute__((noinline)) DAT_RETURN measured_found_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	return dat_evd_dequeue(evd, e);
}

__attribute__((noinline)) DAT_RETURN measured_empty_dequeue(DAT_EVD_HANDLE evd, DAT_EVENT *e)
{
	return dat_evd_dequeue(evd, e);
}

static void post_recv(struct side *s, long n)
{
	DAT_LMR_TRIPLET t = iov(s, SLOT, SLOT);
	DAT_DTO_COOKIE c;
	c.as_64 = (DAT_UINT64)n;
	check(measured_post_recv(s->ep, &t, c), "dat_ep_post_recv");
}

static void server(int from_client, int to_client, DAT_CONN_QUAL port)
{
	struct side s;
	DAT_PSP_HANDLE psp;
	DAT_EVENT e;
	long retries = 0;
	char byte;
	open_side(&s);
	check(dat_psp_create(s.ia, port, s.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), "dat_psp_create");
	post_recv(&s, 0);
	if (write(to_client, "r", 1) != 1) { /* listening: the client may connect */
		perror("callcount: write");
		exit(1);
	}
	e = wait_event(s.cr_evd);
	check(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s.ep, 0, NULL), "dat_cr_accept");
	e = wait_event(s.conn_evd);
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "callcount: the server's connection event 0x%x\n", e.event_number);
		exit(1);
	}
	for (long i = 0; i < iterations; i++) {
		if (read(from_client, &byte, 1) != 1) {
			fprintf(stderr, "callcount: the client went away at round %ld\n", i);
			exit(1);
		}
		DAT_RETURN rc = measured_found_dequeue(s.recv_evd, &e);
		while (DAT_GET_TYPE(rc) == DAT_QUEUE_EMPTY) {
			retries++;
			rc = dat_evd_dequeue(s.recv_evd, &e);
		}
		check(rc, "dat_evd_dequeue");
		if (e.event_number != DAT_DTO_COMPLETION_EVENT ||
		    e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
		    e.event_data.dto_completion_event_data.user_cookie.as_64 != (DAT_UINT64)i) {
			fprintf(stderr, "callcount: round %ld: not the receive's completion\n", i);
			exit(1);
		}
		post_recv(&s, i + 1);
		if (DAT_GET_TYPE(measured_empty_dequeue(s.recv_evd, &e)) != DAT_QUEUE_EMPTY) {
			fprintf(stderr, "callcount: round %ld: an event before the next message was sent\n", i);
			exit(1);
		}
		if (write(to_client, "g", 1) != 1) { /* the next receive is posted: the next send may go */
			perror("callcount: write");
			exit(1);
		}
	}
	printf("callcount: %ld rounds; %ld dequeues found nothing first and were retried (not measured)\n",
	       iterations, retries);
	wait_event(s.conn_evd); /* the client's disconnect */
	check(dat_ep_free(s.ep), "dat_ep_free");
	check(dat_psp_free(psp), "dat_psp_free");
	check(dat_lmr_free(s.lmr), "dat_lmr_free");
	check(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
}

static void client(int to_server, int from_server, DAT_CONN_QUAL port)
{
	struct side s;
	DAT_IA_ATTR ia_attr;
	DAT_EVENT e;
	open_side(&s);
	char byte;
	check(dat_ia_query(s.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), "dat_ia_query");
	if (read(from_server, &byte, 1) != 1) {
		fprintf(stderr, "callcount: the server never listened\n");
		exit(1);
	}
	check(dat_ep_connect(s.ep, ia_attr.ia_address_ptr, port, 10 * 1000 * 1000, 0, NULL,
			     DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
	      "dat_ep_connect");
	e = wait_event(s.conn_evd);
	if (e.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
		fprintf(stderr, "callcount: no connection (event 0x%x)\n", e.event_number);
		exit(1);
	}
	memset(s.buf, 7, SLOT);
	for (long i = 0; i < iterations; i++) {
		DAT_LMR_TRIPLET t = iov(&s, 0, 8);
		DAT_DTO_COOKIE c;
		if (i > 0 && read(from_server, &byte, 1) != 1) {
			fprintf(stderr, "callcount: the server went away at round %ld\n", i);
			exit(1);
		}
		c.as_64 = (DAT_UINT64)i;
		check(measured_post_send(s.ep, &t, c), "dat_ep_post_send");
		e = wait_event(s.req_evd);
		if (e.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
			fprintf(stderr, "callcount: send %ld failed\n", i);
			exit(1);
		}
		if (write(to_server, "x", 1) != 1) {
			perror("callcount: write");
			exit(1);
		}
	}
	check(dat_ep_disconnect(s.ep, DAT_CLOSE_GRACEFUL_FLAG), "dat_ep_disconnect");
	wait_event(s.conn_evd);
	check(dat_ep_free(s.ep), "dat_ep_free");
	check(dat_lmr_free(s.lmr), "dat_lmr_free");
	check(dat_ia_close(s.ia, DAT_CLOSE_ABRUPT_FLAG), "dat_ia_close");
}

int main(int argc, char **argv)
{
	int opt, fds[2], ready[2];
	while ((opt = getopt(argc, argv, "P:n:")) != -1) {
		if (opt == 'P')
			ia_name = optarg;
		else if (opt == 'n')
			iterations = atol(optarg);
		else {
			fprintf(stderr, "usage: callcount [-P ia] [-n iterations]\n");
			return 2;
		}
	}
	DAT_CONN_QUAL port = PORT_BASE + (DAT_CONN_QUAL)(getpid() % 20000);
	if (pipe(fds) != 0 || pipe(ready) != 0) {
		perror("callcount: pipe");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("callcount: fork");
		return 1;
	}
	if (child == 0) {
		close(fds[0]);
		close(ready[1]);
		client(fds[1], ready[0], port);
		return 0;
	}
	close(fds[1]);
	close(ready[0]);
	server(fds[0], ready[1], port);
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "callcount: the client failed\n");
		return 1;
	}
	return 0;
}
