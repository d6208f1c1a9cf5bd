#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The backend module kmod/xlb_redirect.c on each kernel Debian 12 ships
# (6.1 and 6.12, tests/vm/lib/kernels.sh): checkpatch.pl --strict from each
# kernel's source (here), the DKMS tree built with W=1 against each
# kernel's headers (no warning), then one qemu guest per kernel, side by
# side (tools/vm/run.sh --kernel SERIES -- tests/vm/kmod.sh --guest), that
# loads the module built for it and runs every build/tests/kmod program
# (kselftest harness: decision table, hostile packets and control-file
# writes, namespaces, unloading under traffic, the second-chance scenario).
# Each test case becomes one TAP line per kernel; the scenario's figures
# are passed on as diagnostics; each guest's whole output stays in
# build/vm/kmod-SERIES.log.  XLB_VM_TIMEOUT (seconds) bounds each guest's
# run.  A program still running after XLB_VM_STUCK seconds (default 300)
# has the stacks of blocked tasks and the kernel log printed, every two
# minutes.  A failed case prints, for each of its namespaces, the module's
# counters and the stack's drop counters (tests/kmod/kmod.h, km_dump).
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}

# --- in the guest -----------------------------------------------------------
if [[ "${1:-}" == --guest ]]; then
	# the module built for this kernel (on the host, below)
	KO="$O/vm/kmod-$(uname -r)/kmod/xlb_redirect.ko"
	export XLB_KMOD="$KO"
	echo "# guest kernel: $(uname -r)"
	echo "# module vermagic: $(modinfo -F vermagic "$KO" 2>/dev/null)"
	# fou and ipip: hostile.c sends TCP through a Linux GUE tunnel
	modprobe -a udp_tunnel ip6_udp_tunnel veth bridge fou ipip
	# bad values of the module parameter: refused, nothing left loaded
	# (an unknown parameter name is the kernel's business: it loads the
	# module and logs "unknown parameter ignored")
	for bad in port=0 port=70000 port=abc port=-1; do
		if insmod "$KO" "$bad" 2>/dev/null; then
			echo "# badparam $bad: loaded"
			rmmod xlb_redirect
		elif [[ -d /sys/module/xlb_redirect ]]; then
			echo "# badparam $bad: refused but left loaded"
			rmmod xlb_redirect
		else
			echo "# badparam $bad: refused"
		fi
	done
	if insmod "$KO" port=7000 &&
	   grep -qx 'port 7000' /proc/net/xlb_redirect && rmmod xlb_redirect; then
		echo "# goodparam port=7000: in use"
	else
		echo "# goodparam port=7000: not in use"
		rmmod xlb_redirect 2>/dev/null
	fi
	if insmod "$KO"; then
		echo "# module: loaded"
	else
		echo "# module: failed to load"
	fi
	# A program stuck in the kernel cannot be killed, and the guest then
	# runs into the host's timeout: say what the stuck tasks are doing
	# (the kernel's hung-task report and the stacks of D-state tasks)
	# while there is still time, so the log shows where it hangs.
	echo 60 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	watchdog() {
		local t=0 p
		while sleep 30; do
			t=$((t + 30))
			((t >= ${XLB_VM_STUCK:-300} && t % 120 == 60)) || continue
			echo "# stuck: $1 still running after $t s; tasks in D state:"
			for p in /proc/[0-9]*; do
				grep -qs '^State:.*D' "$p/status" || continue
				echo "# stuck:   $(cat "$p/comm" 2>/dev/null) (pid ${p#/proc/})"
				sed 's/^/# stuck:     /' "$p/stack" 2>/dev/null
			done
			dmesg | tail -n 40 | sed 's/^/# stuck: dmesg: /'
		done
	}
	for prog in $(find "$O"/tests/kmod -maxdepth 1 -type f -perm -u+x | sort); do
		echo "# === ${prog##*/}"
		watchdog "${prog##*/}" &
		wd=$!
		t0=$(date +%s)
		"$prog" 2>&1
		rc=$?
		kill "$wd" 2>/dev/null
		wait "$wd" 2>/dev/null
		echo "# ran ${prog##*/} $(($(date +%s) - t0)) s"
		echo "# exit ${prog##*/} $rc"
	done
	echo "# module still loaded: $(test -d /sys/module/xlb_redirect && echo yes || echo no)"
	echo "# xdp pins left: $(ls /sys/fs/bpf/xdp 2>/dev/null | tr '\n' ' ')"
	echo "# taint $(cat /proc/sys/kernel/tainted)"
	dmesg | grep -E 'WARNING|BUG|Oops|Call Trace|xlb_redirect' | head -n 20 |
		sed 's/^/# dmesg: /'
	exit 0
fi

# --- on the host --------------------------------------------------------------
TIMEOUT=${XLB_VM_TIMEOUT:-1200}
. tests/lib/tap.sh
. tests/vm/lib/pins.sh
. tests/vm/lib/kernels.sh
. tests/vm/lib/kmod.sh

# LINUX_VERSION_CODE is ignored: checkpatch wants in-tree code written for
# the one kernel it is merged into, and this module is built for several
# (the one #if, on an exported function's arguments, is the only use).
for s in "${VM_SERIES[@]}"; do
	cp="$O/checkpatch/$s/checkpatch.pl"
	if [[ ! -f "$cp" ]]; then
		tap_not_ok "$s: checkpatch --strict kmod/xlb_redirect.c (no $cp; make test-vm extracts it)"
	elif out=$(perl "$cp" --strict --no-tree --quiet --ignore LINUX_VERSION_CODE \
			-f kmod/xlb_redirect.c 2>&1); then
		tap_ok "$s: checkpatch --strict kmod/xlb_redirect.c: clean"
	else
		tap_not_ok "$s: checkpatch --strict kmod/xlb_redirect.c"
		sed 's/^/#   /' <<<"$out" | head -n 40
	fi
done

# The tree DKMS would build, built once per kernel with W=1 against that
# kernel's headers (tests/vm/lib/kmod.sh): no warning at all.  The guest of
# that kernel loads this build.
for s in "${VM_SERIES[@]}"; do
	if ! vm_kmod_build "$s" && [[ -z $VM_KMOD_OUT ]]; then
		tap_not_ok "$s: dkms source tree builds without warnings ($VM_KMOD_WHY)"
	elif [[ -z $VM_KMOD_WHY ]] && ! grep -qi 'warning:' <<<"$VM_KMOD_OUT"; then
		tap_ok "$s: dkms source tree builds with W=1 and no warning ($VM_KMOD_KVER)"
	else
		tap_not_ok "$s: dkms source tree builds with W=1 and no warning ($VM_KMOD_KVER)"
		grep -iE 'warning|error' <<<"$VM_KMOD_OUT" | head -n 20 | sed 's/^/#   /'
	fi
done

mapfile -t progs < <(find "$O"/tests/kmod -maxdepth 1 -type f -perm -u+x 2>/dev/null | sort)
if [[ ${#progs[@]} -eq 0 ]]; then
	tap_not_ok "no test programs in $O/tests/kmod (make test-vm builds them)"
	tap_done
	exit 1
fi

# One guest per kernel, side by side (each runs on one host core).
t0=$(date +%s)
for s in "${VM_SERIES[@]}"; do
	(
		tools/vm/run.sh --kernel "$s" --timeout "$TIMEOUT" -- \
			tests/vm/kmod.sh --guest 2>"$O/vm/kmod-$s.err" |
			tee "$O/vm/kmod-$s.log" |
			sed -un "s|^# === |# vm: $s: running |p"
		echo "${PIPESTATUS[0]}" >"$O/vm/kmod-$s.rc"
		echo "# vm: $s: guest boot and run took $(($(date +%s) - t0)) s"
	) &
done
wait

# One program's output, from its "# === NAME" header to its "# exit" line.
section() {
	awk -v h="# === $1" -v e="# exit $1 " '
		$0 == h { p = 1; next }
		p && index($0, e) == 1 { print; exit }
		p' "$log"
}

# The TAP lines of one kernel's guest.
report() {
	local s=$1 log="$O/vm/kmod-$1.log" vm_rc why kver magic line param
	local prog name out cases c rc taint

	sed 's/^\([^#]\)/# \1/' "$O/vm/kmod-$s.err"
	vm_rc=$(cat "$O/vm/kmod-$s.rc" 2>/dev/null)
	case $vm_rc in
	0)   why= ;;
	124) why="guest timed out after $TIMEOUT s" ;;
	*)   why="guest stopped (run.sh status ${vm_rc:-?})" ;;
	esac

	kver=$(sed -n 's/^# guest kernel: //p' "$log" | head -n 1)
	if [[ "$kver" == "$s".* ]]; then
		tap_ok "$s: guest kernel is $kver"
	else
		tap_not_ok "$s: guest kernel is $s (got '${kver:-nothing}'; $why)"
	fi
	magic=$(sed -n 's/^# module vermagic: //p' "$log" | head -n 1)
	if [[ -n "$kver" && "$magic" == "$kver "* ]]; then
		tap_ok "$s: module built for the guest's kernel ($kver)"
	else
		tap_not_ok "$s: module built for the guest's kernel (vermagic '$magic', guest '$kver')"
	fi
	if grep -qx '# module: loaded' "$log"; then
		tap_ok "$s: module loads"
	else
		tap_not_ok "$s: module loads"
		grep '^# dmesg' "$log"
	fi

	while IFS= read -r line; do
		param=${line#\# badparam }
		param=${param%%:*}
		if [[ "$line" == *": refused" ]]; then
			tap_ok "$s: module parameter $param is refused"
		else
			tap_not_ok "$s: module parameter $param is refused (${line##*: })"
		fi
	done < <(grep '^# badparam ' "$log")
	[[ $(grep -c '^# badparam ' "$log") -eq 4 ]] ||
		tap_not_ok "$s: every bad module parameter was tried"
	if grep -qx '# goodparam port=7000: in use' "$log"; then
		tap_ok "$s: module parameter port=7000 is the port in use"
	else
		tap_not_ok "$s: module parameter port=7000 is the port in use"
	fi

	for prog in "${progs[@]}"; do
		name=${prog##*/}
		out=$(section "$name")
		if [[ -z "$out" ]]; then
			tap_not_ok "$s: $name (did not run${why:+: $why})"
			continue
		fi
		cases=0
		while IFS= read -r line; do
			case "$line" in
			"ok "[0-9]*)
				cases=$((cases + 1))
				c=${line#ok }; c=${c#* }
				tap_ok "$s: $name: $c" ;;
			"not ok "[0-9]*)
				cases=$((cases + 1))
				c=${line#not ok }; c=${c#* }
				tap_not_ok "$s: $name: $c"
				# the case's own lines: from its "#  RUN" to here
				awk -v c="${c%% *}" '
					index($0, "#  RUN") == 1 && index($0, " " c " ") { p = 1 }
					p && !/^#  RUN/ && !/^(not )?ok / { print "#   " $0 }
					p && /^not ok / { exit }' <<<"$out" | head -n 30 ;;
			"# SCENARIO"*)
				echo "# $s:${line#\#}" ;;
			esac
		done <<<"$out"
		rc=$(tail -n 1 <<<"$out" | sed -n "s/^# exit $name //p")
		if [[ -z "$rc" ]]; then
			tap_not_ok "$s: $name did not finish${why:+ ($why)}"
			# where it was: the last cases it started, and the watchdog's report
			grep -E '^#  RUN|^# stuck' <<<"$out" | tail -n 60 | sed 's/^/#   /'
		elif [[ "$rc" != 0 && $cases -eq 0 ]]; then
			tap_not_ok "$s: $name (exit $rc, no test case${why:+; $why})"
			tail -n 20 <<<"$out" | sed 's/^/#   /'
		elif [[ "$rc" != 0 ]] && ! grep -q '^not ok ' <<<"$out"; then
			tap_not_ok "$s: $name (exit $rc, no case failed)"
			tail -n 20 <<<"$out" | sed 's/^/#   /'
		fi
	done

	xdp_pins_left "$s" "$log" "$why"
	if grep -qx '# module still loaded: yes' "$log"; then
		tap_ok "$s: module loaded at the end (unload tests reload it)"
	else
		tap_not_ok "$s: module loaded at the end (unload tests reload it)"
	fi
	taint=$(sed -n 's/^# taint //p' "$log" | head -n 1)
	# 512 W (warning), 128 D (oops), 32 B (bad page), 16 M (machine check)
	if [[ "$taint" =~ ^[0-9]+$ ]] && (( (taint & (512 | 128 | 32 | 16)) == 0 )); then
		tap_ok "$s: no kernel warning or oops (taint $taint)"
	else
		tap_not_ok "$s: no kernel warning or oops (taint '${taint:-?}')"
		grep '^# dmesg' "$log" | head -n 20
	fi
}

for s in "${VM_SERIES[@]}"; do
	report "$s"
done
echo "# vm: both kernels' guests took $(($(date +%s) - t0)) s"
tap_done
