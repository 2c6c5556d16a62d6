/*
 * stop.c - the runtime's stop request (stop.h).
 */
#include "task/stop.h"

#include <signal.h>

static volatile sig_atomic_t stop_asked;

void tfj_stop_request(void)
{
	stop_asked = 1;
}

int tfj_stop_requested(void)
{
	return stop_asked != 0;
}
