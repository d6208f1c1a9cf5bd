// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench cluster: three LB hosts behind a router, in the test network
 * of tests/e2e/lib/edge.sh: failover time (an LB host lost -> the last
 * held connection answering again), the router's reroute time, change
 * propagation (etcd write -> every host live, p50 and p99) and the hosts'
 * agreement.  tools/xlb-bench/cluster.sh does that work and this execs it,
 * as path does with path.sh.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int bench_cluster(const struct opts *o, int argc, char **argv)
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
	snprintf(script, sizeof(script), "%s/../tools/xlb-bench/cluster.sh", dir);
	if (access(script, X_OK))
		snprintf(script, sizeof(script), "tools/xlb-bench/cluster.sh");
	args[n++] = script;
	if (o->json)
		args[n++] = "-j";
	if (o->quick)
		args[n++] = "--quick";
	for (i = 1; i < argc && n < 15; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(script, (char *const *)args);
	fprintf(stderr, "xlb-bench: cluster: cannot run %s: %s\n", script,
		strerror(errno));
	return 1;
}
