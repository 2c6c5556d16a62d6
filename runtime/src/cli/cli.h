/*
 * cli.h - the tfjob-runtime command line (main.c is a one-line wrapper, so
 * test programs can embed the same entry point and act as the runtime
 * binary when `launch` re-executes them).
 *
 *   tfjob-runtime train  [flags]   run one task (cluster from TF_CONFIG or flags)
 *   tfjob-runtime launch [flags]   run a whole cluster locally
 *   tfjob-runtime help | version
 *
 * Returns the process exit code (tfj/exitcode.h).
 */
#ifndef TFJ_CLI_H
#define TFJ_CLI_H

int tfj_cli_main(int argc, char **argv);

#endif
