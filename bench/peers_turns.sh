#!/usr/bin/env bash
# Before and after in turns (issue 42): the peers scenario (bench/run.py --only 7) run RUNS
# times by each of two checkouts on one loaded database, one after the other, so both meet the
# same machine. Both run this checkout's bench/ (copied into BEFORE), each against its own
# memoryadmin; the partial index facts 0018 adds is dropped before each "before" run and made
# again before each "after" run, so "before" reads as main did.
#
#   bench/peers_turns.sh /work/wt-before /work/wt-after 1m 3 [N]   # SIZE: 20k, 1m or 10m
#
# Databases: postgres://postgres@127.0.0.1:5432/ma_peers_{20k,1m,10m} (PEERS_URL_PREFIX to
# change), loaded by `make bench-peers` with SECRET_KEY (default bench-peers). Tables go to
# bench/out/peers-SIZE-{before,after}-RUN.txt in AFTER.
set -euo pipefail
before="$1"; after="$2"; size="$3"; runs="${4:-3}"; n="${5:-2000}"
prefix="${PEERS_URL_PREFIX:-postgres://postgres@127.0.0.1:5432/ma_peers_}"
case "$size" in
  20k) preset=20k ;;
  1m) preset=large ;;
  10m) preset=10m ;;
  *) echo "size: 20k, 1m or 10m" >&2; exit 2 ;;
esac
url="$prefix$size"
export SECRET_KEY="${SECRET_KEY:-bench-peers}"
rsync -a --delete "$after/bench/" "$before/bench/"
mkdir -p "$after/bench/out"
first="${FIRST_RUN:-1}"  # FIRST_RUN=4: number these runs from 4 (more runs beside earlier ones)
for run in $(seq "$first" $((first + runs - 1))); do
  for side in before after; do
    dir="$before"; [ "$side" = after ] && dir="$after"
    if [ "$side" = before ]; then
      psql "$url" -qc "DROP INDEX IF EXISTS memory_subject_use_paused"
    else
      psql "$url" -qc "CREATE INDEX IF NOT EXISTS memory_subject_use_paused ON memory_subject (subject_id) WHERE memory_use_paused"
    fi
    # The index's build (or drop) and its WAL settle before the run: a checkpoint, a pause.
    psql "$url" -qc "CHECKPOINT"
    sleep 3
    (cd "$dir" && DATABASE_URL="$url" .venv/bin/python bench/run.py --preset "$preset" --only 7 \
      --n "$n" --skip-load) > "$after/bench/out/peers-$size-$side-$run.txt" 2>&1
    echo "$size $side run $run done: $(date -u +%H:%M:%S)"
  done
done
psql "$url" -qc "CREATE INDEX IF NOT EXISTS memory_subject_use_paused ON memory_subject (subject_id) WHERE memory_use_paused"
