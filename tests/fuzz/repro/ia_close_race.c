/*
 * Found by api_fuzz -T 3: an object created while another thread closes its IA abruptly
 * can outlive the IA. dat_ia_close(DAT_CLOSE_ABRUPT_FLAG) must free every object of the IA;
 * here one thread creates RMRs on a PZ of the IA in a loop while the main thread closes the
 * IA, then the program asks dat_get_handle_type about every RMR whose creation succeeded.
 * Expected: none of them is a valid handle any more. Seen: some are, for good.
 *
 * Cause (src/objects/ia.rs): Ia::adopt inserts the handle, then pushes it on `children`;
 * Ia::free_all takes `children` once and frees that list newest first. An object adopted after
 * the take (its creator looked up the PZ or IA before the close, or the PZ is still alive
 * because free_all has not reached it) is in no list: nothing frees it.
 *
 * build: gcc -pthread -I include tests/fuzz/repro/ia_close_race.c -L LIBDIR -l:libdat2.so.2
 * run:   DAT_OVERRIDE=/dev/null LD_LIBRARY_PATH=LIBDIR ./a.out     (exit 1: objects survived)
 */
#include <dat2/udat.h>
#include <pthread.h>
#include <stdio.h>

#define N 4096
static DAT_PZ_HANDLE pz;
static DAT_RMR_HANDLE rmr[N];
static int nrmr;
static volatile int go;

static void *creator(void *unused)
{
	(void)unused;
	while (!go)
		;
	for (nrmr = 0; nrmr < N && dat_rmr_create(pz, &rmr[nrmr]) == DAT_SUCCESS; nrmr++)
		;
	return NULL;
}

int main(void)
{
	int round, i, survivors = 0, freed = 0;
	for (round = 0; round < 500; round++) {
		DAT_IA_HANDLE ia;
		DAT_EVD_HANDLE async_evd = DAT_HANDLE_NULL;
		pthread_t th;
		if (dat_ia_open("tcp-lo", 8, &async_evd, &ia) != DAT_SUCCESS || dat_pz_create(ia, &pz) != DAT_SUCCESS)
			return 2;
		go = 0;
		pthread_create(&th, NULL, creator, NULL);
		go = 1;
		for (volatile int spin = 0; spin < 2000 * (round % 50); spin++)
			;
		if (dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG) != DAT_SUCCESS)
			return 2;
		pthread_join(th, NULL);
		for (i = 0; i < nrmr; i++) {
			DAT_HANDLE_TYPE type;
			if (dat_get_handle_type(rmr[i], &type) == DAT_SUCCESS) {
				survivors++;
				freed += dat_rmr_free(rmr[i]) == DAT_SUCCESS;
			}
		}
	}
	printf("%d RMRs outlived their IA's abrupt close (dat_rmr_free then succeeded on %d of them)\n", survivors, freed);
	return survivors ? 1 : 0;
}
