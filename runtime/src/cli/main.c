/*
 * main.c - tfjob-runtime: the distributed training runtime (see cli.h).
 */
#include "cli/cli.h"

int main(int argc, char **argv)
{
	return tfj_cli_main(argc, argv);
}
