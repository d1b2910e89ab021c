#!/usr/bin/env bash
# The walk of one request: which Go files of the program one save of the
# order edit form runs (PUT /orders/<id> from htmx, as the browser sends
# it). It builds the root package's tests with coverage of the program's
# packages (main, routes, store and store/redisstore; not the test-only
# ones, nor store/embedded, the in-process Redis server, which stands in for
# redis-server as miniredis does and does not run against a real Redis) and runs TestWalkOfAnEditFormSave in two ways, each three times: the
# program as `go run .` starts it, on the embedded store (-data ""), one
# order, its edit form fetched and saved once to warm up and fetched
# again, for 1.5 s; the "save" runs then save the form once more. A
# statement ran in that save when its counter is higher in every "save"
# run than in any "base" run: the program's timers (the log's flush, the
# embedded store's TTL tick) fire a little more or less often from one run
# to the next, and three runs of each keep them out. It prints each file with the number of
# its statements that ran, then the files per folder and in all.
#
#   bash docs/walk.sh            # ≈ 1 minute on 2 cores, the build included
#
# Needs only Go. Its files go to a temporary folder, removed at the end
# (WALK_KEEP=1 keeps it, and prints its name).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
if [ -n "${WALK_KEEP:-}" ]; then echo "$dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
pkgs=$(go list ./... | grep -v -e /testutil -e /browser -e /e2e -e /bench -e /store/embedded | paste -sd, -)
go test -c -o "$dir/walk.test" -cover -covermode=atomic -coverpkg="$pkgs" .
for run in base1 save1 base2 save2 base3 save3; do
  mkdir "$dir/$run"
  ORDERS_WALK=${run%?} "$dir/walk.test" -test.count=1 -test.run '^TestWalkOfAnEditFormSave$' \
    -test.gocoverdir="$dir/$run" >"$dir/$run.out" 2>&1 || { cat "$dir/$run.out"; exit 1; }
  go tool covdata textfmt -i="$dir/$run" -o="$dir/$run.txt"
done
# A profile line: orders/<path>:<start>,<end> <statements> <count>.
awk 'FNR == 1 { save = FILENAME ~ /save/; next }
  { n[$1] = $2 }
  save { c[FILENAME, $1] += $3; s[FILENAME] = 1 }
  !save { c[FILENAME, $1] += $3; b[FILENAME] = 1 }
  END {
    for (k in n) {
      hi = -1; lo = -1
      for (f in b) if (c[f, k] > hi) hi = c[f, k]
      for (f in s) if (lo < 0 || c[f, k] < lo) lo = c[f, k]
      if (lo > hi) {
        split(k, a, ":"); p = a[1]; sub(/^orders\//, "", p)
        ran[p] += n[k]
      }
    }
    for (p in ran) printf "%5d  %s\n", ran[p], p
  }' "$dir"/base?.txt "$dir"/save?.txt | sort -k2 >"$dir/walk.txt"
echo "statements run, file"
cat "$dir/walk.txt"
echo
awk '{ d = $2; if (sub(/\/[^\/]*$/, "", d) == 0) d = "."; c[d]++; t++ }
  END { for (d in c) printf "%3d files in %s/\n", c[d], d; printf "%3d files in all\n", t }' "$dir/walk.txt" | sort -k4
