#!/usr/bin/env bash
# The cost bound at a million orders: seeds 1,000,000 orders and 100,000
# products into a redis-server of its own (started on a free port with
# SLOWLOG logging every command over 0.1 ms), runs every query shape the
# List, the Inquiry and the product list allow (store/cost_test.go:
# costQueries, each at pages 1, 4000, the middle, the last and far past the
# end, 100 a page), and prints, for each shape, the slowest command Redis
# ran for it and the slowest answer. It fails when a command took 50 ms or
# more (what SLOWLOG with slowlog-log-slower-than 50000 would hold).
#
#   bash docs/slowlog.sh                      # ≈ 2 minutes on 2 cores
#   ORDERS=100000 PRODUCTS=20000 bash docs/slowlog.sh
#
# Needs redis-server and Go. Writes every page's figures to
# bench/out/slowlog-<time>.tsv (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
ORDERS=${ORDERS:-1000000}
PRODUCTS=${PRODUCTS:-100000}
mkdir -p bench/out
table="$PWD/bench/out/slowlog-$(date -u +%Y%m%dT%H%M%SZ).tsv"
status=0
ORDERS_COST_ORDERS=$ORDERS ORDERS_COST_PRODUCTS=$PRODUCTS ORDERS_COST_LOG_US=100 ORDERS_COST_TABLE=$table \
  go test -count=1 -run '^TestNoQueryHoldsRedisFor50ms$' -timeout 60m -v ./store | grep -av '^=== ' || status=$?

echo
echo "Per shape (the worst of its pages): slowest command in ms, what it was, slowest answer in ms, pages refused as too broad"
# The shape's family: the sort or search, whether it has a status and dates.
awk -F'\t' 'NR > 2 {
  s = $1
  if (!(s in worst) || $4 + 0 > worst[s] + 0) { worst[s] = $4; cmd[s] = $5 }
  if (!(s in answer) || $3 + 0 > answer[s] + 0) answer[s] = $3
  if ($6 == "too_broad") refused[s]++
  if (!(s in seen)) { seen[s] = 1; order[++n] = s }
}
END {
  for (i = 1; i <= n; i++) {
    s = order[i]
    printf "%-62s %8.2f  %-44s %8.1f  %s\n", s, worst[s], substr(cmd[s], 1, 44), answer[s], (refused[s] ? refused[s] " refused" : "")
  }
}' "$table"
echo
echo "every page: $table"
exit "$status"
