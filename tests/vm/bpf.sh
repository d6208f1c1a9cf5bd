#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The bpf and net tiers on each kernel Debian 12 ships (6.1 and 6.12,
# tests/vm/lib/kernels.sh): every build/tests/bpf and build/tests/net
# program runs in one qemu guest per kernel (tools/vm/run.sh --kernel
# SERIES -- tests/run.sh bpf net; booting is the expensive part), the
# guests side by side, and each program becomes one TAP line per kernel.
# A failing program's relevant lines (failed cases, libbpf errors, the
# verifier's last words, assertions) follow as diagnostics; each guest's
# whole output stays in build/vm/bpf-SERIES.log.  XLB_VM_TIMEOUT (seconds)
# bounds each guest's run.
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
TIMEOUT=${XLB_VM_TIMEOUT:-1200}
. tests/lib/tap.sh
. tests/vm/lib/pins.sh
. tests/vm/lib/kernels.sh

mapfile -t progs < <(find "$O"/tests/bpf "$O"/tests/net -maxdepth 1 -type f \
	-perm -u+x 2>/dev/null | sort)
if [[ ${#progs[@]} -eq 0 ]]; then
	tap_not_ok "no test programs in $O/tests/bpf or $O/tests/net (make test-vm builds them)"
	tap_done
	exit 1
fi

mkdir -p "$O"/vm
# One guest per kernel, side by side (each runs on one host core).
# Progress while they run: which program each has started.
for s in "${VM_SERIES[@]}"; do
	log="$O/vm/bpf-$s.log" err="$O/vm/bpf-$s.err"
	(
		# shellcheck disable=SC2016  # expanded in the guest
		tools/vm/run.sh --kernel "$s" --timeout "$TIMEOUT" -- \
			bash -c 'echo "# guest kernel: $(uname -r)"; tests/run.sh bpf net; rc=$?
				 echo "# xdp pins left: $(ls /sys/fs/bpf/xdp 2>/dev/null | tr "\n" " ")"
				 exit $rc' \
			2>"$err" | tee "$log" | sed -un "s|^# === .*/|# vm: $s: running |p"
		echo "${PIPESTATUS[0]}" >"$O/vm/bpf-$s.rc"
	) &
done
wait

# One program's output, from its "# === PROG" header (tests/run.sh) to the
# next header or the summary; a last line "@@complete" when it ended.
section() {
	awk -v h="# === $1" '
		$0 == h { p = 1; next }
		p && (/^# === / || /^[0-9]+ passed, [0-9]+ failed/) { print "@@complete"; exit }
		p' "$log"
}

# The verifier's verdict with the instructions before it, libbpf's
# complaint, the first assertions, the failed cases: each once, at most 40.
diagnose() {
	awk '
		function keep(s) { if (!(s in seen) && kept < 40) { seen[s] = 1; kept++; print s } }
		{ line[NR] = $0 }
		/^processed [0-9]+ insns/ {
			for (i = NR - 5; i < NR; i++)
				if (i > 0 && line[i] !~ /^(verification time|stack depth)/)
					keep(line[i])
		}
		/^libbpf: .*(fail|error|nvalid)/ { keep($0) }
		/Expected|exited with status|reported no test/ && asserts++ < 3 { keep($0) }
		/^not ok / && nok++ < 20 { keep($0) }
	' | sed -e 's/^# *//' -e 's/^/#   /'
}

for s in "${VM_SERIES[@]}"; do
	log="$O/vm/bpf-$s.log"
	sed 's/^\([^#]\)/# \1/' "$O/vm/bpf-$s.err"
	vm_rc=$(cat "$O/vm/bpf-$s.rc" 2>/dev/null)
	# What went wrong with the guest itself, for programs it never finished.
	case $vm_rc in
	124) why="guest timed out after $TIMEOUT s" ;;
	*)   why="guest stopped (run.sh status ${vm_rc:-?})" ;;
	esac

	kver=$(sed -n 's/^# guest kernel: //p' "$log" | head -n 1)
	if [[ "$kver" == "$s".* ]]; then
		tap_ok "$s: guest kernel is $kver"
	else
		tap_not_ok "$s: guest kernel is $s (got '${kver:-nothing}'; $why)"
	fi
	xdp_pins_left "$s" "$log" "$why"

	for prog in "${progs[@]}"; do
		name=${prog##*/}
		out=$(section "$prog")
		if [[ -z "$out" ]]; then
			tap_not_ok "$s: $name (did not run: $why)"
			continue
		fi
		p=$(grep -cE '^ok [0-9]+' <<<"$out")
		f=$(grep -cE '^not ok' <<<"$out")
		if [[ "$out" != *@@complete ]]; then
			tap_not_ok "$s: $name (did not finish: $why)"
			echo "#   $p ok, $f not ok before the guest stopped"
			diagnose <<<"$out"
		elif [[ $f -eq 0 && $p -gt 0 ]]; then
			tap_ok "$s: $name"
		else
			tap_not_ok "$s: $name"
			echo "#   $p ok, $f not ok; whole output in $log"
			diagnose <<<"$out"
		fi
	done
done
tap_done $(((2 + ${#progs[@]}) * ${#VM_SERIES[@]}))
