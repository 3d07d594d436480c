/*
 * DAT 1.2 programs built against include/dat and linked with -ldat take each DAT function in
 * version node DAT_1.2 (the library's plain name is its DAT 2.0 one). ctests/run.sh passes this
 * file with -include to the 1.2 half of the suite while include/dat/udat.h does not say so itself
 * (the list is the 1.2 library's: every DAT_1.2 function of a user-space libdat.so.1).
 */
#ifndef LIBDAT_CTESTS_DAT12_SYMVER_H
#define LIBDAT_CTESTS_DAT12_SYMVER_H
__asm__(".symver dat_cno_create, dat_cno_create@DAT_1.2");
__asm__(".symver dat_cno_free, dat_cno_free@DAT_1.2");
__asm__(".symver dat_cno_modify_agent, dat_cno_modify_agent@DAT_1.2");
__asm__(".symver dat_cno_query, dat_cno_query@DAT_1.2");
__asm__(".symver dat_cno_wait, dat_cno_wait@DAT_1.2");
__asm__(".symver dat_cr_accept, dat_cr_accept@DAT_1.2");
__asm__(".symver dat_cr_handoff, dat_cr_handoff@DAT_1.2");
__asm__(".symver dat_cr_query, dat_cr_query@DAT_1.2");
__asm__(".symver dat_cr_reject, dat_cr_reject@DAT_1.2");
__asm__(".symver dat_ep_connect, dat_ep_connect@DAT_1.2");
__asm__(".symver dat_ep_create, dat_ep_create@DAT_1.2");
__asm__(".symver dat_ep_create_with_srq, dat_ep_create_with_srq@DAT_1.2");
__asm__(".symver dat_ep_disconnect, dat_ep_disconnect@DAT_1.2");
__asm__(".symver dat_ep_dup_connect, dat_ep_dup_connect@DAT_1.2");
__asm__(".symver dat_ep_free, dat_ep_free@DAT_1.2");
__asm__(".symver dat_ep_get_status, dat_ep_get_status@DAT_1.2");
__asm__(".symver dat_ep_modify, dat_ep_modify@DAT_1.2");
__asm__(".symver dat_ep_post_rdma_read, dat_ep_post_rdma_read@DAT_1.2");
__asm__(".symver dat_ep_post_rdma_write, dat_ep_post_rdma_write@DAT_1.2");
__asm__(".symver dat_ep_post_recv, dat_ep_post_recv@DAT_1.2");
__asm__(".symver dat_ep_post_send, dat_ep_post_send@DAT_1.2");
__asm__(".symver dat_ep_query, dat_ep_query@DAT_1.2");
__asm__(".symver dat_ep_recv_query, dat_ep_recv_query@DAT_1.2");
__asm__(".symver dat_ep_reset, dat_ep_reset@DAT_1.2");
__asm__(".symver dat_ep_set_watermark, dat_ep_set_watermark@DAT_1.2");
__asm__(".symver dat_evd_clear_unwaitable, dat_evd_clear_unwaitable@DAT_1.2");
__asm__(".symver dat_evd_create, dat_evd_create@DAT_1.2");
__asm__(".symver dat_evd_dequeue, dat_evd_dequeue@DAT_1.2");
__asm__(".symver dat_evd_disable, dat_evd_disable@DAT_1.2");
__asm__(".symver dat_evd_enable, dat_evd_enable@DAT_1.2");
__asm__(".symver dat_evd_free, dat_evd_free@DAT_1.2");
__asm__(".symver dat_evd_modify_cno, dat_evd_modify_cno@DAT_1.2");
__asm__(".symver dat_evd_post_se, dat_evd_post_se@DAT_1.2");
__asm__(".symver dat_evd_query, dat_evd_query@DAT_1.2");
__asm__(".symver dat_evd_resize, dat_evd_resize@DAT_1.2");
__asm__(".symver dat_evd_set_unwaitable, dat_evd_set_unwaitable@DAT_1.2");
__asm__(".symver dat_evd_wait, dat_evd_wait@DAT_1.2");
__asm__(".symver dat_get_consumer_context, dat_get_consumer_context@DAT_1.2");
__asm__(".symver dat_get_handle_type, dat_get_handle_type@DAT_1.2");
__asm__(".symver dat_ia_close, dat_ia_close@DAT_1.2");
__asm__(".symver dat_ia_openv, dat_ia_openv@DAT_1.2");
__asm__(".symver dat_ia_query, dat_ia_query@DAT_1.2");
__asm__(".symver dat_lmr_create, dat_lmr_create@DAT_1.2");
__asm__(".symver dat_lmr_free, dat_lmr_free@DAT_1.2");
__asm__(".symver dat_lmr_query, dat_lmr_query@DAT_1.2");
__asm__(".symver dat_lmr_sync_rdma_read, dat_lmr_sync_rdma_read@DAT_1.2");
__asm__(".symver dat_lmr_sync_rdma_write, dat_lmr_sync_rdma_write@DAT_1.2");
__asm__(".symver dat_psp_create, dat_psp_create@DAT_1.2");
__asm__(".symver dat_psp_create_any, dat_psp_create_any@DAT_1.2");
__asm__(".symver dat_psp_free, dat_psp_free@DAT_1.2");
__asm__(".symver dat_psp_query, dat_psp_query@DAT_1.2");
__asm__(".symver dat_pz_create, dat_pz_create@DAT_1.2");
__asm__(".symver dat_pz_free, dat_pz_free@DAT_1.2");
__asm__(".symver dat_pz_query, dat_pz_query@DAT_1.2");
__asm__(".symver dat_registry_add_provider, dat_registry_add_provider@DAT_1.2");
__asm__(".symver dat_registry_list_providers, dat_registry_list_providers@DAT_1.2");
__asm__(".symver dat_registry_remove_provider, dat_registry_remove_provider@DAT_1.2");
__asm__(".symver dat_rmr_bind, dat_rmr_bind@DAT_1.2");
__asm__(".symver dat_rmr_create, dat_rmr_create@DAT_1.2");
__asm__(".symver dat_rmr_free, dat_rmr_free@DAT_1.2");
__asm__(".symver dat_rmr_query, dat_rmr_query@DAT_1.2");
__asm__(".symver dat_rsp_create, dat_rsp_create@DAT_1.2");
__asm__(".symver dat_rsp_free, dat_rsp_free@DAT_1.2");
__asm__(".symver dat_rsp_query, dat_rsp_query@DAT_1.2");
__asm__(".symver dat_set_consumer_context, dat_set_consumer_context@DAT_1.2");
__asm__(".symver dat_srq_create, dat_srq_create@DAT_1.2");
__asm__(".symver dat_srq_free, dat_srq_free@DAT_1.2");
__asm__(".symver dat_srq_post_recv, dat_srq_post_recv@DAT_1.2");
__asm__(".symver dat_srq_query, dat_srq_query@DAT_1.2");
__asm__(".symver dat_srq_resize, dat_srq_resize@DAT_1.2");
__asm__(".symver dat_srq_set_lw, dat_srq_set_lw@DAT_1.2");
__asm__(".symver dat_strerror, dat_strerror@DAT_1.2");

#endif
