/* policy_cmd: larder policy import-osv and larder policy check
 * (docs/policy.md). */
#ifndef LARDER_POLICY_CMD_H
#define LARDER_POLICY_CMD_H

/* Runs "policy" with its arguments (argv[0] is "policy"). Returns the
 * exit status: 0 done (check: nothing denied), 1 check: something is
 * denied, or an advisory file refused; 2 usage, config or I/O error. */
int policy_main(int argc, char **argv);

#endif
