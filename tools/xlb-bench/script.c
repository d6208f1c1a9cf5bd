// SPDX-License-Identifier: GPL-2.0
/*
 * The subcommands whose work is a script beside this program: path
 * (tools/xlb-bench/path.sh: forwarded pps and conn/s through the test
 * network) and cluster (tools/xlb-bench/cluster.sh: three LB hosts behind
 * a router, in the test network of tests/e2e/lib/edge.sh: failover time,
 * the router's reroute time, change propagation, the hosts' agreement).
 * xlb-bench execs the script with its own options (-j, --quick) and the
 * subcommand's arguments; XLB_BIN tells it where the programs are.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int bench_script(const struct opts *o, const char *name, int argc, char **argv)
{
	char self[512], script[600], *dir;
	const char *args[16];
	ssize_t len;
	int n = 0, i;

	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return 1;
	self[len] = 0;
	dir = dirname(self);
	setenv("XLB_BIN", dir, 0);
	snprintf(script, sizeof(script), "%s/../tools/xlb-bench/%s.sh", dir, name);
	if (access(script, X_OK))
		snprintf(script, sizeof(script), "tools/xlb-bench/%s.sh", name);
	args[n++] = script;
	if (o->json)
		args[n++] = "-j";
	if (o->quick)
		args[n++] = "--quick";
	for (i = 1; i < argc && n < 15; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(script, (char *const *)args);
	fprintf(stderr, "xlb-bench: %s: cannot run %s: %s\n", name, script,
		strerror(errno));
	return 1;
}
