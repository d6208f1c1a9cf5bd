#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: until the data path and daemon exist, show what the table
# library does for an operator: how Maglev and the ring spread flows over
# backends and how many flows move when a backend joins or leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
O=${O:-build}

echo "== xlb demo: consistent-hash tables =="
echo
echo "Four backends, 200000 synthetic flows; then a fifth backend joins."
echo "A good placement keeps max/avg near 1 and moves about 1/5 of the"
echo "flows, all of them to the new backend."
echo
"$O"/xlb-analyze --nodes 4 --keys 200000 --change add
echo
echo "Now one of ten backends leaves: ideally 1/10 of flows move, only its own."
echo
"$O"/xlb-analyze --nodes 10 --keys 200000 --change remove
echo
echo "Table build time (median of 5 runs):"
"$O"/xlb-bench --runs 5 tables
