# SPDX-License-Identifier: GPL-2.0
#
# One entry for everything.  `make` builds into build/; `make test` runs every
# test tier and prints one summary line; `make demo` and `make bench` run the
# product.  Debian packages by purpose are in tools/deps.sh: `make test`,
# `make demo`, `make bench` and the root tiers install what they need (as
# root); `make`, `make test-unit` and the other goals only check and say
# which packages are missing.  `make deps` installs everything.

CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
O        := build

# CPPFLAGS and LDFLAGS as the environment gives them (dpkg-buildpackage's
# hardening flags, debian/rules)
CFLAGS   ?= -O2 -g
XLB_CFLAGS := $(CPPFLAGS) $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE \
	      -Iuser/lib -Ibpf -I$(O)
# header dependencies, written by the compiler beside each target ($@.d)
DEPFLAGS  = -MMD -MP -MF $@.d
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	      -fno-omit-frame-pointer
# the harness compares literals (int) with whatever the test passes
TEST_CFLAGS = -I$(O)/kselftest -Itools/lib -Wno-unused-parameter -Wno-sign-compare
BPF_CFLAGS := -target bpf -O2 -g -Wall -Werror -Wdeclaration-after-statement \
	      -Ibpf -I$(O)
# Keep map lookups where the source has them.  clang otherwise sinks the
# lookups of a switch's arms (one map per table size, bpf/xlb.bpf.c) into
# one call on several maps, which the verifier can only make a helper call
# instead of inlining it: correct, but a call per lookup (docs/datapath.md).
BPF_CFLAGS += -mllvm -simplifycfg-sink-common=false
# <linux/types.h> needs <asm/types.h>, which Debian keeps in the multiarch
# directory that clang -target bpf does not search on its own.
BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)
# The CPU the object is for: its memory order decides the data path's
# fences (bpf/xlb.bpf.c, acquire_fence).  BPF_ARCH=arm64 etc. to cross-build.
BPF_ARCH ?= $(shell $(CC) -dumpmachine | sed 's/-.*//; s/x86_64/x86/; s/i.86/x86/; s/aarch64/arm64/')
BPF_CFLAGS += -D__TARGET_ARCH_$(BPF_ARCH)
# More flags for the BPF objects only, e.g. BPF_EXTRA=-DXLB_STOP=3 (the
# stage profile, tools/xlb-bench/stages.sh).
BPF_CFLAGS += $(BPF_EXTRA)

LIBXLB_SRCS := $(wildcard user/lib/*.c)
LIBXLB_OBJS := $(LIBXLB_SRCS:user/lib/%.c=$(O)/obj/lib/%.o)
LIBXLB      := $(O)/libxlb.a
# the same library built with ASan and UBSan, for the unit-asan tier
LIBXLB_ASAN := $(O)/asan/libxlb.a

# what the tools and the tests share but the product does not (tools/lib/)
PKT_OBJ     := $(O)/obj/tools/pkt.o

# A program from a folder: $(O)/NAME from every .c of DIR, one object each
# in $(O)/obj/NAME/.  The daemon and the CLI under user/, the tools under
# tools/.
prog_objs    = $(patsubst $(1)/%.c,$(O)/obj/$(2)/%.o,$(wildcard $(1)/*.c))
XLBD_OBJS   := $(call prog_objs,user/xlbd,xlbd)
XLBCTL_OBJS := $(call prog_objs,user/xlbctl,xlbctl)
BENCH_OBJS  := $(call prog_objs,tools/xlb-bench,xlb-bench)
TRAFFIC_OBJS := $(call prog_objs,tools/xlb-traffic,xlb-traffic)
ANALYZE_OBJS := $(call prog_objs,tools/xlb-analyze,xlb-analyze)
BACKEND_OBJS := $(call prog_objs,tools/xlb-backend,xlb-backend)
PROGRAMS    := $(O)/xlbd $(O)/xlbctl
TOOLS       := $(O)/xlb-analyze $(O)/xlb-bench $(O)/xlb-traffic $(O)/xlb-backend
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
# HTTP (metrics), netlink (next hops), XXH3 (the state cache); the HTTP
# client for etcd, libcurl, is loaded by user/lib/etcd.c when a cluster
# first needs it
LDLIBS_XLB  := $(LDLIBS_BPF) -ljson-c -lmicrohttpd -lmnl -lcap -lxxhash -lpthread -lm

.PHONY: all deps test test-unit test-unit-asan test-bpf fuzz demo demo-cluster bench clean
.DEFAULT_GOAL := all
.SECONDARY:

# Packages first, also when several goals are given at once: the groups of
# tools/deps.sh each goal needs.  The goals of DEPS_INSTALL install what is
# missing (as root), the others only check.  As root the unit tier also
# runs the benchmark suite's root parts (tests/unit/bench.sh).
ROOT        := $(filter 0,$(shell id -u))
DEPS_all    := build
DEPS_install := build
DEPS_test-unit := build unit fuzz $(if $(ROOT),e2e bench)
DEPS_test-unit-asan := build unit
DEPS_fuzz   := build fuzz
DEPS_kmod   := kmod
DEPS_deb    := build pkg
DEPS_test-bpf := build unit bpf
DEPS_test-net := build unit net
DEPS_test-daemon := build unit daemon
DEPS_test-e2e := build e2e
DEPS_test-vm := build unit vm kmod pkg
DEPS_vmtest := $(DEPS_test-vm)
DEPS_test   := build unit fuzz bpf net daemon e2e vm kmod pkg bench
DEPS_demo   := build e2e
DEPS_demo-cluster := build e2e
DEPS_bench  := build e2e bench
DEPS_INSTALL := test test-bpf test-net test-daemon test-e2e test-vm vmtest \
		demo demo-cluster bench
DEPS_GOALS  := $(or $(MAKECMDGOALS),all)
DEPS_GROUPS := $(sort $(foreach g,$(DEPS_GOALS),$(DEPS_$(g))))
ifneq ($(DEPS_GROUPS),)
DEPS_RC := $(shell tools/deps.sh \
	$(if $(filter $(DEPS_INSTALL),$(DEPS_GOALS)),,--check) \
	$(DEPS_GROUPS) >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error Debian packages are missing (tools/deps.sh said which))
endif
endif

deps:
	@tools/deps.sh

all: $(LIBXLB) $(PROGRAMS) $(TOOLS) $(BPF_PROGS) $(BPF_SKELS)

# --- C objects ---------------------------------------------------------------
# Every object waits for the skeletons (order only: a source that includes
# one depends on it through its .d file from the first build on).
$(O)/obj/lib/%.o: user/lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/obj/tools/%.o: tools/lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/obj/xlbd/%.o: user/xlbd/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -Iuser/xlbd -c -o $@ $<

$(O)/obj/xlbctl/%.o: user/xlbctl/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -Iuser/xlbctl -c -o $@ $<

$(O)/obj/xlb-bench/%.o: tools/xlb-bench/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -Itools/lib -c -o $@ $<

$(O)/obj/xlb-traffic/%.o: tools/xlb-traffic/%.c
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/obj/xlb-analyze/%.o: tools/xlb-analyze/%.c
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/obj/xlb-backend/%.o: tools/xlb-backend/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(DEPFLAGS) -Itools/lib -c -o $@ $<

# --- libxlb, the programs, the tools ------------------------------------------
$(LIBXLB): $(LIBXLB_OBJS)
	$(AR) rcs $@ $^

$(O)/xlbd: $(XLBD_OBJS) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_XLB)

$(O)/xlbctl: $(XLBCTL_OBJS) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_XLB)

$(O)/xlb-bench: $(BENCH_OBJS) $(PKT_OBJ) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_XLB)

$(O)/xlb-traffic: $(TRAFFIC_OBJS) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) $(LDFLAGS) -o $@ $^ -lpthread -lm

$(O)/xlb-analyze: $(ANALYZE_OBJS) $(LIBXLB)
	$(CC) $(XLB_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_XLB)

# the backend-host tool: the decap program is built in (its skeleton)
$(O)/xlb-backend: $(BACKEND_OBJS) $(PKT_OBJ)
	$(CC) $(XLB_CFLAGS) -o $@ $^ $(LDLIBS_BPF) -lmnl

# --- BPF --------------------------------------------------------------------
$(O)/%.bpf.o: bpf/%.bpf.c Makefile
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c -o $@ $<

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

# One test program per source, linked with libxlb and the tools library.
TEST_LINK    = $(CC) $(XLB_CFLAGS) $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< \
	       $(PKT_OBJ) $(LIBXLB) $(LDLIBS_XLB)

$(O)/tests/unit/%: tests/unit/%.c $(LIBXLB) $(PKT_OBJ) | $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_LINK)

# Unit tests again, library and test compiled with ASan and UBSan.
$(O)/asan/obj/%.o: user/lib/%.c | $(BPF_SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/asan/obj/tools/%.o: tools/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c -o $@ $<

$(LIBXLB_ASAN): $(LIBXLB_SRCS:user/lib/%.c=$(O)/asan/obj/%.o) \
		$(O)/asan/obj/tools/pkt.o
	$(AR) rcs $@ $^

$(O)/asan/tests/unit/%: tests/unit/%.c $(LIBXLB_ASAN) | $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(XLB_CFLAGS) $(ASAN_FLAGS) $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< \
		$(LIBXLB_ASAN) $(LDLIBS_XLB)

$(O)/tests/bpf/progs/%.bpf.o: tests/bpf/progs/%.bpf.c
	@mkdir -p $(dir $@)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/tests/bpf/%: tests/bpf/%.c $(LIBXLB) $(PKT_OBJ) | $(BPF_SKELS) $(TEST_PROGS) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_LINK) -I$(O)/tests/bpf/progs

# libxlb's netlink code against the real kernel, as root, in namespaces
$(O)/tests/net/%: tests/net/%.c $(LIBXLB) $(PKT_OBJ) | $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_LINK)

# xlbd and xlbctl together, as root, in network namespaces of their own
$(O)/tests/daemon/%: tests/daemon/%.c $(LIBXLB) $(PKT_OBJ) | $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_LINK)

# test-build: everything the tiers run, built and nothing run.  make test
# builds it on every core (TEST_JOBS): the tests wait for the whole build.
.PHONY: test test-build
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) test-build
	@tests/run.sh unit unit-asan bpf net daemon e2e --beside vm

test-build: all $(UNIT_TESTS) $(ASAN_TESTS) $(BPF_TESTS) $(NET_TESTS) $(DAEMON_TESTS) \
      $(O)/fuzz/config $(O)/fuzz/control

.PHONY: test-daemon test-e2e test-net
test-net: $(NET_TESTS)
	@tests/run.sh net

test-daemon: all $(DAEMON_TESTS)
	@tests/run.sh daemon

# real traffic through xlb in network namespaces (tests/e2e/lib/topo.sh)
test-e2e: all
	@tests/run.sh e2e

test-unit: $(UNIT_TESTS) $(TOOLS) $(PROGRAMS) $(O)/fuzz/config $(O)/fuzz/control
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
# the headers of the kernel Debian's linux-image-amd64 installs (6.1);
# KDIR=/path/to/tree (or KVER=..., e.g. Debian's 6.12) builds for another.
# Its tests (tests/kmod/, kselftest harness) are built here and run by
# tests/vm/kmod.sh in a guest of each kernel the vm tier boots (6.1, 6.12),
# each with a module it builds for that kernel, and checkpatch.pl --strict
# from each kernel's linux-source.
KVER ?= $(or $(shell dpkg-query -W -f='$${Depends}' linux-image-amd64 2>/dev/null | \
	       sed -n 's/^linux-image-\([^ ,]*\).*/\1/p'), \
	     $(notdir $(lastword $(sort $(wildcard /lib/modules/6.1.*)))))
KDIR ?= /lib/modules/$(KVER)/build
KMOD_TESTS  := $(patsubst tests/kmod/%.c,$(O)/tests/kmod/%,$(wildcard tests/kmod/*.c))
KSRC_SERIES := 6.1 6.12
CHECKPATCH  := $(foreach v,$(KSRC_SERIES),$(O)/checkpatch/$(v)/checkpatch.pl)

.PHONY: kmod kmod-clean
kmod:
	@test -d $(KDIR) || { echo "kmod: no kernel tree at KDIR=$(KDIR) (make deps installs linux-headers-amd64)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

kmod-clean:
	rm -f kmod/*.o kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.cmd \
		kmod/modules.order Module.symvers modules.order .*.cmd

# checkpatch.pl and the files it reads beside it, from Debian's
# linux-source-6.1 and linux-source-6.12
$(O)/checkpatch/%/checkpatch.pl:
	@mkdir -p $(dir $@)
	tar -xJf /usr/src/linux-source-$*.tar.xz -C $(dir $@) --strip-components=2 \
		linux-source-$*/scripts/checkpatch.pl \
		linux-source-$*/scripts/spelling.txt \
		linux-source-$*/scripts/const_structs.checkpatch
	@touch $@

$(O)/tests/kmod/%: tests/kmod/%.c $(LIBXLB) $(PKT_OBJ) | $(BPF_SKELS) $(KSFT_HDR)
	@mkdir -p $(dir $@)
	$(TEST_LINK)

# The source tree DKMS builds (kmod/dkms.conf at its top), staged in $(O).
KMOD_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' kmod/dkms.conf)
DKMS_SRC    := $(O)/dkms/xlb_redirect-$(KMOD_VERSION)
# the headers bpf/structs.h includes, read from it so that a new one is
# never left out of the module's source tree
KMOD_BPF_HDRS := $(addprefix bpf/,$(shell sed -n 's/^\#include "\(.*\)"/\1/p' bpf/structs.h))

.PHONY: kmod-dkms-src
kmod-dkms-src:
	rm -rf $(DKMS_SRC) && mkdir -p $(DKMS_SRC)/kmod $(DKMS_SRC)/bpf
	cp Kbuild kmod/dkms.conf $(DKMS_SRC)/
	cp kmod/Kbuild kmod/xlb_redirect.c $(DKMS_SRC)/kmod/
	cp bpf/structs.h $(KMOD_BPF_HDRS) $(DKMS_SRC)/bpf/

test-build test-vm vmtest: kmod kmod-dkms-src $(KMOD_TESTS) $(CHECKPATCH)
clean: kmod-clean

# --- fuzzing ----------------------------------------------------------------
# libFuzzer (clang, libclang-rt-14-dev) on the config grammar (every input
# either fails to parse or saves, re-parses and saves to the same text) and
# on the control protocol's request parser (tests/fuzz/control.c).  Each
# runs FUZZ_SECONDS from its seeds (tests/fuzz/corpus/,
# tests/fuzz/corpus-control/) with a fresh working corpus; a crash, leak or
# sanitizer report fails the target and leaves the input as
# $(O)/fuzz/crash-*.  The unit tier runs both for a few seconds
# (tests/unit/fuzz.sh).
FUZZ_SECONDS ?= 60
FUZZ_FLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined \
	       -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRCS   := $(addprefix user/lib/,config.c error.c lookup_table.c maglev.c number.c \
	       ring.c state.c)

FUZZ_CC      = $(CLANG) $(FUZZ_FLAGS) -std=gnu11 -Wall -Wextra -Werror \
	       -D_GNU_SOURCE -Iuser/lib -Ibpf -I$(O) $(DEPFLAGS)

$(O)/fuzz/obj/%.o: user/lib/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -c -o $@ $<

$(O)/fuzz/config: tests/fuzz/config.c $(FUZZ_SRCS:user/lib/%.c=$(O)/fuzz/obj/%.o)
	$(FUZZ_CC) -o $@ $(filter %.c %.o,$^) -lm

$(O)/fuzz/control: tests/fuzz/control.c $(FUZZ_SRCS:user/lib/%.c=$(O)/fuzz/obj/%.o) \
		   $(O)/fuzz/obj/request.o
	$(FUZZ_CC) -o $@ $(filter %.c %.o,$^) -ljson-c -lm

FUZZERS := $(O)/fuzz/config $(O)/fuzz/control

fuzz: $(FUZZERS)
	@rm -rf $(O)/fuzz/corpus $(O)/fuzz/corpus-control
	@mkdir -p $(O)/fuzz/corpus $(O)/fuzz/corpus-control
	$(O)/fuzz/config -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(O)/fuzz/ $(O)/fuzz/corpus tests/fuzz/corpus
	$(O)/fuzz/control -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(O)/fuzz/ $(O)/fuzz/corpus-control \
		tests/fuzz/corpus-control

# --- product ----------------------------------------------------------------
DURATION ?= 60

demo: all
	@tools/demo.sh $(DURATION)

# Three LB hosts behind a router (bird2, BGP + BFD, ECMP), etcd: one host
# killed, a backend added through etcd (docs/edge.md).
demo-cluster: all
	@tools/demo-cluster.sh $(DURATION)

# The benchmark suite: one report, $(O)/bench/results.json and PNG plots
# (BENCHMARKS.md says how each figure is measured).  BENCH_FLAGS=--quick
# for the smoke mode, into $(O)/bench-quick.
bench: all
	@O=$(O) tools/xlb-bench/suite.sh $(BENCH_FLAGS)

# --- install ----------------------------------------------------------------
# xlbd and xlbctl, their man pages, bash completion and systemd unit, and
# the backend-host tool xlb-backend with its man page, completion and unit,
# under $(DESTDIR) (a staging root for packages) and $(PREFIX).  The unit's
# ExecStart follows SBINDIR; /usr/local/lib/systemd/system is on systemd's
# search path.  /etc/xlb is created, never filled: an existing config stays.
PREFIX      ?= /usr/local
SBINDIR     ?= $(PREFIX)/sbin
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR  ?= /etc

.PHONY: install
install: $(PROGRAMS) $(O)/xlb-backend
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/xlb
	install -m 0755 $(PROGRAMS) $(O)/xlb-backend $(DESTDIR)$(SBINDIR)/
	install -m 0644 user/lib/xlb.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 user/xlbd/xlbd.8 user/xlbctl/xlbctl.8 \
		tools/xlb-backend/xlb-backend.8 $(DESTDIR)$(MANDIR)/man8/
	sed 's|^ExecStart=/usr/local/sbin/xlb-backend|ExecStart=$(SBINDIR)/xlb-backend|' \
		dist/xlb-backend.service > $(DESTDIR)$(UNITDIR)/xlb-backend.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/xlb-backend.service
	install -m 0644 dist/xlbctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/xlbctl
	install -m 0644 dist/xlb-backend.bash-completion $(DESTDIR)$(BASHCOMPDIR)/xlb-backend
	sed 's|^ExecStart=/usr/local/sbin/xlbd|ExecStart=$(SBINDIR)/xlbd|' \
		dist/xlbd.service > $(DESTDIR)$(UNITDIR)/xlbd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/xlbd.service

# --- Debian packages ----------------------------------------------------------
# xlb, xlb-redirect-dkms (debian/), built by dpkg-buildpackage from a copy
# of the tree in $(O)/deb/src (it writes its packages beside the tree it
# builds), then checked by lintian: an error fails the goal.  The packages,
# the source package and lintian's report end up in $(O)/deb/, built again
# when a file of the tree (git's list, else every file) is newer.  The vm
# tier installs them in a Debian 12 guest (tests/vm/pkg.sh).
DEB_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
DEB_DIR     := $(O)/deb
DEB_SRC     := $(DEB_DIR)/src/xlb-$(DEB_VERSION)
DEB_STAMP   := $(DEB_DIR)/.built
DEB_JOBS    ?= 2
DEB_INPUTS   = $(wildcard $(shell git ls-files 2>/dev/null || \
		find . -path ./$(O) -prune -o -type f -print))

.PHONY: deb
deb: $(DEB_STAMP)

$(DEB_STAMP): $(DEB_INPUTS)
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	tar -c --exclude=./$(O) --exclude-vcs --exclude-vcs-ignores -f - . | \
		tar -x -C $(DEB_SRC)
	cd $(DEB_SRC) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -us -uc -j$(DEB_JOBS)
	mv $(DEB_DIR)/src/*_* $(DEB_DIR)/
	rm -rf $(DEB_DIR)/src
	lintian --fail-on error $(DEB_DIR)/xlb_$(DEB_VERSION)_*.changes \
		>$(DEB_DIR)/lintian.txt; rc=$$?; cat $(DEB_DIR)/lintian.txt; exit $$rc
	touch $@

test-build test-vm vmtest: $(DEB_STAMP)

clean:
	rm -rf $(O)

# what the compilers said each target includes (not the Debian root the
# package test keeps in $(O)/pkg, whose /etc holds directories named *.d)
-include $(shell find $(O) -path $(O)/pkg -prune -o -name '*.d' -type f -print 2>/dev/null)
