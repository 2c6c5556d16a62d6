/*
 * main.c - tfjob-agent entry point; everything lives in agent.c.
 */
#include "agent.h"

int main(int argc, char **argv)
{
	return tfj_agent_main(argc, argv);
}
