#!/usr/bin/env bash
# bench/run.sh — the performance harness of docs/performance.md.
#
# Starts its own redis-server on a free loopback port, seeds it through the
# application (-seed, as a person would), and in one run measures:
#   1. seeding time and Redis memory per order at $SMALL and $BIG orders;
#   2. GET /orders/<id> throughput of the application against the floor
#      (bench/floor), alternating rounds;
#   3. page latency (p50/p99) of GET /orders/<id>, GET /orders?page=N and a
#      name search at $SMALL against $BIG orders;
#   4. a CPU and mutex profile of the application under load (ORDERS_PPROF);
#   5. the embedded store (miniredis) at $MINI_SIZES orders.
# Everything it starts listens on 127.0.0.1 and is stopped at the end; each
# load run is bounded in time and count. Results: stdout and bench/out/.
#
#   bash bench/run.sh             # the full run (about 8 minutes on 2 cores)
#   QUICK=1 bash bench/run.sh     # a smoke run with small sizes (about 1 minute)
# Knobs: BIG SMALL MINI_SIZES ROUNDS DUR CONC LAT_CONC SKIP_MINI=1 SKIP_PROFILE=1
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

if [ "${QUICK:-0}" = 1 ]; then
  : "${BIG:=50000}" "${SMALL:=5000}" "${MINI_SIZES:=5000}" "${ROUNDS:=2}" "${DUR:=1s}"
fi
BIG=${BIG:-1000000}
SMALL=${SMALL:-10000}
MINI_SIZES=${MINI_SIZES:-10000 100000}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-4s}
CONC=${CONC:-8}          # connections for throughput
LAT_CONC=${LAT_CONC:-2}  # connections for latency (light load: latency, not queueing)

out=bench/out
mkdir -p "$out"
work=$(mktemp -d)
report="$out/report-$(date -u +%Y%m%dT%H%M%SZ).md"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
say() { printf '\n## %s\n\n' "$*" | tee -a "$report"; }

command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
used_memory() { redis-cli -p "$rport" -n "$1" info memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }

note "# Benchmark run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
note ""
note "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/{print $2}') GiB memory"
note "- $(go version | cut -d' ' -f3-), $(redis-server --version | cut -d' ' -f1-3), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
note "- sizes: BIG=$BIG SMALL=$SMALL MINI_SIZES='$MINI_SIZES'; $ROUNDS rounds of $DUR; $CONC connections (throughput), $LAT_CONC (latency)"

echo "building into $work ..."
go build -o "$work/orders" .
go build -o "$work/floor" ./bench/floor
go build -o "$work/loadgen" ./bench/loadgen
go build -o "$work/seedmem" ./bench/seedmem

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --daemonize no \
  >"$work/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
wait_port "$rport" 10
redis_url() { echo "redis://127.0.0.1:$rport/$1"; }

# start_app NAME DB SEED [extra flags…]: the application on a free port; its
# port in $app_port, its pid in $app_pid. It seeds before it listens.
start_app() {
  local name=$1 db=$2 seed=$3; shift 3
  app_port=$(free_port)
  "$work/orders" -addr "127.0.0.1:$app_port" -redis "$(redis_url "$db")" -seed "$seed" "$@" >"$work/$name.log" 2>&1 &
  app_pid=$!
  pids+=("$app_pid")
  wait_log "$work/$name.log" 'msg=serving' 600
}
seed_seconds() { grep -o 'msg="seeded demo orders".*' "$1" | grep -o 'seconds=[0-9.]*' | cut -d= -f2; }

# 1. Seeding and memory ---------------------------------------------------------
say "1. Seeding and memory (redis-server $(redis-server --version | grep -o 'v=[0-9.]*'))"
m0=$(used_memory 1)
start_app small 1 "$SMALL"; small_port=$app_port; small_pid=$app_pid
m1=$(used_memory 1)
start_app big 0 "$BIG"; big_port=$app_port; big_pid=$app_pid
m2=$(used_memory 0)
note "| orders | seeding (go run . -seed N) | used_memory growth | bytes per order |"
note "|---:|---:|---:|---:|"
note "| $SMALL | $(seed_seconds "$work/small.log") s | $((m1 - m0)) | $(((m1 - m0) / SMALL)) |"
note "| $BIG | $(seed_seconds "$work/big.log") s | $((m2 - m1)) | $(((m2 - m1) / BIG)) |"
note ""
note '```'
"$work/seedmem" -redis "127.0.0.1:$rport" -db 0 -report | tee -a "$report"
note '```'

# 2. Throughput against the floor ----------------------------------------------
say "2. GET /orders/<id>: the application against the floor ($BIG orders, $CONC connections)"
floor_port=$(free_port)
"$work/floor" -addr "127.0.0.1:$floor_port" -redis "$(redis_url 0)" -views . >"$work/floor.log" 2>&1 &
floor_pid=$!
pids+=("$floor_pid")
wait_port "$floor_port" 10
"$work/loadgen" -rounds "$ROUNDS" -d "$DUR" -c "$CONC" -redis-pid "$rpid" \
  -case "name=project|url=http://127.0.0.1:$big_port/orders/{id}|ids=$BIG|pid=$big_pid" \
  -case "name=floor|url=http://127.0.0.1:$floor_port/orders/{id}|ids=$BIG|pid=$floor_pid" \
  -ratio project/floor | tee -a "$report"

# 3. Latency at SMALL and BIG ------------------------------------------------------
say "3. Page latency at $SMALL and $BIG orders ($LAT_CONC connections)"
sp=$(((SMALL + 24) / 25)); bp=$(((BIG + 24) / 25))
"$work/loadgen" -rounds "$ROUNDS" -d "$DUR" -c "$LAT_CONC" \
  -case "name=show-small|url=http://127.0.0.1:$small_port/orders/{id}|ids=$SMALL|pid=$small_pid" \
  -case "name=show-big|url=http://127.0.0.1:$big_port/orders/{id}|ids=$BIG|pid=$big_pid" \
  -case "name=list-small|url=http://127.0.0.1:$small_port/orders?page={page}|pages=$sp|pid=$small_pid" \
  -case "name=list-big|url=http://127.0.0.1:$big_port/orders?page={page}|pages=$bp|pid=$big_pid" \
  -case "name=search-small|url=http://127.0.0.1:$small_port/orders?q={q}|pid=$small_pid" \
  -case "name=search-big|url=http://127.0.0.1:$big_port/orders?q={q}|pid=$big_pid" \
  -ratio show-big/show-small -ratio list-big/list-small -ratio search-big/search-small | tee -a "$report"
note ""
note "(list: a random page of 25 over all pages; search: a random name prefix, first page)"

# 4. Profile ------------------------------------------------------------------------
if [ "${SKIP_PROFILE:-0}" != 1 ]; then
  say "4. Profile of GET /orders/<id> under load (ORDERS_PPROF)"
  kill "$big_pid" 2>/dev/null || true
  wait "$big_pid" 2>/dev/null || true
  pprof_port=$(free_port)
  prof_port=$(free_port)
  ORDERS_PPROF="127.0.0.1:$pprof_port" "$work/orders" -addr "127.0.0.1:$prof_port" -redis "$(redis_url 0)" \
    >"$work/prof.log" 2>&1 &
  prof_pid=$!
  pids+=("$prof_pid")
  wait_log "$work/prof.log" 'msg=serving' 60
  wait_port "$pprof_port" 10
  "$work/loadgen" -rounds 1 -d 12s -c "$CONC" -warm 500ms \
    -case "name=project-profiled|url=http://127.0.0.1:$prof_port/orders/{id}|ids=$BIG|pid=$prof_pid" >"$work/prof-load.txt" 2>&1 &
  lg=$!
  sleep 1
  curl -s -o "$out/cpu.pprof" "http://127.0.0.1:$pprof_port/debug/pprof/profile?seconds=8"
  curl -s -o "$out/mutex.pprof" "http://127.0.0.1:$pprof_port/debug/pprof/mutex"
  curl -s -o "$out/block.pprof" "http://127.0.0.1:$pprof_port/debug/pprof/block"
  wait "$lg" || true
  cp "$work/orders" "$out/orders-pprof"
  note '```'
  note "top functions (flat), CPU:"
  go tool pprof -top -nodecount=25 "$out/orders-pprof" "$out/cpu.pprof" 2>/dev/null | sed -n '5,32p' | tee -a "$report"
  note ""
  note "top functions (cumulative), CPU:"
  go tool pprof -top -cum -nodecount=40 "$out/orders-pprof" "$out/cpu.pprof" 2>/dev/null | sed -n '6,47p' | tee -a "$report"
  note ""
  note "mutex contention (delay):"
  go tool pprof -top -nodecount=12 "$out/orders-pprof" "$out/mutex.pprof" 2>/dev/null | sed -n '4,18p' | tee -a "$report"
  note ""
  note "time blocked on locks (block profile, cumulative):"
  { go tool pprof -top -cum -nodecount=200 "$out/orders-pprof" "$out/block.pprof" 2>/dev/null |
    grep -E 'Duration|Total|template|RWMutex\)\.Lock|sync\.\(\*Mutex\)\.Lock' || true; } | head -8 | tee -a "$report"
  note '```'
  kill "$prof_pid" 2>/dev/null || true
fi

# 5. The embedded store ------------------------------------------------------------------
if [ "${SKIP_MINI:-0}" != 1 ]; then
  say "5. The embedded store (miniredis) — $LAT_CONC connections"
  kill "$small_pid" "$floor_pid" 2>/dev/null || true
  for n in $MINI_SIZES; do
    port=$(free_port)
    "$work/orders" -addr "127.0.0.1:$port" -data "" -seed "$n" >"$work/mini-$n.log" 2>&1 &
    mpid=$!
    pids+=("$mpid")
    wait_log "$work/mini-$n.log" 'msg=serving' 600
    note "miniredis, $n orders: seeding took $(seed_seconds "$work/mini-$n.log") s"
    "$work/loadgen" -rounds "$ROUNDS" -d "$DUR" -c "$LAT_CONC" -n 20000 \
      -title "miniredis, $n orders" \
      -case "name=mini-show-$n|url=http://127.0.0.1:$port/orders/{id}|ids=$n|pid=$mpid" \
      -case "name=mini-list-$n|url=http://127.0.0.1:$port/orders?page={page}|pages=$(((n + 24) / 25))|pid=$mpid" \
      -case "name=mini-search-$n|url=http://127.0.0.1:$port/orders?q={q}|pid=$mpid" | tee -a "$report"
    kill "$mpid" 2>/dev/null || true
  done
fi

# Goals (docs/performance.md, Summary) ----------------------------------------------------
say "Goals"
verdict() { awk -v v="$1" -v lim="$2" -v dir="$3" 'BEGIN{ok = (dir == "max") ? (v <= lim) : (v >= lim); print (ok ? "met" : "NOT met")}'; }
ratio_of() { grep "^RATIO $1 " "$report" | head -1 | awk -v f="$2" '{for (i = 1; i < NF; i++) if ($i == f) print $(i+1)}'; }
seed_big=$(seed_seconds "$work/big.log")
bpo=$(((m2 - m1) / BIG))
floor_ratio=$(ratio_of project/floor req/s)
note "| goal | measured | |"
note "|---|---:|---|"
note "| seed $BIG orders ≤ 30 s | $seed_big s | $(verdict "$seed_big" 30 max) |"
note "| ≤ 700 bytes per order at $BIG | $bpo | $(verdict "$bpo" 700 max) |"
note "| project/floor req/s ≥ 0.80 | $floor_ratio | $(verdict "$floor_ratio" 0.8 min) |"
for page in show list search; do
  for f in p50 p99; do
    g=$(ratio_of "$page-big/$page-small" "$f")
    note "| $page latency $f growth $SMALL → $BIG ≤ 1.3× | $g | $(verdict "$g" 1.3 max) |"
  done
done

note ""
note "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "report: $report (profiles in $out/)"
