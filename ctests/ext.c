/*
 * The IB extension (dat_ib_extensions.h), where an IA reports it: dat_ia_query's extension
 * fields, dat_ib_open_query / dat_ib_close_query, RDMA write with immediate data, fetch-and-add
 * and compare-and-swap between two connected IAs (their completions and event data as the
 * header describes them), the counters where the IA names DAT_COUNTERS, and unreliable
 * datagrams between two UD EPs. An IA that reports no IB extension runs only the first case.
 */
#include "side.h"

#include <dat2/dat_ib_extensions.h>

/* The extension event data of an event (dat_ib_extensions.h: "When dat_event->event_number >=
 * DAT_IB_EXTENSION_BASE_RANGE then dat_event->extension_data == DAT_IB_EXTENSION_EVENT_DATA"). */
static DAT_IB_EXTENSION_EVENT_DATA *ext_data(DAT_EVENT *e)
{
	return (DAT_IB_EXTENSION_EVENT_DATA *)&e->event_extension_data[0];
}

/* Whether `e` is the successful completion of the DTO of `cookie`, as DAT_IB_DTO_EVENT of the
 * extension type `type`. */
static int ib_dto_done(DAT_EVENT *e, DAT_IB_EXT_TYPE type, DAT_UINT64 cookie)
{
	return e->event_number == (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT && ext_data(e)->type == type &&
	       e->event_data.dto_completion_event_data.user_cookie.as_64 == cookie &&
	       e->event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS;
}

/* Whether the IA names provider-specific attribute `name` with value "TRUE". */
static int names_true(DAT_IA_HANDLE ia, const char *name)
{
	DAT_IA_ATTR ia_attr;
	DAT_PROVIDER_ATTR pr;
	int i;
	if (dat_ia_query(ia, NULL, 0, &ia_attr, DAT_PROVIDER_FIELD_ALL, &pr) != DAT_SUCCESS)
		return 0;
	for (i = 0; i < pr.num_provider_specific_attr; i++)
		if (!strcmp(pr.provider_specific_attr[i].name, name))
			return !strcmp(pr.provider_specific_attr[i].value, "TRUE");
	return 0;
}

static unsigned char atomic_buf[64];

int main(void)
{
	struct side a, p;
	DAT_IA_ATTR ia_attr;
	DAT_EVENT e;
	DAT_DTO_COOKIE c;
	DAT_LMR_HANDLE atomic_lmr;
	DAT_LMR_CONTEXT atomic_lctx;
	DAT_RMR_CONTEXT atomic_rctx;
	DAT_VLEN len;
	DAT_VADDR addr;
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET r;
	/* At the function's scope: a case's guard (sigsetjmp) reads them. */
	DAT_UINT64 word, before = 0, original = 0;

	watchdog(120);
	connected_pair(&a, &p);
	must(dat_ia_query(a.ia, NULL, DAT_IA_FIELD_ALL, &ia_attr, 0, NULL), "dat_ia_query");
	/* dat_ib_extensions.h defines DAT_IB_EXTENSION_VERSION 209 (2.0.9): an IA with the IB
	 * extension reports its type and version. */
	expect_true("ext/ia_query-reports-ib-extension",
		    ia_attr.extension_supported == DAT_EXTENSION_IB || ia_attr.extension_supported == DAT_EXTENSION_NONE,
		    "DAT_EXTENSION_IB (or DAT_EXTENSION_NONE)");
	if (ia_attr.extension_supported != DAT_EXTENSION_IB)
		return check_failures ? 1 : 0;
	expect_true("ext/ia_query-extension-version", ia_attr.extension_version >= 200, "2.0.x (>= 200)");

	/* dat_ib_open_query: "Given IA name, open appropriate provider for fast attribute query":
	 * the attributes of the IA, and a handle that dat_ib_close_query closes. */
	{
		DAT_IA_HANDLE q = DAT_HANDLE_NULL;
		DAT_IA_ATTR qa;
		DAT_PROVIDER_ATTR qp;
		memset(&qa, 0, sizeof(qa));
		expect_ret("ext/open_query", dat_ib_open_query(ia_name(), &q, DAT_IA_FIELD_ALL, &qa,
							       DAT_PROVIDER_FIELD_ALL, &qp), DAT_SUCCESS);
		expect_true("ext/open_query-attributes",
			    q != DAT_HANDLE_NULL && qa.extension_supported == DAT_EXTENSION_IB &&
				    qa.max_eps == ia_attr.max_eps,
			    "a handle, and the IA's attributes");
		if (q != DAT_HANDLE_NULL)
			expect_ret("ext/close_query", dat_ib_close_query(q), DAT_SUCCESS);
		/* A name no provider has: as dat_ia_open, "DAT_PROVIDER_NOT_FOUND: The specified
		 * provider was not registered in the registry." */
		expect_type("ext/open_query-unknown-name",
			    dat_ib_open_query((DAT_NAME_PTR) "no-such-ia", &q, DAT_IA_FIELD_ALL, &qa, 0, NULL),
			    DAT_PROVIDER_NOT_FOUND);
	}

	/* RDMA write with immediate data: "the immediate data is delivered to the remote side via
	 * a receive completion": the peer's posted receive completes as DAT_IB_DTO_EVENT of type
	 * DAT_IB_RDMA_WRITE_IMMED_DATA with the data; the written bytes are in the peer's region;
	 * the request completes as DAT_IB_DTO_EVENT of type DAT_IB_RDMA_WRITE_IMMED. */
	{
		DAT_LMR_TRIPLET rv = iov(&p, 2048, 64);
		c.as_64 = 41;
		must(dat_ep_post_recv(p.ep, 1, &rv, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv");
		memcpy(a.buf, "immediate", 9);
		l = iov(&a, 0, 9);
		r.rmr_context = p.rmr_ctx;
		r.virtual_address = (DAT_VADDR)(uintptr_t)(p.buf + 100);
		r.segment_length = 9;
		c.as_64 = 42;
		expect_ret("ext/rdma_write_immed", dat_ib_post_rdma_write_immed(a.ep, 1, &l, c, &r, 0x1234abcd,
										 DAT_COMPLETION_DEFAULT_FLAG),
			   DAT_SUCCESS);
		e = next(p.recv_evd);
		expect_true("ext/rdma_write_immed-receiver-event",
			    ib_dto_done(&e, DAT_IB_RDMA_WRITE_IMMED_DATA, 41) && ext_data(&e)->val.immed.data == 0x1234abcd,
			    "DAT_IB_DTO_EVENT, DAT_IB_RDMA_WRITE_IMMED_DATA, data 0x1234abcd, the receive's cookie");
		expect_true("ext/rdma_write_immed-data-landed", !memcmp(p.buf + 100, "immediate", 9),
			    "the written bytes in the peer's region");
		e = next(a.req_evd);
		expect_true("ext/rdma_write_immed-request-event",
			    ib_dto_done(&e, DAT_IB_RDMA_WRITE_IMMED, 42),
			    "DAT_IB_DTO_EVENT, DAT_IB_RDMA_WRITE_IMMED, cookie 42, success");
	}

	/* The atomics, on a word of a region the peer registered with
	 * DAT_IB_MEM_PRIV_REMOTE_ATOMIC: the original word lands in the local segment. */
	region.for_va = atomic_buf;
	must(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(atomic_buf), p.pz,
			    DAT_MEM_PRIV_ALL_FLAG | DAT_IB_MEM_PRIV_REMOTE_ATOMIC, DAT_VA_TYPE_VA, &atomic_lmr,
			    &atomic_lctx, &atomic_rctx, &len, &addr),
	     "dat_lmr_create (atomic)");
	word = 5;
	memcpy(atomic_buf + 8, &word, 8);
	r.rmr_context = atomic_rctx;
	r.virtual_address = (DAT_VADDR)(uintptr_t)(atomic_buf + 8);
	r.segment_length = 8;
	if (names_true(a.ia, "DAT_IB_FETCH_AND_ADD")) {
		/* "dat_ib_post_fetch_and_add: ... atomically add the value to the remote 64-bit
		 * memory and return the original value". */
		l = iov(&a, 512, 8);
		c.as_64 = 43;
		expect_ret("ext/fetch_and_add", dat_ib_post_fetch_and_add(a.ep, 10, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
			   DAT_SUCCESS);
		e = next(a.req_evd);
		memcpy(&word, a.buf + 512, 8);
		expect_true("ext/fetch_and_add-completion",
			    ib_dto_done(&e, DAT_IB_FETCH_AND_ADD, 43) && word == 5,
			    "DAT_IB_DTO_EVENT, DAT_IB_FETCH_AND_ADD, the original 5");
		memcpy(&word, atomic_buf + 8, 8);
		expect_true("ext/fetch_and_add-target", word == 15, "the peer's word is 15");
		/* An atomic's local segment holds the 64-bit original: a shorter one is invalid. */
		l = iov(&a, 512, 4);
		expect_type("ext/fetch_and_add-short-local-segment",
			    dat_ib_post_fetch_and_add(a.ep, 1, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
			    DAT_INVALID_PARAMETER);
	}
	if (names_true(a.ia, "DAT_IB_CMP_AND_SWAP")) {
		/* "dat_ib_post_cmp_and_swap: ... compare the remote 64-bit memory with the compare
		 * value and if equal swap": a wrong guess leaves it, a right one swaps it; both bring
		 * back the original. */
		memcpy(&before, atomic_buf + 8, 8);
		l = iov(&a, 520, 8);
		c.as_64 = 44;
		expect_ret("ext/cmp_and_swap-mismatch",
			   dat_ib_post_cmp_and_swap(a.ep, before + 1, 77, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
			   DAT_SUCCESS);
		e = next(a.req_evd);
		memcpy(&word, atomic_buf + 8, 8);
		expect_true("ext/cmp_and_swap-mismatch-leaves-word",
			    e.event_number == (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT &&
				    ext_data(&e)->type == DAT_IB_CMP_AND_SWAP && word == before,
			    "DAT_IB_CMP_AND_SWAP, the word unchanged");
		expect_ret("ext/cmp_and_swap-match",
			   dat_ib_post_cmp_and_swap(a.ep, before, 77, &l, c, &r, DAT_COMPLETION_DEFAULT_FLAG),
			   DAT_SUCCESS);
		e = next(a.req_evd);
		memcpy(&word, atomic_buf + 8, 8);
		memcpy(&original, a.buf + 520, 8);
		expect_true("ext/cmp_and_swap-match-swaps",
			    e.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS && word == 77 &&
				    original == before,
			    "the word swapped to 77, the original returned");
	}

	/* The counters, where the IA names DAT_COUNTERS (OpenFabrics' counters build): the EP's
	 * posts counted, one counter readable alone at its index. */
	if (names_true(a.ia, DAT_IB_ATTR_COUNTERS)) {
		DAT_UINT64 cntrs[DCNT_EP_ALL_COUNTERS];
		memset(cntrs, 0, sizeof(cntrs));
		expect_ret("ext/query_counters", dat_ib_query_counters(a.ep, DCNT_EP_ALL_COUNTERS, cntrs, 0), DAT_SUCCESS);
		expect_true("ext/query_counters-ep-posts",
			    cntrs[DCNT_EP_POST_WRITE_IMM] == 1 && cntrs[DCNT_EP_POST_WRITE_IMM_DATA] == 9,
			    "one write with immediate data of 9 bytes");
		memset(cntrs, 0xff, sizeof(cntrs));
		expect_ret("ext/query_counters-one", dat_ib_query_counters(a.ep, DCNT_EP_CONNECT, cntrs, 0), DAT_SUCCESS);
		expect_true("ext/query_counters-one-value",
			    cntrs[DCNT_EP_CONNECT] == 1 && cntrs[DCNT_EP_DISCONNECT] == (DAT_UINT64)-1,
			    "DCNT_EP_CONNECT 1 at its index, nothing else written");
		/* dat_ib_start_counter / dat_ib_stop_counter sample the device's counters of a
		 * kind into the IA's; the IA's own (its EPs made) are left as they were. (Called as
		 * the macros expand: they cast to DAT_COUNTER_TYPE, which the header never
		 * defines, so no C program can use them as written.) */
		{
			DAT_UINT64 ia_cntrs[DCNT_IA_ALL_COUNTERS];
			expect_ret("ext/start_counter",
				   dat_extension_op(a.ia, DAT_IB_START_COUNTERS_OP, (DAT_IA_COUNTER_TYPE)DCNT_IA_LNK), DAT_SUCCESS);
			expect_ret("ext/stop_counter",
				   dat_extension_op(a.ia, DAT_IB_STOP_COUNTERS_OP, (DAT_IA_COUNTER_TYPE)DCNT_IA_LNK), DAT_SUCCESS);
			memset(ia_cntrs, 0, sizeof(ia_cntrs));
			expect_true("ext/stop_counter-keeps-ia-counters",
				    dat_ib_query_counters(a.ia, DCNT_IA_ALL_COUNTERS, ia_cntrs, 0) == DAT_SUCCESS &&
					    ia_cntrs[DCNT_IA_EP_CREATE] >= 1,
				    "the IA's EP count still there");
		}
	}
	/* Unreliable datagrams (DAT_IB_SERVICE_TYPE_UD): a UD EP's dat_ep_connect reaches the
	 * peer's service point as DAT_IB_UD_CONNECTION_REQUEST_EVENT; once accepted by a UD EP,
	 * each side gets DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED whose extension data carries the
	 * address handle of the other EP (DAT_IB_UD_REMOTE_AH for the requester,
	 * DAT_IB_UD_PASSIVE_REMOTE_AH for the acceptor); dat_ib_post_send_ud sends through it, and
	 * the receive holds the 40-byte routing header before the data. */
	{
		DAT_EP_ATTR ud_attr;
		DAT_EP_HANDLE ua = DAT_HANDLE_NULL, up = DAT_HANDLE_NULL;
		DAT_PSP_HANDLE psp;
		DAT_CR_PARAM crp;
		DAT_IB_ADDR_HANDLE to_p, to_a;
		struct sockaddr_in sin;
		DAT_CONN_QUAL port;
		memset(&ud_attr, 0, sizeof(ud_attr));
		ud_attr.service_type = (DAT_SERVICE_TYPE)DAT_IB_SERVICE_TYPE_UD;
		ud_attr.max_message_size = 1024;
		ud_attr.max_recv_dtos = 4;
		ud_attr.max_request_dtos = 4;
		ud_attr.max_recv_iov = 1;
		ud_attr.max_request_iov = 1;
		expect_ret("ext/ud-ep_create", dat_ep_create(a.ia, a.pz, a.recv_evd, a.req_evd, a.conn_evd, &ud_attr, &ua),
			   DAT_SUCCESS);
		if (ua != DAT_HANDLE_NULL &&
		    dat_ep_create(p.ia, p.pz, p.recv_evd, p.req_evd, p.conn_evd, &ud_attr, &up) == DAT_SUCCESS) {
			l = iov(&p, 1024, 512);
			c.as_64 = 51;
			must(dat_ep_post_recv(up, 1, &l, c, DAT_COMPLETION_DEFAULT_FLAG), "dat_ep_post_recv (UD)");
			port = listen_any(&p, &psp);
			ia_own_address(p.ia, &sin);
			expect_ret("ext/ud-connect",
				   dat_ep_connect(ua, (DAT_IA_ADDRESS_PTR)&sin, port, WAIT_US, 2, (DAT_PVOID) "ud",
						  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
				   DAT_SUCCESS);
			e = next(p.cr_evd);
			expect_true("ext/ud-request-event",
				    e.event_number == (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_REQUEST_EVENT,
				    "DAT_IB_UD_CONNECTION_REQUEST_EVENT");
			memset(&crp, 0, sizeof(crp));
			if (e.event_number == (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_REQUEST_EVENT &&
			    dat_cr_query(e.event_data.cr_arrival_event_data.cr_handle, DAT_CR_FIELD_ALL, &crp) == DAT_SUCCESS) {
				expect_true("ext/ud-request-private-data",
					    crp.private_data_size == 2 && !memcmp(crp.private_data, "ud", 2),
					    "the requester's 2 bytes");
				expect_ret("ext/ud-accept",
					   dat_cr_accept(e.event_data.cr_arrival_event_data.cr_handle, up, 3, (DAT_PVOID) "yes"),
					   DAT_SUCCESS);
				e = next(p.conn_evd);
				to_a = ext_data(&e)->remote_ah;
				expect_true("ext/ud-established-acceptor",
					    e.event_number == (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED &&
						    e.event_data.connect_event_data.ep_handle == up &&
						    ext_data(&e)->type == DAT_IB_UD_PASSIVE_REMOTE_AH && to_a.ah != NULL,
					    "DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, DAT_IB_UD_PASSIVE_REMOTE_AH, an address handle");
				e = next(a.conn_evd);
				to_p = ext_data(&e)->remote_ah;
				expect_true("ext/ud-established-requester",
					    e.event_number == (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED &&
						    e.event_data.connect_event_data.ep_handle == ua &&
						    ext_data(&e)->type == DAT_IB_UD_REMOTE_AH && to_p.ah != NULL &&
						    e.event_data.connect_event_data.private_data_size == 3 &&
						    !memcmp(e.event_data.connect_event_data.private_data, "yes", 3),
					    "DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED, DAT_IB_UD_REMOTE_AH, the acceptor's 3 bytes");
				if (e.event_number == (DAT_EVENT_NUMBER)DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED) {
					memcpy(a.buf + 1024, "datagram", 8);
					l = iov(&a, 1024, 8);
					c.as_64 = 52;
					expect_ret("ext/ud-post_send_ud",
						   dat_ib_post_send_ud(ua, 1, &l, &to_p, c, DAT_COMPLETION_DEFAULT_FLAG),
						   DAT_SUCCESS);
					e = next(a.req_evd);
					expect_true("ext/ud-send-event",
						    ib_dto_done(&e, DAT_IB_UD_SEND, 52),
						    "DAT_IB_DTO_EVENT, DAT_IB_UD_SEND, cookie 52, success");
					e = next(p.recv_evd);
					expect_true("ext/ud-recv-event",
						    ib_dto_done(&e, DAT_IB_UD_RECV, 51) &&
							    e.event_data.dto_completion_event_data.transfered_length == 40 + 8 &&
							    !memcmp(p.buf + 1024 + 40, "datagram", 8),
						    "DAT_IB_DTO_EVENT, DAT_IB_UD_RECV, 40 + 8 bytes, the data behind the routing header");
					expect_ret("ext/ud-ah_free", dat_ib_ud_ah_free(ua, &to_p), DAT_SUCCESS);
				}
			}
			dat_psp_free(psp);
		}
		if (up != DAT_HANDLE_NULL)
			dat_ep_free(up);
		if (ua != DAT_HANDLE_NULL)
			dat_ep_free(ua);
	}
	dat_lmr_free(atomic_lmr);
	close_side(&a);
	close_side(&p);
	return check_failures ? 1 : 0;
}
