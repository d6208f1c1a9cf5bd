// SPDX-License-Identifier: GPL-2.0
/*
 * What each of xlbd's threads may do (docs/operations.md, "Privileges").
 *
 * Credentials are per thread in Linux: capabilities, the bounding and
 * ambient sets, no_new_privs and the user and group ids each belong to the
 * thread that set them, and a new thread starts with a copy of its
 * creator's.  So every thread gives up what it does not need itself:
 *
 *   main (the loop)  keeps XLBD_PRIVS_MAIN (xlbd.h): attaching and
 *                    detaching (libxdp), tables, routes and neighbours;
 *                    CAP_BPF is only permitted, for the table workers
 *   table workers    keep CAP_BPF: they create and fill table maps
 *   the state saver  keeps none, as root: it writes the saved state
 *   the others       (metrics server, health checks, connection count,
 *                    etcd) keep no capability and run as the user
 *                    nobody, with no groups
 *
 * and every one clears its bounding and ambient sets and sets
 * no_new_privs.  The unprivileged threads are all started before the main
 * thread gives up CAP_SETUID, CAP_SETGID and CAP_SETPCAP, which they need
 * to leave root; table workers, started later, only narrow what they got.
 * The libc's set*id() functions change every thread, so the ids are set
 * with the system calls themselves, which change the calling one.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xlbd.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const cap_value_t keep_main[] = { XLBD_PRIVS_MAIN };
static const cap_value_t keep_worker[] = { CAP_BPF };
/* needed at start to hand threads their credentials */
static const cap_value_t start_only[] = { CAP_BPF, CAP_SETUID, CAP_SETGID,
					  CAP_SETPCAP };

static uid_t nobody_uid = 65534;
static gid_t nobody_gid = 65534;

/* Every capability out of the calling thread's bounding set. */
static int bounding_clear(void)
{
	int c, last = (int)cap_max_bits();

	for (c = 0; c < last; c++) {
		int in = prctl(PR_CAPBSET_READ, c, 0, 0, 0);

		if (in < 0)
			return -errno;
		if (in && prctl(PR_CAPBSET_DROP, c, 0, 0, 0))
			return -errno;
	}
	return 0;
}

/*
 * The calling thread's effective set becomes eff[], its permitted set
 * eff[] and more[] (kept to hand down, not used), inheritable empty.
 */
static int caps_set(const cap_value_t *eff, int n, const cap_value_t *more,
		    int m)
{
	cap_t c = cap_init();
	int ret = 0;

	if (!c)
		return -errno;
	if ((n && (cap_set_flag(c, CAP_EFFECTIVE, n, eff, CAP_SET) ||
		   cap_set_flag(c, CAP_PERMITTED, n, eff, CAP_SET))) ||
	    (m && cap_set_flag(c, CAP_PERMITTED, m, more, CAP_SET)) ||
	    cap_set_proc(c))
		ret = -errno;
	cap_free(c);
	return ret;
}

/* Bounding and ambient sets empty, no_new_privs: common to every thread. */
static int no_gain(void)
{
	int ret = bounding_clear();

	if (ret)
		return ret;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/* Does the calling thread hold cap in its effective set? */
static bool holds(cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t c = cap_get_proc();

	if (c)
		cap_get_flag(c, cap, CAP_EFFECTIVE, &v);
	cap_free(c);
	return v == CAP_SET;
}

int xlbd_privs_init(struct xlb_err *err)
{
	const struct passwd *pw = getpwnam("nobody");
	char missing[200] = "";
	size_t i;

	if (pw) {
		nobody_uid = pw->pw_uid;
		nobody_gid = pw->pw_gid;
	}
	for (i = 0; i < ARRAY_SIZE(keep_main) + ARRAY_SIZE(start_only); i++) {
		cap_value_t c = i < ARRAY_SIZE(keep_main) ? keep_main[i] :
				start_only[i - ARRAY_SIZE(keep_main)];
		char *name;

		if (holds(c))
			continue;
		name = cap_to_name(c);
		snprintf(missing + strlen(missing),
			 sizeof(missing) - strlen(missing), " %s",
			 name ? name : "?");
		cap_free(name);
	}
	if (missing[0])
		return xlb_errf(err, EPERM,
				"xlbd needs these capabilities at start and has not:%s (a systemd unit's CapabilityBoundingSet must allow them: dist/xlbd.service)",
				missing);
	return 0;
}

void xlbd_privs_none(const char *name)
{
	int ret;

	prctl(PR_SET_NAME, name, 0, 0, 0);
	ret = no_gain();
	/* groups first: leaving uid 0 takes the right to change them */
	if (!ret && (syscall(SYS_setgroups, 0, NULL) ||
		     syscall(SYS_setresgid, nobody_gid, nobody_gid,
			     nobody_gid) ||
		     syscall(SYS_setresuid, nobody_uid, nobody_uid,
			     nobody_uid)))
		ret = -errno;
	if (!ret)
		ret = caps_set(NULL, 0, NULL, 0);
	if (ret) {
		/*
		 * Rather no daemon than this thread with root's rights; the
		 * data path forwards on, and the next xlbd adopts it.
		 */
		log_err("thread %s cannot give up its privileges (%s): stopping",
			name, strerror(-ret));
		_exit(1);
	}
}

void xlbd_privs_saver(void)
{
	int ret;

	prctl(PR_SET_NAME, "xlbd-save", 0, 0, 0);
	ret = no_gain();
	if (!ret)
		ret = caps_set(NULL, 0, NULL, 0);
	if (ret) {
		log_err("the state saver cannot give up its capabilities (%s): stopping",
			strerror(-ret));
		_exit(1);
	}
}

void xlbd_privs_worker(void)
{
	int ret;

	prctl(PR_SET_NAME, "xlbd-build", 0, 0, 0);
	/* once main gave up its rights, its bounding set is already empty */
	ret = no_gain();
	if (!ret)
		ret = caps_set(keep_worker, ARRAY_SIZE(keep_worker), NULL, 0);
	if (ret) {
		log_err("a table worker cannot narrow its capabilities (%s): stopping",
			strerror(-ret));
		_exit(1);
	}
}

int xlbd_privs_main(struct xlb_err *err)
{
	char names[200] = "";
	size_t i;
	int ret = no_gain();

	if (!ret)
		ret = caps_set(keep_main, ARRAY_SIZE(keep_main), keep_worker,
			       ARRAY_SIZE(keep_worker));
	if (ret)
		return xlb_errf(err, -ret, "cannot give up privileges: %s",
				strerror(-ret));
	for (i = 0; i < ARRAY_SIZE(keep_main); i++) {
		char *name = cap_to_name(keep_main[i]);

		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", i ? " " : "", name ? name : "?");
		cap_free(name);
	}
	log_info("privileges given up: the loop keeps %s, table workers cap_bpf, the other threads none (user nobody)",
		 names);
	return 0;
}
