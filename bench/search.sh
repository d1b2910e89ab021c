#!/usr/bin/env bash
# bench/search.sh — the search, sort and date budgets (docs/performance.md,
# section 7):
#   1. seeding BIG orders through the application (-seed), in seconds;
#   2. Redis memory per order at BIG with every index, and what each costs
#      (bench/seedmem -report);
#   3. the median latency of a one-term word search, an SKU search, two-
#      and three-term searches (a full name, with a status, a sort, a SKU,
#      a word of the email), each
#      sort with and without a status filter (random pages over the whole
#      list) and a created-date filter, at SMALL and at BIG orders, and the
#      ratio BIG/SMALL of each.
# It starts its own redis-server on a free loopback port and stops
# everything at the end. Results: stdout and bench/out/search-*.md.
#
#   bash bench/search.sh                 # BIG=1000000 SMALL=10000, about 12 minutes
#   BIG=100000 ROUNDS=2 bash bench/search.sh   # a quicker look
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

BIG=${BIG:-1000000}
SMALL=${SMALL:-10000}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-2s}
LAT_CONC=${LAT_CONC:-2}

out=bench/out
mkdir -p "$out"
work=$(mktemp -d)
report="$out/search-$(date -u +%Y%m%dT%H%M%SZ).md"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
note "# search, sort and date budgets, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
note ""
note "- $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(go version | cut -d' ' -f3-); $(redis-server --version | cut -d' ' -f1-3)"
note "- load average before: $(cut -d' ' -f1-3 /proc/loadavg); BIG=$BIG SMALL=$SMALL; $ROUNDS rounds of $DUR, $LAT_CONC connections"

go build -o "$work/orders" .
go build -o "$work/loadgen" ./bench/loadgen
go build -o "$work/seedmem" ./bench/seedmem

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
used_memory() { redis-cli -p "$rport" info memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }

# start_app NAME DB SEED: the application on a free port, seeding first;
# sets app_port and app_pid.
start_app() {
  app_port=$(free_port)
  "$work/orders" -addr "127.0.0.1:$app_port" -redis "redis://127.0.0.1:$rport/$2" -seed "$3" >"$work/$1.log" 2>&1 &
  app_pid=$!
  pids+=("$app_pid")
  wait_log "$work/$1.log" "listening\|serving" 600
}

note ""
note "## 1–2. Seeding and memory"
before=$(used_memory)
start_app big 0 "$BIG"
big_port=$app_port big_pid=$app_pid
after=$(used_memory)
secs=$(grep -o 'seeded demo orders.*' "$work/big.log" | grep -o 'seconds=[0-9.]*' | cut -d= -f2)
note ""
note "- seeding $BIG orders through \`orders -seed\`: **${secs} s**"
note "- used_memory $before → $after: **$(((after - before) / BIG)) bytes per order**, every index included"
note ""
note '```'
"$work/seedmem" -redis "127.0.0.1:$rport" -db 0 -report 2>&1 | tee -a "$report"
note '```'
# The pages are measured on a fresh process, as after a deploy: the one that
# seeded a million orders carries a heap shaped by the seeding.
kill "$big_pid"; wait "$big_pid" 2>/dev/null || true
start_app big-serve 0 0
big_port=$app_port big_pid=$app_pid
start_app small 1 "$SMALL"
small_port=$app_port small_pid=$app_pid

note ""
note "## 3. Latency at $SMALL and $BIG orders"
note ""
# A month of created dates inside the seeded year (the seed spreads orders
# over the year before it ran).
from=$(date -u -d '-200 days' +%Y-%m-%d)
to=$(date -u -d '-170 days' +%Y-%m-%d)
cases=()
ratios=()
add() { # add NAME PATH-AND-QUERY PAGES-BIG PAGES-SMALL
  cases+=(-case "name=$1-small|url=http://127.0.0.1:$small_port$2|pages=$4|pid=$small_pid")
  cases+=(-case "name=$1-big|url=http://127.0.0.1:$big_port$2|pages=$3|pid=$big_pid")
  ratios+=(-ratio "$1-big/$1-small")
}
bp=$((BIG / 25)) sp=$((SMALL / 25))
add word "/orders?q={word}" 1 1
# Two and three terms: a full name typed in order (each word matches 1 in
# 20 demo orders, the name 1 in 400), the same in one status and in a
# sort, a name with a SKU, and a name with a word of the email.
add name2 "/orders?q=ada+lovelace" 1 1
add name2-status "/orders?q=grace+hopper&status=shipped" 1 1
add name2-sort "/orders?q=alan+turing&sort=-total" 1 1
add name3-sku "/orders?q=ada+lovelace+kbd" 1 1
add name3-email "/orders?q=linus+torvalds+example" 1 1
add sku "/orders?q={sku}" 1 1
for s in -created created customer -customer -updated updated -total total; do
  add "sort$s" "/orders?sort=$s&page={page}" "$bp" "$sp"
  add "sort$s-shipped" "/orders?sort=$s&status=shipped&page={page}" $((bp / 9)) $((sp / 9))
done
add dates "/orders?from=$from&to=$to" 1 1
add dates-page "/orders?from=$from&to=$to&page={page}" $((bp / 13)) $((sp / 13))
for accept in ${ACCEPTS:-application/json text/html}; do
  "$work/loadgen" -rounds "$ROUNDS" -d "$DUR" -c "$LAT_CONC" -redis-pid "$rpid" -accept "$accept" \
    -title "$accept, $LAT_CONC connections, medians of $ROUNDS rounds" "${cases[@]}" "${ratios[@]}" | tee -a "$report"
  note ""
done
note ""
note "report: $report"
