// SPDX-License-Identifier: GPL-2.0
/*
 * xlbd: options, start (load or adopt the data path), the event loop and
 * the two ways to stop (leave forwarding running, or shut it down).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <linux/magic.h>
#include <net/if.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "cluster.h"
#include "config.h"
#include "number.h"
#include "proto.h"
#include "xlb.skel.h"
#include "xlbd.h"

#define BPFFS		"/sys/fs/bpf"
#define PROG_PIN	"xlb_main"

/*
 * One daemon per instance: an exclusive lock on /run/xlb/INSTANCE.lock,
 * held for the daemon's life, taken before anything is touched.
 */
static int instance_lock(const struct xlbd *d)
{
	char p[300];
	int fd;

	snprintf(p, sizeof(p), "/run/xlb/%s.lock", d->o.instance);
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_err("cannot open %s: %s", p, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		log_err("another xlbd runs instance %s (%s is locked); stop it first or choose another --instance",
			d->o.instance, p);
		close(fd);
		return -1;
	}
	return fd;	/* stays open: the lock lives with the process */
}

double xlbd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A start phase ends now: ms since the last one ended (*mark). */
static double start_lap(double *mark)
{
	double now = xlbd_now(), ms = (now - *mark) * 1e3;

	*mark = now;
	return ms;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: xlbd [-c FILE] [--instance NAME] [--socket PATH] [--state-dir DIR]\n"
"            [--metrics ADDR:PORT|none] [--group GROUP] [--conntrack-entries N]\n"
"            [--log-level debug|info|notice|warning|error] [--cleanup]\n"
"            [--etcd URL[,URL...] --cluster NAME [--host-name NAME]]\n"
"\n"
"The xlb control daemon: loads (or adopts) the XDP data path, keeps its\n"
"tables in line with the configuration and the backends' health, and\n"
"answers xlbctl on a Unix socket.\n"
"\n"
"  -c, --config FILE    apply FILE at start (default: the saved state, else\n"
"                       /etc/xlb/xlb.conf); reload and SIGHUP re-read it\n"
"  -i, --instance NAME  pins under /sys/fs/bpf/xlb/NAME (default \"default\")\n"
"  -s, --socket PATH    control socket (default /run/xlb/xlbd.sock, or\n"
"                       /run/xlb/NAME.sock for another instance)\n"
"      --state-dir DIR  where state.conf is kept (default /var/lib/xlb/NAME)\n"
"      --metrics A:P    Prometheus metrics address (default 127.0.0.1:9437;\n"
"                       none: off)\n"
"      --group GROUP    members may change state through the socket\n"
"      --conntrack-entries N\n"
"                       flows the connection table holds (default 1048576,\n"
"                       256 to 67108864); used when the data path is loaded,\n"
"                       an adopted one keeps its size\n"
"      --log-level L    debug, info (default), notice, warning, error\n"
"      --cleanup        detach the data path, remove its pins, exit\n"
"      --etcd URLS      cluster mode: etcd endpoints, http://HOST:PORT,...\n"
"      --cluster NAME   the cluster whose configuration (under /xlb/NAME/ in\n"
"                       etcd) this host follows; changes go there\n"
"      --host-name NAME this host in the cluster (default: the hostname)\n"
"  -h, --help           this text;  -V, --version  the version\n"
"\n"
"SIGTERM and SIGINT stop xlbd and leave forwarding running; the next xlbd\n"
"adopts it.  Only `xlbctl shutdown` or `xlbd --cleanup` stop forwarding.\n");
}

static int parse_opts(struct xlbd *d, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "instance", required_argument, NULL, 'i' },
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'g' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "cleanup", no_argument, NULL, 'C' },
		{ "conntrack-entries", required_argument, NULL, 'T' },
		{ "etcd", required_argument, NULL, 'E' },
		{ "cluster", required_argument, NULL, 'K' },
		{ "host-name", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	static char sock[256], sdir[256];
	const char *p;
	int c, i;

	d->o.instance = "default";
	d->o.config = "/etc/xlb/xlb.conf";
	d->o.metrics = "127.0.0.1:9437";
	d->o.ct_entries = XLB_CONNTRACK_DEFAULT;
	while ((c = getopt_long(argc, argv, "c:i:s:hV", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			d->o.config = optarg;
			d->o.config_given = true;
			break;
		case 'i':
			d->o.instance = optarg;
			break;
		case 's':
			d->o.socket = optarg;
			break;
		case 'S':
			d->o.state_dir = optarg;
			break;
		case 'm':
			d->o.metrics = optarg;
			break;
		case 'g':
			d->o.group = optarg;
			break;
		case 'l':
			i = xlbd_log_level_parse(optarg);
			if (i < 0) {
				fprintf(stderr,
					"xlbd: --log-level \"%s\": use debug, info, notice, warning or error\n",
					optarg);
				return 2;
			}
			xlbd_log_set_level(i);
			break;
		case 'C':
			d->o.cleanup = true;
			break;
		case 'E':
			d->o.etcd = optarg;
			break;
		case 'K':
			d->o.cluster = optarg;
			break;
		case 'H':
			d->o.host_name = optarg;
			break;
		case 'T':
			if (xlb_parse_u32(optarg, XLB_CONNTRACK_MIN,
					  XLB_CONNTRACK_MAX, &d->o.ct_entries)) {
				fprintf(stderr,
					"xlbd: --conntrack-entries \"%s\": a number of flows from %u to %u\n",
					optarg, XLB_CONNTRACK_MIN,
					XLB_CONNTRACK_MAX);
				return 2;
			}
			d->o.ct_given = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("xlbd %s\n", XLBD_VERSION);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xlbd: unexpected argument \"%s\"\n",
			argv[optind]);
		return 2;
	}
	for (p = d->o.instance; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			break;
	if (*p || !d->o.instance[0] || strlen(d->o.instance) > 32) {
		fprintf(stderr,
			"xlbd: --instance \"%s\": 1 to 32 letters, digits, - or _\n",
			d->o.instance);
		return 2;
	}
	if (!d->o.socket) {
		if (!strcmp(d->o.instance, "default"))
			snprintf(sock, sizeof(sock), "%s", XLB_SOCKET_DEFAULT);
		else
			snprintf(sock, sizeof(sock), "/run/xlb/%s.sock",
				 d->o.instance);
		d->o.socket = sock;
	}
	if (!d->o.state_dir) {
		snprintf(sdir, sizeof(sdir), "/var/lib/xlb/%s", d->o.instance);
		d->o.state_dir = sdir;
	}
	if (d->o.group) {
		struct group *g = getgrnam(d->o.group);

		if (!g) {
			fprintf(stderr, "xlbd: --group \"%s\": no such group\n",
				d->o.group);
			return 2;
		}
		d->group_gid = g->gr_gid;
		d->group_set = true;
	}
	snprintf(d->pin_dir, sizeof(d->pin_dir), BPFFS "/xlb/%s",
		 d->o.instance);
	snprintf(d->state_file, sizeof(d->state_file), "%s/state.conf",
		 d->o.state_dir);
	snprintf(d->cache_file, sizeof(d->cache_file), "%s/state.cache",
		 d->o.state_dir);
	snprintf(d->runtime_file, sizeof(d->runtime_file),
		 "/run/xlb/%s.runtime.json", d->o.instance);
	return 0;
}

static int mkdirs(const char *path, mode_t mode)
{
	char b[512], *p;

	snprintf(b, sizeof(b), "%s", path);
	for (p = b + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(b, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(b, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static int bpffs_mount(void)
{
	struct statfs st;

	if (!statfs(BPFFS, &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", BPFFS, "bpf", 0, "mode=0700")) {
		log_err("cannot mount bpffs on " BPFFS ": %s", strerror(errno));
		return -errno;
	}
	log_info("mounted bpffs on " BPFFS);
	return 0;
}

static void pins_remove(const char *dir)
{
	DIR *dd = opendir(dir);
	struct dirent *e;
	char p[600];

	if (!dd)
		return;
	while ((e = readdir(dd))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(dd);
	rmdir(dir);
	rmdir(BPFFS "/xlb");	/* when no other instance is left */
}

/* Load the data path and pin its program and maps. */
static int load_fresh(struct xlbd *d, struct xlb_err *err)
{
	struct xlb_bpf *skel;
	char p[600];
	int ret;

	skel = xlb_bpf__open();
	if (!skel)
		return xlb_errf(err, errno ? errno : EINVAL,
				"cannot open the data path: %s",
				strerror(errno ? errno : EINVAL));
	ret = bpf_map__set_max_entries(skel->maps.xlb_conntrack,
				       d->o.ct_entries);
	if (!ret)
		ret = xlb_bpf__load(skel);
	if (ret) {
		xlb_bpf__destroy(skel);
		return xlb_errf(err, -ret, "cannot load the data path (connection table of %u flows): %s",
				d->o.ct_entries, strerror(-ret));
	}
	ret = bpf_object__pin_maps(skel->obj, d->pin_dir);
	if (!ret) {
		snprintf(p, sizeof(p), "%s/" PROG_PIN, d->pin_dir);
		ret = bpf_program__pin(skel->progs.xlb_main, p);
	}
	xlb_bpf__destroy(skel);
	if (ret) {
		pins_remove(d->pin_dir);
		return xlb_errf(err, -ret, "cannot pin the data path under %s: %s",
				d->pin_dir, strerror(-ret));
	}
	return 0;
}

/* The pinned program alone: enough to detach it, whatever its version. */
static int open_prog(struct xlbd *d, struct xlb_err *err)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	char p[600];
	int ret;

	snprintf(p, sizeof(p), "%s/" PROG_PIN, d->pin_dir);
	d->prog_fd = bpf_obj_get(p);
	if (d->prog_fd < 0)
		return xlb_errf(err, errno, "cannot open %s: %s", p,
				strerror(errno));
	if (bpf_obj_get_info_by_fd(d->prog_fd, &info, &len))
		return xlb_errf(err, errno, "cannot query %s", p);
	d->prog_id = info.id;
	d->xprog = xdp_program__from_fd(d->prog_fd);
	ret = (int)libxdp_get_error(d->xprog);
	if (ret) {
		d->xprog = NULL;
		return xlb_errf(err, -ret, "libxdp cannot use %s: %s", p,
				strerror(-ret));
	}
	return 0;
}

static int open_pinned(struct xlbd *d, struct xlb_err *err)
{
	int ret = xlb_dp_from_pins(&d->dp, d->pin_dir, err);

	return ret ? ret : open_prog(d, err);
}

/* An adopted connection table keeps its size: resizing would drop it. */
static void ct_size_check(struct xlbd *d)
{
	__u32 cap = 0;

	if (xlb_dp_ct_capacity(&d->dp, &cap) || !d->o.ct_given ||
	    cap == d->o.ct_entries)
		return;
	log_warn("--conntrack-entries %u: the adopted connection table holds %u flows and keeps that size; `xlbctl shutdown` and a new start apply it (established flows are then re-picked)",
		    d->o.ct_entries, cap);
}

/* Adopt what a previous xlbd pinned, or load afresh. */
static int data_path_start(struct xlbd *d)
{
	struct xlb_err err = { "" };
	char p[600];
	int ret;

	ret = bpffs_mount();
	if (ret)
		return ret;
	ret = mkdirs(d->pin_dir, 0700);
	if (ret) {
		log_err("cannot create %s: %s", d->pin_dir, strerror(-ret));
		return ret;
	}
	snprintf(p, sizeof(p), "%s/" PROG_PIN, d->pin_dir);
	if (!access(p, F_OK)) {
		ret = open_pinned(d, &err);
		if (ret) {
			const char *other = strcmp(d->o.instance, "default") ?
					    " --instance " : "";
			const char *inst = *other ? d->o.instance : "";

			if (ret == -EPROTO)
				log_err("cannot adopt the data path pinned under %s: %s. It goes on forwarding as it is; to replace it with this version's (its connection entries and counters are lost), run `xlbd --cleanup%s%s` and start again",
					d->pin_dir, err.msg, other, inst);
			else
				log_err("cannot adopt the data path pinned under %s: %s; if it belongs to another xlb version, run `xlbd --cleanup%s%s` first",
					d->pin_dir, err.msg, other, inst);
			return ret;
		}
		d->adopted = true;
		log_notice("adopted the data path pinned under %s (program id %u): forwarding was not interrupted",
			   d->pin_dir, d->prog_id);
		ct_size_check(d);
		return 0;
	}
	pins_remove(d->pin_dir);	/* leftovers of an interrupted start */
	ret = mkdirs(d->pin_dir, 0700);
	if (!ret)
		ret = load_fresh(d, &err);
	if (!ret)
		ret = open_pinned(d, &err);
	if (ret) {
		log_err("%s", err.msg[0] ? err.msg : strerror(-ret));
		return ret;
	}
	log_notice("loaded the data path (program id %u), pinned under %s",
		   d->prog_id, d->pin_dir);
	return 0;
}

/*
 * Cluster mode: a config file (-c, or the default one when no state was
 * saved) gives this host's own settings only; the shared part comes from
 * the saved state (its revision: cluster.c) until etcd says more.
 */
static int cluster_initial(struct xlbd *d, struct xlb_state *s,
			   const char *from, struct xlb_err *err)
{
	struct xlb_state file, saved;
	bool found;
	int ret;

	if (from == d->state_file)
		return 0;
	ret = xlbd_cluster_local(d, s, from, &file, err);
	if (ret)
		return ret;
	xlb_state_free(s);
	*s = file;
	xlb_state_init(&saved);
	if (xlbd_load_file(d->state_file, &saved, &found, err) || !found) {
		xlb_state_free(&saved);
		return 0;	/* no saved state: nothing shared yet */
	}
	d->state_loaded = true;
	ret = xlb_cluster_merge(&saved, s, &file);
	xlb_state_free(&saved);
	if (ret)
		return xlb_errf(err, ENOMEM, "out of memory");
	xlb_state_free(s);
	*s = file;
	return 0;
}

/* The state to start with: -c FILE, else the saved state, else the config. */
static int initial_state(struct xlbd *d, struct xlb_state *s)
{
	struct xlb_err err = { "" };
	const char *from = NULL;
	bool found = false;
	int ret;

	xlb_state_init(s);
	if (d->o.config_given) {
		ret = xlbd_load_file(d->o.config, s, &found, &err);
		if (!ret && !found)
			ret = xlb_errf(&err, ENOENT, "no config file %s",
				       d->o.config);
		from = d->o.config;
	} else {
		ret = xlbd_load_state(d, s, &found, &err);
		from = d->state_file;
		d->state_loaded = found;
		if (!ret && !found) {
			ret = xlbd_load_file(d->o.config, s, &found, &err);
			from = d->o.config;
		}
	}
	if (!ret && d->cl)
		ret = cluster_initial(d, s, from, &err);
	if (ret) {
		log_err("%s", err.msg);
		return ret;
	}
	if (found)
		log_info("configuration from %s: %zu VIPs, %zu backends", from,
			 s->n_vips, s->n_backends);
	else
		log_info("no saved state or config file: starting empty");
	return 0;
}

/* Nothing of the instance is left: its lock file goes too (still held). */
static void lock_remove(const struct xlbd *d)
{
	char p[300];

	snprintf(p, sizeof(p), "/run/xlb/%s.lock", d->o.instance);
	unlink(p);
}

/*
 * A start that is refused before it pinned anything leaves no instance, so
 * no lock file either; one that found pins (a running data path) keeps it.
 */
static int refused(const struct xlbd *d)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/" PROG_PIN, d->pin_dir);
	if (access(p, F_OK))
		lock_remove(d);
	return 1;
}

static void cleanup(struct xlbd *d)
{
	struct if_nameindex *ifs, *i;
	struct xlb_err err = { "" };
	bool opened = false;
	char p[600];

	snprintf(p, sizeof(p), "%s/" PROG_PIN, d->pin_dir);
	/*
	 * The maps if they are this version's (else their fds stay -1), and
	 * the program in any case: a data path of another version goes too.
	 */
	if (!access(p, F_OK)) {
		xlb_dp_from_pins(&d->dp, d->pin_dir, &err);
		opened = !open_prog(d, &err);
	}
	if (opened) {
		ifs = if_nameindex();
		for (i = ifs; i && i->if_index; i++) {
			int g;

			for (g = 0; g < 2; g++) {
				struct xlbd_link l = { 0 };

				snprintf(l.ifname, sizeof(l.ifname), "%s",
					 i->if_name);
				l.mode = g ? XLB_ATTACH_GENERIC :
					     XLB_ATTACH_NATIVE;
				l.attached = true;
				d->links = &l;
				d->n_links = 1;
				xlbd_detach_all(d);
				d->links = NULL;
				d->n_links = 0;
			}
		}
		if (ifs)
			if_freenameindex(ifs);
	}
	pins_remove(d->pin_dir);
	unlink(d->runtime_file);
	lock_remove(d);
	log_notice("data path of instance %s detached and unpinned",
		   d->o.instance);
}

/* xlbd --cleanup: the routes first (routers move away), then the rest. */
static int cleanup_all(struct xlbd *d)
{
	struct xlb_err err = { "" };
	struct xlb_state s;
	bool found = false;
	int ret = 0;

	if (xlbd_load_file(d->state_file, &s, &found, &err)) {
		log_warn("cannot read %s (%s): VIP routes, if any, are left in place",
			 d->state_file, err.msg);
	} else if (found) {
		ret = xlbd_announce_cleanup(d, s.global.announce_table);
		xlb_state_free(&s);
	}
	cleanup(d);
	return ret ? 1 : 0;
}

/*
 * The signals xlbd handles in its loop: HUP reloads, TERM, INT and QUIT
 * stop (forwarding goes on), USR1 and USR2 are logged and ignored.  They
 * are blocked in main() before any thread starts (the metrics server,
 * the build workers), so every thread inherits the mask and none of them
 * can take a signal's default action, which would end the process.
 */
static void signals_set(sigset_t *m)
{
	sigemptyset(m);
	sigaddset(m, SIGTERM);
	sigaddset(m, SIGINT);
	sigaddset(m, SIGQUIT);
	sigaddset(m, SIGHUP);
	sigaddset(m, SIGUSR1);
	sigaddset(m, SIGUSR2);
}

static void signals_block(void)
{
	sigset_t m;

	signals_set(&m);
	pthread_sigmask(SIG_BLOCK, &m, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int signals_fd(void)
{
	sigset_t m;

	signals_set(&m);
	return signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* In cluster mode the file's own settings go with the shared state. */
static int cluster_file(struct xlbd *d, struct xlb_state *s,
			struct xlb_err *err)
{
	struct xlb_state eff;
	int ret;

	ret = xlbd_cluster_local(d, s, d->o.config, &eff, err);
	xlb_state_free(s);
	if (!ret)
		*s = eff;
	return ret;
}

static void on_signal(struct xlbd *d, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		struct xlb_err err = { "" };
		struct xlb_state s;
		bool found;

		if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGUSR2) {
			log_notice("signal %u ignored (SIGHUP reloads, SIGTERM stops)",
				   si.ssi_signo);
			continue;
		}
		if (si.ssi_signo != SIGHUP) {
			log_notice("signal %u: stopping; forwarding continues (xlbctl shutdown stops it)",
				   si.ssi_signo);
			d->stop = true;
			continue;
		}
		pthread_mutex_lock(&d->lock);
		if (xlbd_load_file(d->o.config, &s, &found, &err)) {
			log_err("reload refused: %s", err.msg);
		} else if (!found) {
			log_err("reload: no config file %s", d->o.config);
		} else if (d->cl && cluster_file(d, &s, &err)) {
			log_err("reload refused: %s", err.msg);
		} else {
			bool changed = !xlb_state_equal(&d->state, &s);

			if (changed && xlbd_commit(d, &s, &err))
				log_err("reload refused: %s", err.msg);
			else if (changed)
				xlbd_save_state(d);
			log_notice("reloaded %s (%s)", d->o.config,
				   changed ? "changed" : "no change");
			xlb_state_free(&s);
		}
		pthread_mutex_unlock(&d->lock);
	}
}

/*
 * Milliseconds the start's quiet time has left: the first requests (a
 * restarted daemon's first status, say) come before the work that can
 * wait, the checking of adopted tables and the runtime file, while an
 * adopting daemon has published nothing (the file is as it was found).
 */
static int quiet_ms(const struct xlbd *d)
{
	return (int)((d->st.t0 + XLBD_START_QUIET_MS / 1e3 - xlbd_now()) *
		     1e3) + 1;
}

/*
 * The heap on huge pages.  A page fault costs as much as zeroing a 4 KiB
 * page several times over on a virtual machine, and a start with 100 000
 * backends makes that many small allocations.  glibc has a switch for
 * this (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), read from the environment
 * at exec only; this does it for the main heap, which grows
 * XLBD_HEAP_PAD at a time, and each growth gets the advice when the loop
 * next comes by.  Small states pay for it in RSS: up to 2 MiB a region.
 */
static void heap_huge(void)
{
	static uintptr_t from, done;
	uintptr_t top;

	if (!from) {
		void *p;

		mallopt(M_TOP_PAD, XLBD_HEAP_PAD);
		p = malloc(XLBD_HEAP_PAD / 128);	/* the heap grows once */
		from = (uintptr_t)p & ~(uintptr_t)(XLB_MEM_HUGE_MIN - 1);
		free(p);
	}
	top = (uintptr_t)sbrk(0);
	if (top <= done || top <= from)
		return;
	/* from may lie below the heap: the mapped part gets the advice */
	madvise((void *)from, top - from, MADV_HUGEPAGE);
	done = top;
}

static int run(struct xlbd *d)
{
	struct itimerspec tick = { { 1, 0 }, { 1, 0 } };
	struct xlb_err err = { "" };
	int epfd, sfd, tfd, hfd, cfd, bfd;
	size_t vi;
	double mark = xlbd_now();
	bool verifying = d->adopted;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	sfd = signals_fd();
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	bfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (epfd < 0 || sfd < 0 || tfd < 0 || bfd < 0 ||
	    timerfd_settime(tfd, 0, &tick, NULL) ||
	    epoll_add(epfd, sfd) || epoll_add(epfd, tfd) ||
	    epoll_add(epfd, bfd)) {
		log_err("cannot set up the event loop: %s", strerror(errno));
		return -errno;
	}
	if (xlbd_control_open(d, epfd))
		return -1;
	d->st.listen = start_lap(&mark);
	if (d->cl && xlbd_cluster_start(d, epfd)) {
		log_err("cannot start the cluster threads: %s", strerror(errno));
		return -1;
	}
	if (xlbd_checker_start(d) || epoll_add(epfd, xlbd_checker_fd(d))) {
		log_err("cannot start the health checks' thread: %s",
			strerror(errno));
		return -1;
	}
	hfd = xlbd_checker_fd(d);
	/* every unprivileged thread runs: the loop keeps what it needs */
	if (xlbd_privs_main(&err)) {
		log_err("%s", err.msg);
		return -1;
	}
	cfd = xlbd_cluster_fd(d);
	/* an adopted data path may hold marks of bounds gone since: cleared */
	for (vi = 0; d->adopted && vi < d->state.n_vips; vi++)
		d->rt_vips[vi].bounded = true;
	d->st.loop = start_lap(&mark);
	d->st.answer = (mark - d->st.t0) * 1e3;
	log_notice("xlbd %s ready (instance %s, %zu VIPs, %zu backends) in %.1f ms",
		   XLBD_VERSION, d->o.instance, d->state.n_vips,
		   d->state.n_backends, d->st.answer);

	while (!d->stop) {
		struct epoll_event ev[32];
		int n, i, timeout, cache_ms;

		/*
		 * Adopted tables left to check: a turn without waiting, once
		 * the start's first answers had their time.
		 */
		timeout = !verifying ? 1000 : quiet_ms(d) > 0 ? quiet_ms(d) : 0;
		cache_ms = xlbd_cache_wait_ms(d);
		if (cache_ms >= 0 && cache_ms < timeout)
			timeout = cache_ms;
		n = epoll_wait(epfd, ev, 32, timeout);
		if (n < 0 && errno != EINTR) {
			log_err("epoll: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n && !d->stop; i++) {
			int fd = ev[i].data.fd;

			if (fd == sfd) {
				on_signal(d, sfd);
			} else if (fd == tfd) {
				uint64_t x;

				if (read(tfd, &x, sizeof(x)) < 0)
					continue;
				pthread_mutex_lock(&d->lock);
				xlbd_refresh(d);
				xlbd_cluster_tick(d);
				xlbd_announce_tick(d);
				pthread_mutex_unlock(&d->lock);
				xlbd_control_resume(d);
				xlbd_control_sweep(d, epfd);
			} else if (fd == bfd) {
				uint64_t x;

				if (read(bfd, &x, sizeof(x)) < 0)
					continue;
				pthread_mutex_lock(&d->lock);
				xlbd_bound_tick(d);
				pthread_mutex_unlock(&d->lock);
			} else if (fd >= 0 && fd == cfd) {
				xlbd_cluster_event(d);
				xlbd_control_resume(d);
			} else if (fd == hfd) {	/* a backend's health changed */
				xlbd_checker_woken(d);
			} else {
				xlbd_control_event(d, epfd, fd, ev[i].events);
			}
		}
		pthread_mutex_lock(&d->lock);
		/* requests first; then a few ms of checking adopted tables */
		if (verifying && quiet_ms(d) <= 0)
			verifying = xlbd_tables_verify(d, 5);
		/* every change of this round in one reconciliation */
		if (d->dirty) {
			d->dirty = false;
			xlbd_reconcile(d);
		}
		if (d->runtime_dirty &&
		    (quiet_ms(d) <= 0 || !d->adopted || d->updates)) {
			xlbd_cluster_publish(d);
			xlbd_runtime_save(d);
		}
		if (d->ann.dirty)
			xlbd_announce_sync(d);
		xlbd_bound_arm(d, bfd);
		pthread_mutex_unlock(&d->lock);
		heap_huge();	/* the heap grew: the new part too */
		xlbd_checker_kick(d);	/* checks may have changed */
		xlbd_cache_tick(d);
	}
	xlbd_control_close(d);
	close(bfd);
	close(tfd);
	close(sfd);
	close(epfd);
	return 0;
}

int main(int argc, char **argv)
{
	static struct xlbd d;
	struct xlb_err err = { "" };
	struct xlb_state s;
	double mark;
	int ret;

	d.st.t0 = mark = xlbd_now();
	/*
	 * Large arrays (a state of 100 000 backends is 27 MiB, its runtime
	 * 31 MiB) always get a mapping of their own, fresh and on huge
	 * pages (xlb_mem_alloc), given back to the system when freed.
	 * glibc's default threshold rises after the first such array is
	 * freed, and the next would come from the heap.
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	heap_huge();
	signals_block();	/* first: before any thread exists */
	xlbd_log_init();
	d.ctl_fd = -1;
	ret = parse_opts(&d, argc, argv);
	if (ret)
		return ret;
	if (geteuid()) {
		log_err("needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN)");
		return 1;
	}
	d.prog_fd = -1;
	d.started_at = xlbd_now();
	pthread_mutex_init(&d.lock, NULL);
	if (mkdirs("/run/xlb", 0755) || mkdirs(d.o.state_dir, 0700)) {
		log_err("cannot create /run/xlb or %s: %s", d.o.state_dir,
			strerror(errno));
		return 1;
	}
	if (instance_lock(&d) < 0)
		return 1;
	if (d.o.cleanup)
		return cleanup_all(&d);
	if (xlbd_privs_init(&err)) {
		log_err("%s", err.msg);
		return refused(&d);
	}
	if (xlbd_realize_init(&d)) {
		log_err("out of memory");
		return 1;
	}
	d.hc = xlb_hc_create(NULL, NULL);
	d.neigh = xlb_neigh_open(&err);
	if (!d.hc) {
		log_err("cannot start health checks: out of memory");
		return 1;
	}
	if (!d.neigh)
		log_warn("next hops unavailable (%s): the data path uses its FIB lookup",
			 err.msg);
	if (xlbd_cluster_open(&d, &err)) {
		log_err("%s", err.msg);
		return refused(&d);
	}
	d.st.init = start_lap(&mark);
	if (initial_state(&d, &s))
		return refused(&d);
	d.st.state = start_lap(&mark);
	/*
	 * Everything that can fail on a bad option fails before the data
	 * path is loaded, so a refused start leaves nothing behind.  Until the
	 * state is ready, /metrics says only xlb_up.
	 */
	if (xlbd_metrics_start(&d, &err)) {
		log_err("%s", err.msg);
		xlb_state_free(&s);
		return refused(&d);
	}
	d.st.metrics = start_lap(&mark);
	if (data_path_start(&d))
		return refused(&d);
	d.st.data_path = start_lap(&mark);
	if (d.adopted) {
		xlbd_runtime_load(&d);
		d.st.runtime = start_lap(&mark);
		if (xlbd_adopt_ids(&d)) {
			log_err("out of memory");
			return 1;
		}
		d.st.adopt = start_lap(&mark);
	}
	d.lenient_links = true;
	ret = xlbd_commit(&d, &s, &err);
	d.lenient_links = false;
	d.st.commit = start_lap(&mark);
	d.st.tables = d.ph.pool + d.ph.reconcile;
	d.st.commit -= d.st.tables;
	xlb_state_free(&s);
	if (ret) {
		log_err("cannot apply the configuration: %s", err.msg);
		return 1;
	}
	/* the saved state as it was loaded needs no saving again */
	if (!d.state_loaded)
		xlbd_save_state(&d);
	d.runtime_dirty = true;		/* written once the loop runs */
	if (xlbd_ctcount_start(&d))
		log_warn("cannot start the connection table count: conntrack entries are not reported");
	pthread_mutex_lock(&d.lock);
	d.ready = true;
	xlbd_announce_open(&d);
	xlbd_announce_sync(&d);		/* adopts the routes in the table */
	pthread_mutex_unlock(&d.lock);
	d.st.rest = start_lap(&mark);

	ret = run(&d);
	xlbd_save_wait(&d);		/* a save under way ends first */
	xlbd_cache_stop(&d);

	xlbd_checker_stop(&d);
	xlbd_cluster_stop(&d);
	xlbd_metrics_stop(&d);
	xlbd_ctcount_stop(&d);
	if (d.shutdown) {
		/* routers move the flows away before forwarding stops */
		xlbd_announce_withdraw(&d);
		xlbd_detach_all(&d);
		xlb_dp_close(&d.dp);
		pins_remove(d.pin_dir);
		unlink(d.runtime_file);
		lock_remove(&d);
		log_notice("shut down: data path detached and unpinned");
	} else {
		xlbd_runtime_save(&d);
		xlb_dp_close(&d.dp);
		log_notice("stopped; the data path keeps forwarding");
	}
	xlbd_announce_close(&d);
	if (d.xprog)
		xdp_program__close(d.xprog);	/* closes prog_fd too */
	else if (d.prog_fd >= 0)
		close(d.prog_fd);
	xlb_hc_destroy(d.hc);
	if (d.neigh)
		xlb_neigh_close(d.neigh);
	xlbd_realize_free(&d);
	xlb_state_free(&d.state);
	return ret ? 1 : 0;
}
