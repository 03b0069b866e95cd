#!/bin/sh
# The seed's claims against the replay (docs/simulate.md, "The seed's claims, against the replay"):
# the whole Philly trace on the shipped stacks with every tenant's targetWait at 1h (bench/claims/),
# autoscaled and static, and prod with its 3-3-4 mix edited to all on-demand. One JSON document per
# run in $OUT; `python bench/claims_table.py $OUT` prints the numbers bench/results.md records.
# Usage: sh bench/claims.sh [OUT]   (from the project's root; `gpuplat` on PATH or GPUPLAT set)
set -eu
OUT=${1:-/tmp/gpuplat-claims}
TRACE=${TRACE:-../shared/traces/philly-jobs.csv}
GPUPLAT=${GPUPLAT:-gpuplat}
mkdir -p "$OUT"
run() {
    name=$1; shift
    echo "$(date -u +%H:%M:%S) $name: $GPUPLAT simulate $*" >&2
    /usr/bin/time -f "$name: %e s wall, %U s user" nice -n 19 $GPUPLAT simulate --trace "$TRACE" --format json "$@" > "$OUT/$name.json"
}
run prod-auto --stack prod --spec platform/platform.yaml --overlay bench/claims/prod-sla.yaml --seeds 5
run prod-static --stack prod --spec platform/platform.yaml --overlay bench/claims/prod-sla.yaml --seeds 5 --static
run prod-on-demand --stack prod --spec platform/platform.yaml --overlay bench/claims/prod-sla-on-demand.yaml --seeds 5
run staging-auto --stack staging --spec platform/platform.yaml --overlay bench/claims/staging-sla.yaml --seeds 3
run dev-auto --stack dev --spec platform/platform.yaml --overlay bench/claims/dev-sla.yaml --seeds 3
