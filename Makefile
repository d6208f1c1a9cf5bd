# SPDX-License-Identifier: GPL-2.0
#
# One entry for everything.  `make` builds into build/; `make test` runs every
# test tier and prints one summary line; `make demo` and `make bench` run the
# product.  Every entry point installs its Debian packages first (make deps).

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
O        := build

CFLAGS   ?= -O2 -g
XLB_CFLAGS := $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE \
	      -Iuser/lib -Ibpf -I$(O)
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	      -fno-omit-frame-pointer
# the harness compares literals (int) with whatever the test passes
TEST_CFLAGS = -I$(O)/kselftest -Itools/lib -Wno-unused-parameter -Wno-sign-compare
BPF_CFLAGS := -target bpf -O2 -g -Wall -Werror -Ibpf -I$(O)
# Keep map lookups where the source has them.  clang otherwise sinks the
# lookups of a switch's arms (one map per table size, bpf/xlb.bpf.c) into
# one call on several maps, which the verifier can only make a helper call
# instead of inlining it: correct, but a call per lookup (BENCHMARKS.md).
BPF_CFLAGS += -mllvm -simplifycfg-sink-common=false
# <linux/types.h> needs <asm/types.h>, which Debian keeps in the multiarch
# directory that clang -target bpf does not search on its own.
BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)

LIBXLB_SRCS := $(addprefix user/lib/,attach.c client.c clock.c config.c datapath.c \
	       error.c explain.c health.c lookup_table.c maglev.c neigh.c number.c ring.c \
	       state.c) user/lib/cluster.c user/lib/etcd.c
LIBXLB_OBJS := $(LIBXLB_SRCS:user/lib/%.c=$(O)/obj/%.o)
LIBXLB      := $(O)/libxlb.a

# what the tools and the tests share but the product does not (tools/lib/)
PKT_OBJ     := $(O)/obj/tools/pkt.o

TOOLS       := $(O)/xlb-analyze $(O)/xlb-bench $(O)/xlb-traffic
# the daemon and the CLI, each from its own folder under user/
XLBD_SRCS   := $(wildcard user/xlbd/*.c)
XLBCTL_SRCS := $(wildcard user/xlbctl/*.c)
PROGRAMS    := $(O)/xlbd $(O)/xlbctl
UNIT_TESTS  := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*.c))
ASAN_TESTS  := $(patsubst tests/unit/%.c,$(O)/asan/tests/unit/%,$(wildcard tests/unit/*.c))
BPF_PROGS   := $(patsubst bpf/%.bpf.c,$(O)/%.bpf.o,$(wildcard bpf/*.bpf.c))
BPF_SKELS   := $(patsubst bpf/%.bpf.c,$(O)/%.skel.h,$(wildcard bpf/*.bpf.c))
BPF_TESTS   := $(patsubst tests/bpf/%.c,$(O)/tests/bpf/%,$(wildcard tests/bpf/*.c))
DAEMON_TESTS := $(patsubst tests/daemon/%.c,$(O)/tests/daemon/%,$(wildcard tests/daemon/*.c))
NET_TESTS   := $(patsubst tests/net/%.c,$(O)/tests/net/%,$(wildcard tests/net/*.c))
# BPF programs that exist only for tests (tests/bpf/progs/*.bpf.c)
TEST_PROGS  := $(patsubst tests/bpf/progs/%.bpf.c,$(O)/tests/bpf/progs/%.skel.h,$(wildcard tests/bpf/progs/*.bpf.c))

KSFT_TAR    := /usr/src/linux-source-6.1.tar.xz
KSFT_HDR    := $(O)/kselftest/kselftest_harness.h

LDLIBS_BPF  := $(shell pkg-config --libs libxdp libbpf 2>/dev/null || echo -lxdp -lbpf -lelf -lz)
# everything libxlb and the programs link: BPF, JSON (control protocol),
# HTTP (metrics), netlink (next hops), HTTP client (etcd)
LDLIBS_XLB  := $(LDLIBS_BPF) -ljson-c -lmicrohttpd -lmnl -lcurl -lpthread -lm

.PHONY: all deps test test-unit test-unit-asan test-bpf fuzz demo bench clean
.DEFAULT_GOAL := all
.SECONDARY:

# Packages first, also when several goals are given at once.
ifneq ($(filter-out deps clean,$(or $(MAKECMDGOALS),all)),)
DEPS_RC := $(shell tools/deps.sh >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error installing Debian packages failed (tools/deps.sh); run it as root)
endif
endif

deps:
	@tools/deps.sh

all: $(LIBXLB) $(PROGRAMS) $(TOOLS) $(BPF_PROGS) $(BPF_SKELS)

# --- libxlb -----------------------------------------------------------------
$(O)/obj/%.o: user/lib/%.c $(wildcard user/lib/*.h bpf/*.h) | $(O)/obj
	$(CC) $(XLB_CFLAGS) -c -o $@ $<

# the clock reader carries its program as a skeleton
$(O)/obj/clock.o: $(O)/xlb_clock.skel.h

$(LIBXLB): $(LIBXLB_OBJS)
	$(AR) rcs $@ $^

$(O)/xlb-analyze: tools/xlb-analyze/xlb-analyze.c $(LIBXLB)
	$(CC) $(XLB_CFLAGS) -o $@ $< $(LIBXLB) $(LDLIBS_XLB)

$(O)/obj/tools/%.o: tools/lib/%.c $(wildcard tools/lib/*.h bpf/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) -c -o $@ $<

$(O)/xlb-bench: $(wildcard tools/xlb-bench/*.[ch]) $(LIBXLB) $(PKT_OBJ) $(BPF_SKELS) tools/lib/pkt.h
	$(CC) $(XLB_CFLAGS) -Itools/lib -o $@ $(wildcard tools/xlb-bench/*.c) \
		$(PKT_OBJ) $(LIBXLB) $(LDLIBS_XLB)

$(O)/xlb-traffic: $(wildcard tools/xlb-traffic/*.[ch]) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) -o $@ $(wildcard tools/xlb-traffic/*.c) $(LIBXLB) \
		-lpthread -lm

$(O)/xlbd: $(XLBD_SRCS) $(wildcard user/xlbd/*.h user/lib/*.h bpf/*.h) $(LIBXLB) $(BPF_SKELS)
	$(CC) $(XLB_CFLAGS) -Iuser/xlbd -o $@ $(XLBD_SRCS) $(LIBXLB) $(LDLIBS_XLB)

$(O)/xlbctl: $(XLBCTL_SRCS) $(wildcard user/xlbctl/*.h user/lib/*.h bpf/*.h) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) -Iuser/xlbctl -o $@ $(XLBCTL_SRCS) $(LIBXLB) $(LDLIBS_XLB)

# --- BPF --------------------------------------------------------------------
$(O)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) Makefile | $(O)
	$(CLANG) $(BPF_CFLAGS) -c -o $@ $<

%.skel.h: %.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# --- tests ------------------------------------------------------------------
# The kernel's own kselftest harness, extracted (headers only) from Debian's
# linux-source-6.1; nothing of the kernel tree is committed.
$(KSFT_HDR):
	@mkdir -p $(O)/kselftest
	tar -xJf $(KSFT_TAR) -C $(O)/kselftest --strip-components=4 --wildcards \
		'linux-source-6.1/tools/testing/selftests/kselftest.h' \
		'linux-source-6.1/tools/testing/selftests/kselftest_harness.h'
	@touch $@

$(O)/tests/unit/%: tests/unit/%.c $(LIBXLB) $(PKT_OBJ) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(PKT_OBJ) $(LIBXLB) \
		$(LDLIBS_XLB)

# Unit tests again, library and test compiled with ASan and UBSan.
$(O)/asan/tests/unit/%: tests/unit/%.c $(LIBXLB_SRCS) tools/lib/pkt.c $(KSFT_HDR) $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(ASAN_FLAGS) $(TEST_CFLAGS) -o $@ $< $(LIBXLB_SRCS) \
		tools/lib/pkt.c $(LDLIBS_XLB)

$(O)/tests/bpf/progs/%.bpf.o: tests/bpf/progs/%.bpf.c $(wildcard bpf/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) -c -o $@ $<

$(O)/tests/bpf/%: tests/bpf/%.c $(wildcard tests/bpf/*.h) $(LIBXLB) $(PKT_OBJ) $(BPF_SKELS) $(TEST_PROGS) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) -I$(O)/tests/bpf/progs -o $@ $< \
		$(PKT_OBJ) $(LIBXLB) $(LDLIBS_XLB)

# libxlb's netlink code against the real kernel, as root, in namespaces
$(O)/tests/net/%: tests/net/%.c $(LIBXLB) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(LIBXLB) $(LDLIBS_XLB)

# xlbd and xlbctl together, as root, in network namespaces of their own
$(O)/tests/daemon/%: tests/daemon/%.c $(LIBXLB) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(LIBXLB) $(LDLIBS_XLB)

test: all $(UNIT_TESTS) $(ASAN_TESTS) $(BPF_TESTS) $(NET_TESTS) $(DAEMON_TESTS)
	@tests/run.sh unit unit-asan bpf net daemon e2e vm

.PHONY: test-daemon test-e2e test-net
test-net: $(NET_TESTS)
	@tests/run.sh net

test-daemon: all $(DAEMON_TESTS)
	@tests/run.sh daemon

# real traffic through xlb in network namespaces (tests/e2e/lib/topo.sh)
test-e2e: all
	@tests/run.sh e2e

test-unit: $(UNIT_TESTS) $(TOOLS) $(PROGRAMS)
	@tests/run.sh unit

test-unit-asan: $(ASAN_TESTS)
	@tests/run.sh unit-asan

test-bpf: $(BPF_TESTS)
	@tests/run.sh bpf

# The bpf tier again, on Debian 12's kernel 6.1 in a qemu guest (tools/vm/),
# so the oldest kernel we support runs the same suite, verifier included.
.PHONY: test-vm vmtest
test-vm vmtest: $(BPF_TESTS) $(NET_TESTS)
	@tests/run.sh vm

# --- kernel module (kmod/) --------------------------------------------------
# xlb_redirect.ko, built by Kbuild (top-level Kbuild -> kmod/Kbuild) against
# the headers of the kernel Debian's linux-image-amd64 installs, the one the
# vm tier boots; KDIR=/path/to/tree (or KVER=...) builds for another.  Its
# tests (tests/kmod/, kselftest harness) are built here and run in the
# guest by tests/vm/kmod.sh, with checkpatch.pl --strict from linux-source.
KVER ?= $(or $(shell dpkg-query -W -f='$${Depends}' linux-image-amd64 2>/dev/null | \
	       sed -n 's/^linux-image-\([^ ,]*\).*/\1/p'), \
	     $(notdir $(lastword $(sort $(wildcard /lib/modules/6.1.*)))))
KDIR ?= /lib/modules/$(KVER)/build
KMOD_TESTS  := $(patsubst tests/kmod/%.c,$(O)/tests/kmod/%,$(wildcard tests/kmod/*.c))
CHECKPATCH  := $(O)/checkpatch/checkpatch.pl

.PHONY: kmod kmod-clean
kmod:
	@test -d $(KDIR) || { echo "kmod: no kernel tree at KDIR=$(KDIR) (make deps installs linux-headers-amd64)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

kmod-clean:
	rm -f kmod/*.o kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.cmd \
		kmod/modules.order Module.symvers modules.order .*.cmd

# checkpatch.pl and the files it reads beside it, from Debian's linux-source
$(CHECKPATCH):
	@mkdir -p $(dir $@)
	tar -xJf $(KSFT_TAR) -C $(dir $@) --strip-components=2 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	@touch $@

$(O)/tests/kmod/%: tests/kmod/%.c $(wildcard tests/kmod/*.h) $(PKT_OBJ) $(LIBXLB) $(BPF_SKELS) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) -o $@ $< $(PKT_OBJ) $(LIBXLB) \
		$(LDLIBS_XLB)

# The source tree DKMS builds (kmod/dkms.conf at its top), staged in $(O).
KMOD_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' kmod/dkms.conf)
DKMS_SRC    := $(O)/dkms/xlb_redirect-$(KMOD_VERSION)

.PHONY: kmod-dkms-src
kmod-dkms-src:
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)/kmod $(DKMS_SRC)/bpf
	cp Kbuild kmod/dkms.conf $(DKMS_SRC)/
	cp kmod/Kbuild kmod/xlb_redirect.c $(DKMS_SRC)/kmod/
	cp bpf/structs.h bpf/flow_hash.h bpf/table.h bpf/ct_hash.h $(DKMS_SRC)/bpf/

test test-vm vmtest: kmod kmod-dkms-src $(KMOD_TESTS) $(CHECKPATCH)
clean: kmod-clean

# --- fuzzing ----------------------------------------------------------------
# libFuzzer (clang, libclang-rt-14-dev) on the config grammar: every input
# either fails to parse or saves, re-parses and saves to the same text.
# Runs FUZZ_SECONDS from the seeds in tests/fuzz/corpus/ with a fresh
# working corpus; a crash, leak or sanitizer report fails the target and
# leaves the input as $(O)/fuzz/crash-*.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined \
	       -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRCS   := $(addprefix user/lib/,config.c error.c lookup_table.c maglev.c number.c \
	       ring.c state.c)

$(O)/fuzz/config: tests/fuzz/config.c $(FUZZ_SRCS) $(wildcard user/lib/*.h bpf/*.h)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_FLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE \
		-Iuser/lib -Ibpf -I$(O) -o $@ $< $(FUZZ_SRCS) -lm

fuzz: $(O)/fuzz/config
	@rm -rf $(O)/fuzz/corpus && mkdir -p $(O)/fuzz/corpus
	$(O)/fuzz/config -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(O)/fuzz/ $(O)/fuzz/corpus tests/fuzz/corpus

# --- product ----------------------------------------------------------------
DURATION ?= 60

demo: all
	@tools/demo.sh $(DURATION)

# The benchmark suite: one report, $(O)/bench/results.json and PNG plots
# (BENCHMARKS.md says how each figure is measured).  BENCH_FLAGS=--quick
# for the smoke mode, into $(O)/bench-quick.
bench: all
	@O=$(O) tools/xlb-bench/suite.sh $(BENCH_FLAGS)

# --- install ----------------------------------------------------------------
# xlbd and xlbctl, their man pages, bash completion and systemd unit, under
# $(DESTDIR) (a staging root for packages) and $(PREFIX).  The unit's
# ExecStart follows SBINDIR; /usr/local/lib/systemd/system is on systemd's
# search path.  /etc/xlb is created, never filled: an existing config stays.
PREFIX      ?= /usr/local
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR  ?= /etc

.PHONY: install
install: $(PROGRAMS)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/xlb
	install -m 0755 $(PROGRAMS) $(DESTDIR)$(SBINDIR)/
	install -m 0644 user/lib/xlb.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 user/xlbd/xlbd.8 user/xlbctl/xlbctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 dist/xlbctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/xlbctl
	sed 's|^ExecStart=/usr/local/sbin/xlbd|ExecStart=$(SBINDIR)/xlbd|' \
		dist/xlbd.service > $(DESTDIR)$(UNITDIR)/xlbd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/xlbd.service

$(O) $(O)/obj:
	@mkdir -p $@

clean:
	rm -rf $(O)
