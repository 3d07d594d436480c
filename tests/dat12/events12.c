/*
 * The DAT 1.2 entry points for events, CNOs, the IA's attributes and dat_strerror, called as a
 * 1.2 program calls them: built against include/dat (the 1.2 headers) and linked with -ldat,
 * its references bound to version DAT_1.2 by the .symver lines below. Over tcp-lo: the
 * attributes a 1.2 caller is told, software events through dequeue and wait (every field), a
 * wait that times out, a CNO's param and wait, 1.2 codes named by dat_strerror, and the events
 * of a connection (CR arrival, established with private data, disconnected) in 1.2's layout.
 * Prints "ok" lines and exits 0, or names the first failed check and exits 1.
 */
#include <dat/udat.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The 1.2 functions this program calls, by their DAT_1.2 versions. */
__asm__(".symver dat_ep_create, dat_ep_create@DAT_1.2");
__asm__(".symver dat_ia_openv, dat_ia_openv@DAT_1.2");
__asm__(".symver dat_ia_query, dat_ia_query@DAT_1.2");
__asm__(".symver dat_ia_close, dat_ia_close@DAT_1.2");
__asm__(".symver dat_pz_create, dat_pz_create@DAT_1.2");
__asm__(".symver dat_evd_create, dat_evd_create@DAT_1.2");
__asm__(".symver dat_evd_free, dat_evd_free@DAT_1.2");
__asm__(".symver dat_evd_post_se, dat_evd_post_se@DAT_1.2");
__asm__(".symver dat_evd_dequeue, dat_evd_dequeue@DAT_1.2");
__asm__(".symver dat_evd_wait, dat_evd_wait@DAT_1.2");
__asm__(".symver dat_cno_create, dat_cno_create@DAT_1.2");
__asm__(".symver dat_cno_query, dat_cno_query@DAT_1.2");
__asm__(".symver dat_cno_wait, dat_cno_wait@DAT_1.2");
__asm__(".symver dat_cno_free, dat_cno_free@DAT_1.2");
__asm__(".symver dat_strerror, dat_strerror@DAT_1.2");
__asm__(".symver dat_psp_create_any, dat_psp_create_any@DAT_1.2");
__asm__(".symver dat_psp_free, dat_psp_free@DAT_1.2");
__asm__(".symver dat_cr_query, dat_cr_query@DAT_1.2");
__asm__(".symver dat_cr_accept, dat_cr_accept@DAT_1.2");
__asm__(".symver dat_ep_connect, dat_ep_connect@DAT_1.2");
__asm__(".symver dat_ep_disconnect, dat_ep_disconnect@DAT_1.2");
__asm__(".symver dat_ep_free, dat_ep_free@DAT_1.2");

#define ERR(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))
#define WAIT_US (10 * 1000 * 1000)

static const char *code_name(DAT_RETURN r)
{
	static char buf[160];
	const char *major = "?", *minor = "?";
	dat_strerror(r, &major, &minor);
	snprintf(buf, sizeof buf, "%s %s (0x%08x)", major, minor, (unsigned)r);
	return buf;
}

#define CHECK(cond, what)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define MUST(call)                                                            \
	do {                                                                  \
		DAT_RETURN rc_ = (call);                                      \
		if (rc_ != DAT_SUCCESS) {                                     \
			fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, code_name(rc_)); \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define EXPECT_RC(call, want)                                                 \
	do {                                                                  \
		DAT_RETURN rc_ = (call);                                      \
		if (rc_ != (DAT_RETURN)(want)) {                              \
			fprintf(stderr, "FAIL %s:%d: %s: got %s", __FILE__, __LINE__, #call, code_name(rc_)); \
			fprintf(stderr, ", want %s\n", code_name(want));      \
			exit(1);                                              \
		}                                                             \
	} while (0)

static DAT_IA_HANDLE ia;
static char *ia_name; /* DAT_NAME_PTR: 1.2 takes the name as char * */
static DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;

static void ia_attributes(DAT_IA_ADDRESS_PTR *address)
{
	DAT_IA_ATTR a;
	DAT_PROVIDER_ATTR p;
	DAT_EVD_HANDLE evd_of_ia;
	memset(&a, 0xa5, sizeof a);
	memset(&p, 0xa5, sizeof p);
	MUST(dat_ia_query(ia, &evd_of_ia, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &p));
	CHECK(evd_of_ia == async_evd, "the async EVD is the one dat_ia_open made");
	CHECK(strcmp(a.adapter_name, ia_name) == 0, "adapter name: the IA opened");
	CHECK(memchr(a.vendor_name, 0, sizeof a.vendor_name) && a.vendor_name[0], "a vendor name");
	CHECK(a.ia_address_ptr != NULL && a.ia_address_ptr->sa_family == AF_INET, "an IPv4 address");
	CHECK(a.max_eps > 0 && a.max_evds > 0 && a.max_evd_qlen > 0 && a.max_pzs > 0, "object counts");
	CHECK(a.max_iov_segments_per_dto > 0 && a.max_dto_per_ep > 0, "DTO limits");
	/* The sizes are 64-bit in 1.2: their values must be whole, not 2.0's 32 bits misread. */
	CHECK(a.max_message_size > 0 && a.max_message_size <= UINT32_MAX, "max_message_size");
	CHECK(a.max_rdma_size > 0 && a.max_rdma_size <= UINT32_MAX, "max_rdma_size");
	CHECK(a.max_lmr_block_size > 0 && a.max_lmr_block_size <= UINT32_MAX, "max_lmr_block_size");
	CHECK(a.max_rdma_read_per_ep_in_guaranteed == DAT_TRUE, "guaranteed reads (after the sizes)");
	CHECK(a.num_transport_attr >= 0 && a.num_vendor_attr >= 0, "named attribute counts");
	CHECK(p.dapl_version_major == 1 && p.dapl_version_minor == 2, "DAT version 1.2");
	CHECK(strncmp(p.provider_name, "libdat", 6) == 0, "provider name");
	CHECK(p.is_thread_safe == DAT_TRUE, "thread safe");
	CHECK(p.max_private_data_size > 0, "private data size");
	CHECK(p.num_provider_specific_attr >= 0 && (p.num_provider_specific_attr == 0 || p.provider_specific_attr),
	      "provider-specific attributes");
	for (int i = 0; i < p.num_provider_specific_attr; i++)
		CHECK(p.provider_specific_attr[i].name && p.provider_specific_attr[i].value, "a named attribute");
	/* A bit 1.2's mask does not have is argument 3. */
	EXPECT_RC(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL + 1, &a, 0, NULL),
		  ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
	EXPECT_RC(dat_ia_query(ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_ALL + 1, &p),
		  ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	*address = a.ia_address_ptr;
	printf("ok ia_query: %s, %s, DAT %u.%u, max message %llu\n", a.adapter_name, p.provider_name,
	       p.dapl_version_major, p.dapl_version_minor, (unsigned long long)a.max_message_size);
}

static DAT_EVENT software(void *pointer)
{
	DAT_EVENT e;
	memset(&e, 0, sizeof e);
	e.event_number = DAT_SOFTWARE_EVENT;
	e.event_data.software_event_data.pointer = pointer;
	return e;
}

/* The canary past a 1.2 event: a library writing 2.0's 120 bytes would overwrite it. */
struct guarded_event {
	DAT_EVENT e;
	unsigned char canary[120 - sizeof(DAT_EVENT)];
};

static void canary_set(struct guarded_event *g)
{
	memset(g, 0xa5, sizeof *g);
}

static int canary_ok(const struct guarded_event *g)
{
	for (size_t i = 0; i < sizeof g->canary; i++)
		if (g->canary[i] != 0xa5)
			return 0;
	return 1;
}

static void software_events(void)
{
	DAT_EVD_HANDLE evd;
	DAT_EVENT e1 = software((void *)0x1201), e2 = software((void *)0x1202);
	struct guarded_event got;
	DAT_COUNT more = -1;
	CHECK(sizeof(DAT_EVENT) == 48, "the 1.2 DAT_EVENT is 48 bytes");
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd));

	MUST(dat_evd_post_se(evd, &e1));
	canary_set(&got);
	MUST(dat_evd_dequeue(evd, &got.e));
	CHECK(got.e.event_number == DAT_SOFTWARE_EVENT, "dequeue: a software event");
	CHECK(got.e.evd_handle == evd, "dequeue: its EVD");
	CHECK(got.e.event_data.software_event_data.pointer == (void *)0x1201, "dequeue: its pointer");
	CHECK(canary_ok(&got), "dequeue: 48 bytes written, no more");
	EXPECT_RC(dat_evd_dequeue(evd, &got.e), DAT_QUEUE_EMPTY);

	MUST(dat_evd_post_se(evd, &e1));
	MUST(dat_evd_post_se(evd, &e2));
	canary_set(&got);
	MUST(dat_evd_wait(evd, WAIT_US, 1, &got.e, &more));
	CHECK(got.e.event_number == DAT_SOFTWARE_EVENT && got.e.evd_handle == evd, "wait: the event");
	CHECK(got.e.event_data.software_event_data.pointer == (void *)0x1201, "wait: the first pointer");
	CHECK(more == 1, "wait: one more");
	CHECK(canary_ok(&got), "wait: 48 bytes written, no more");
	MUST(dat_evd_wait(evd, WAIT_US, 1, &got.e, &more));
	CHECK(got.e.event_data.software_event_data.pointer == (void *)0x1202 && more == 0, "wait: the second");

	/* Nothing queued: the wait's timeout, in 1.2's numbering. */
	EXPECT_RC(dat_evd_wait(evd, 20 * 1000, 1, &got.e, &more), DAT_TIMEOUT_EXPIRED);
	/* Errors in 1.2's numbering (2.0 numbers DAT_INVALID_ARG2 otherwise). */
	EXPECT_RC(dat_evd_dequeue(evd, NULL), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_RC(dat_evd_post_se(evd, NULL), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	EXPECT_RC(dat_evd_wait(evd, 0, 0, &got.e, &more), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
	MUST(dat_evd_free(evd));
	printf("ok software events: post_se, dequeue, wait, timeout\n");
}

static void cno(void)
{
	int instance;
	DAT_OS_WAIT_PROXY_AGENT agent = { &instance, NULL };
	DAT_CNO_HANDLE cno;
	DAT_CNO_PARAM param;
	DAT_EVD_HANDLE evd, woke = DAT_HANDLE_NULL;
	DAT_EVENT e = software((void *)0xc0);
	MUST(dat_cno_create(ia, agent, &cno));
	memset(&param, 0xa5, sizeof param);
	MUST(dat_cno_query(cno, DAT_CNO_FIELD_ALL, &param));
	CHECK(param.ia_handle == ia, "CNO param: its IA");
	CHECK(param.agent.instance_data == &instance && param.agent.proxy_agent_func == NULL, "CNO param: its agent");
	EXPECT_RC(dat_cno_query(cno, DAT_CNO_FIELD_ALL + 1, &param), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));

	MUST(dat_evd_create(ia, 8, cno, DAT_EVD_SOFTWARE_FLAG, &evd));
	MUST(dat_evd_post_se(evd, &e));
	MUST(dat_cno_wait(cno, WAIT_US, &woke));
	CHECK(woke == evd, "CNO wait: the EVD with the event");
	MUST(dat_evd_dequeue(evd, &e));
	/* Nothing to wake it: the man page's DAT_QUEUE_EMPTY, and no EVD. */
	EXPECT_RC(dat_cno_wait(cno, 20 * 1000, &woke), DAT_QUEUE_EMPTY);
	CHECK(woke == DAT_HANDLE_NULL, "CNO wait timed out: no EVD");
	EXPECT_RC(dat_cno_wait(DAT_HANDLE_NULL, 0, &woke), ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO));
	MUST(dat_evd_free(evd));
	MUST(dat_cno_free(cno));
	printf("ok CNO: query, wait, timeout\n");
}

static void names(void)
{
	const char *major = NULL, *minor = NULL;
	MUST(dat_strerror(ERR(DAT_PRIVILEGES_VIOLATION, DAT_PRIVILEGES_RDMA_WRITE), &major, &minor));
	CHECK(strcmp(major, "DAT_PRIVILEGES_VIOLATION") == 0, "strerror: the type");
	CHECK(strcmp(minor, "DAT_PRIVILEGES_RDMA_WRITE") == 0, "strerror: a subtype 1.2 numbers apart");
	MUST(dat_strerror(ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED), &major, &minor));
	CHECK(strcmp(minor, "DAT_INVALID_STATE_EP_DISCONNECTED") == 0, "strerror: an EP state");
	MUST(dat_strerror(ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE1), &major, &minor));
	CHECK(strcmp(minor, "DAT_INVALID_HANDLE1") == 0, "strerror: DAT_INVALID_HANDLE1");
	MUST(dat_strerror(DAT_NOT_IMPLEMENTED, &major, &minor));
	CHECK(strcmp(major, "DAT_NOT_IMPLEMENTED") == 0, "strerror: 1.2's DAT_NOT_IMPLEMENTED");
	EXPECT_RC(dat_strerror(DAT_SUCCESS, NULL, NULL), ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	printf("ok strerror: 1.2 codes\n");
}

static DAT_EVENT next(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, const char *what)
{
	DAT_EVENT e;
	DAT_COUNT more;
	memset(&e, 0, sizeof e);
	MUST(dat_evd_wait(evd, WAIT_US, 1, &e, &more));
	if (e.event_number != want) {
		fprintf(stderr, "FAIL %s: event 0x%x, want 0x%x\n", what, (unsigned)e.event_number, (unsigned)want);
		exit(1);
	}
	CHECK(e.evd_handle == evd, what);
	return e;
}

static void connection(DAT_IA_ADDRESS_PTR address)
{
	static char hello[] = "hello from 1.2", welcome[] = "welcome, 1.2";
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE cr_evd, s_conn, c_conn, s_dto, c_dto;
	DAT_EP_HANDLE s_ep, c_ep;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL port;
	DAT_CR_PARAM cr_param;
	DAT_EVENT e;
	MUST(dat_pz_create(ia, &pz));
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd));
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &s_conn));
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &c_conn));
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s_dto));
	MUST(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c_dto));
	MUST(dat_ep_create(ia, pz, s_dto, s_dto, s_conn, NULL, &s_ep));
	MUST(dat_ep_create(ia, pz, c_dto, c_dto, c_conn, NULL, &c_ep));
	MUST(dat_psp_create_any(ia, &port, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	MUST(dat_ep_connect(c_ep, address, port, WAIT_US, sizeof hello, hello, DAT_QOS_BEST_EFFORT,
			    DAT_CONNECT_DEFAULT_FLAG));

	e = next(cr_evd, DAT_CONNECTION_REQUEST_EVENT, "CR arrival");
	CHECK(e.event_data.cr_arrival_event_data.sp_handle.psp_handle == psp, "CR arrival: the PSP");
	CHECK(e.event_data.cr_arrival_event_data.conn_qual == port, "CR arrival: the port");
	CHECK(e.event_data.cr_arrival_event_data.local_ia_address_ptr != NULL, "CR arrival: the local address");
	CHECK(e.event_data.cr_arrival_event_data.cr_handle != DAT_HANDLE_NULL, "CR arrival: a CR");
	MUST(dat_cr_query(e.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &cr_param));
	CHECK(cr_param.private_data_size >= (DAT_COUNT)sizeof hello &&
		      memcmp(cr_param.private_data, hello, sizeof hello) == 0, "CR: the client's private data");
	MUST(dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, s_ep, sizeof welcome, welcome));

	e = next(s_conn, DAT_CONNECTION_EVENT_ESTABLISHED, "server established");
	CHECK(e.event_data.connect_event_data.ep_handle == s_ep, "server established: its EP");
	e = next(c_conn, DAT_CONNECTION_EVENT_ESTABLISHED, "client established");
	CHECK(e.event_data.connect_event_data.ep_handle == c_ep, "client established: its EP");
	CHECK(e.event_data.connect_event_data.private_data_size >= (DAT_COUNT)sizeof welcome &&
		      memcmp(e.event_data.connect_event_data.private_data, welcome, sizeof welcome) == 0,
	      "client established: the server's private data");

	MUST(dat_ep_disconnect(c_ep, DAT_CLOSE_GRACEFUL_FLAG));
	e = next(c_conn, DAT_CONNECTION_EVENT_DISCONNECTED, "client disconnected");
	CHECK(e.event_data.connect_event_data.ep_handle == c_ep, "client disconnected: its EP");
	e = next(s_conn, DAT_CONNECTION_EVENT_DISCONNECTED, "server disconnected");
	CHECK(e.event_data.connect_event_data.ep_handle == s_ep, "server disconnected: its EP");

	MUST(dat_psp_free(psp));
	MUST(dat_ep_free(c_ep));
	MUST(dat_ep_free(s_ep));
	printf("ok connection: CR arrival, established (private data), disconnected\n");
}

int main(void)
{
	DAT_IA_ADDRESS_PTR address;
	static char tcp_lo[] = "tcp-lo";
	ia_name = getenv("DAT_IA") ? getenv("DAT_IA") : tcp_lo;
	MUST(dat_ia_open(ia_name, 8, &async_evd, &ia));
	ia_attributes(&address);
	software_events();
	cno();
	names();
	connection(address);
	MUST(dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	printf("ok events12: all\n");
	return 0;
}
