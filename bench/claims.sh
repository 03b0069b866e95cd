#!/bin/sh
# The seed's claims against the replay (docs/simulate.md, "The seed's claims, against the replay"):
# the whole Philly trace on the shipped stacks with every tenant's targetWait at 1h (bench/claims/),
# autoscaled and static, prod with its 3-3-4 mix edited to all on-demand, and prod on every 8th and 4th
# Philly job (the load of 2,490 GPUs thinned to about prod's 320 whole-GPU GPUs). One JSON document
# per run in OUT; `python bench/claims_table.py OUT` prints the numbers bench/results.md records.
# Usage, from the project's root: sh bench/claims.sh [OUT [RUN ...]]  (default: every run)
# `gpuplat` on PATH or GPUPLAT set; TRACE defaults to ../shared/traces/philly-jobs.csv.
set -eu
OUT=${1:-/tmp/gpuplat-claims}
[ $# -gt 0 ] && shift
RUNS=${*:-prod-auto prod-static prod-on-demand staging-auto dev-auto thin8-prod-auto thin8-prod-static thin4-prod-auto thin4-prod-static}
TRACE=${TRACE:-../shared/traces/philly-jobs.csv}
GPUPLAT=${GPUPLAT:-gpuplat}
mkdir -p "$OUT"
# Every 8th job (the header kept): the same arrival pattern at an eighth of the load. Derived, not committed.
THIN="$OUT/philly-every-8th.csv"; THIN4="$OUT/philly-every-4th.csv"
awk 'NR == 1 || (NR - 2) % 8 == 0' "$TRACE" > "$THIN"
awk 'NR == 1 || (NR - 2) % 4 == 0' "$TRACE" > "$THIN4"
spec() { echo "--stack $1 --spec platform/platform.yaml --overlay bench/claims/$2.yaml"; }
run() {
    name=$1; trace=$2; shift 2
    echo "$(date -u +%H:%M:%S) $name: $GPUPLAT simulate --trace $trace $*" >&2
    /usr/bin/time -f "$name: %e s wall, %U s user" nice -n 19 $GPUPLAT simulate --trace "$trace" --format json "$@" > "$OUT/$name.json"
}
for r in $RUNS; do
    case $r in
        prod-auto) run "$r" "$TRACE" $(spec prod prod-sla) --seeds 5 ;;
        prod-static) run "$r" "$TRACE" $(spec prod prod-sla) --seeds 5 --static ;;
        prod-on-demand) run "$r" "$TRACE" $(spec prod prod-sla-on-demand) --seeds 5 ;;
        staging-auto) run "$r" "$TRACE" $(spec staging staging-sla) --seeds 3 ;;
        dev-auto) run "$r" "$TRACE" $(spec dev dev-sla) --seeds 3 ;;
        thin8-prod-auto) run "$r" "$THIN" $(spec prod prod-sla) --seeds 5 ;;
        thin8-prod-static) run "$r" "$THIN" $(spec prod prod-sla) --seeds 5 --static ;;
        thin4-prod-auto) run "$r" "$THIN4" $(spec prod prod-sla) --seeds 5 ;;
        thin4-prod-static) run "$r" "$THIN4" $(spec prod prod-sla) --seeds 5 --static ;;
        *) echo "unknown run $r" >&2; exit 2 ;;
    esac
done
