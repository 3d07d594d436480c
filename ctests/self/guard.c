/*
 * The suite's own check of its guard (check.h), run by ctests/run.sh before the areas: a call
 * that faults fails its case as a crash, a call that then blocks fails as a hang, a function the
 * library does not export fails as "not exported", and the program's watchdog is restored.
 * Exit status 0 when all four hold.
 */
#include "../check.h"

extern DAT_RETURN dat_no_such_function(void) __attribute__((weak));

static DAT_RETURN faults(void)
{
	volatile int *nowhere = (volatile int *)(uintptr_t)8;
	return (DAT_RETURN)*nowhere;
}

static DAT_RETURN blocks(void)
{
	for (;;)
		pause();
	return DAT_SUCCESS;
}

int main(void)
{
	unsigned left;
	watchdog(60);
	expect_ret("self/fault", faults(), DAT_SUCCESS);
	expect_ret("self/block", blocks(), DAT_SUCCESS);
	expect_ret("self/missing", dat_no_such_function(), DAT_SUCCESS);
	expect_ret("self/returns", DAT_SUCCESS, DAT_SUCCESS);
	left = alarm(0);
	printf("WATCHDOG\t%u\n", left);
	return 0;
}
