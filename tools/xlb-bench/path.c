// SPDX-License-Identifier: GPL-2.0
/*
 * xlb-bench path: forwarded pps and conn/s through the test network
 * (tools/xlb-bench/path.sh), and its packet generator.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench.h"
#include "mono.h"
#include "pkt.h"
#include "xlb_reflect.skel.h"


/*
 * path: forwarded packets per second through the LB's veth in the test
 * network of tests/e2e/lib/topo.sh, xlb against a program that only
 * reflects (XDP_TX) on the same veth, and connections per second through a
 * VIP against one backend directly; tools/xlb-bench/path.sh does that work
 * and this execs it (script.c).  "path gen" is its packet generator, run in a client's
 * network namespace:
 *
 *   xlb-bench path gen IFNAME SRC-MAC DST-MAC SRC DST PORT SIZE SECONDS
 *
 * sends UDP frames of SIZE bytes (Ethernet header to the end of the
 * payload, no FCS) from SRC to DST:PORT out of IFNAME until SECONDS have
 * passed, and prints how many.  The frames come from the reflect program
 * run by BPF_PROG_TEST_RUN with live frames (its XDP_TX transmits on
 * IFNAME): how xdp-trafficgen works, which sends only one size of IPv6.
 * Each run sets up and tears down a page pool, which sleeps (about 20 ms
 * here), so runs are sized to last about 0.5 s (at most 2^24 frames);
 * the source port changes with every run (10000 + run % 64).  Exit status
 * PATH_GEN_REFUSED when the kernel refuses the first run (some kernels
 * forbid live frames, with EPERM): the pps part is then skipped, saying
 * why, rather than failed.
 */
static int path_mac(const char *s, __u8 mac[6])
{
	return sscanf(s, "%2hhx:%2hhx:%2hhx:%2hhx:%2hhx:%2hhx", &mac[0], &mac[1],
		      &mac[2], &mac[3], &mac[4], &mac[5]) == 6 ? 0 : -1;
}

#define PATH_GEN_REFUSED	3

static int path_gen(int argc, char **argv)
{
	static const __u8 zero[1600];
	struct xlb_reflect_bpf *skel;
	long size, secs, port, sent = 0, i, chunk = 8192;
	int family, ifindex, fd, ret = 1;
	struct pkt_spec s;
	__u8 buf[2048];
	size_t hdr;
	double t0, t1, left;

	if (argc != 8) {
		fprintf(stderr, "usage: xlb-bench path gen IFNAME SRC-MAC DST-MAC SRC DST PORT SIZE SECONDS\n");
		return 2;
	}
	family = strchr(argv[3], ':') ? 6 : 4;
	hdr = PKT_ETH_LEN + (family == 4 ? 20 : 40) + 8;
	pkt_spec_init(&s, family, IPPROTO_UDP);
	ifindex = (int)if_nametoindex(argv[0]);
	if (!ifindex || path_mac(argv[1], s.src_mac) ||
	    path_mac(argv[2], s.dst_mac) || pkt_addr(family, argv[3], s.src) ||
	    pkt_addr(family, argv[4], s.dst)) {
		fprintf(stderr, "xlb-bench: path gen: no interface %s, or a bad MAC or address (both of one family)\n",
			argv[0]);
		return 2;
	}
	port = parse_num("PORT", argv[5], 1, 65535);
	size = parse_num("SIZE", argv[6], (long)hdr, 1514);
	secs = parse_num("SECONDS", argv[7], 1, 3600);
	if (port < 0 || size < 0 || secs < 0)
		return 2;
	s.dport = (__u16)port;
	s.payload = zero;
	s.payload_len = (size_t)size - hdr;
	skel = xlb_reflect_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "xlb-bench: path gen: cannot load the reflect program: %s\n",
			strerror(errno));
		return 1;
	}
	fd = bpf_program__fd(skel->progs.xlb_reflect);
	t0 = xlb_mono_us();
	for (i = 0; (left = secs * 1e6 - (xlb_mono_us() - t0)) > 0; i++) {
		struct xdp_md ctx = { .ingress_ifindex = (__u32)ifindex };
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = buf,
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
			    .repeat = (__u32)chunk,
			    .flags = BPF_F_TEST_XDP_LIVE_FRAMES);

		s.sport = (__u16)(10000 + i % 64);
		opts.data_size_in = (__u32)pkt_build(&s, buf, sizeof(buf));
		ctx.data_end = opts.data_size_in;
		t1 = xlb_mono_us();
		if (bpf_prog_test_run_opts(fd, &opts)) {
			int e = errno;

			fprintf(stderr, "xlb-bench: path gen: live frames on %s: %s\n",
				argv[0], strerror(e));
			if (!sent && (e == EPERM || e == EOPNOTSUPP || e == EINVAL))
				ret = PATH_GEN_REFUSED;
			goto out;
		}
		sent += chunk;
		/* the next run: about 0.5 s, or what is left */
		left -= xlb_mono_us() - t1;
		chunk = (long)(chunk / (xlb_mono_us() - t1 + 1) *
			       (left < 5e5 ? left : 5e5));
		chunk = chunk < 8192 ? 8192 : chunk > 1 << 24 ? 1 << 24 : chunk;
	}
	printf("%ld packets in %.3f s\n", sent, (xlb_mono_us() - t0) / 1e6);
	ret = 0;
out:
	xlb_reflect_bpf__destroy(skel);
	return ret;
}

int bench_path(const struct opts *o, int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "gen"))
		return path_gen(argc - 2, argv + 2);
	return bench_script(o, "path", argc, argv);
}
