/*
 * main.c - tfjob-runtime: the distributed training runtime (see cli.h).
 */
#include "cli/cli.h"
#include "compute/blascore.h"

int main(int argc, char **argv)
{
	/* Before anything else: it may replace this process (blascore.h). */
	tfj_blascore_reexec(argv);
	return tfj_cli_main(argc, argv);
}
