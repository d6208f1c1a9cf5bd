/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Attaching the data path to interfaces through libxdp, so xlb coexists
 * with other XDP programs (libxdp's multi-program dispatcher where the
 * kernel supports it; libxdp falls back to a plain attachment where it
 * does not).
 */
#ifndef XLB_ATTACH_H
#define XLB_ATTACH_H

#include "error.h"

struct bpf_object;
struct xdp_program;

/*
 * Attach the xdp program of obj to ifindex (native, or generic when asked).
 * The first call takes an opened, not yet loaded object and lets libxdp
 * load it (*prog is NULL then and is set); later calls attach the same
 * program elsewhere.  Returns 0 or a negative errno with err filled.
 */
int xlb_link_attach(struct xdp_program **prog, struct bpf_object *obj,
		    int ifindex, int generic, struct xlb_err *err);

int xlb_link_detach(struct xdp_program *prog, int ifindex, int generic,
		    struct xlb_err *err);

/* The id of the XDP program the kernel runs on ifindex (0: none). */
int xlb_link_prog_id(int ifindex, int generic, __u32 *id);

#endif /* XLB_ATTACH_H */
