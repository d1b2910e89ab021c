#!/usr/bin/env bash
# Lighthouse on the list, an order and the new-order form, mobile and
# desktop: starts the app with -seed on a free loopback port, runs each
# audit in headless Chromium, prints the four scores of each and what kept
# any category below 100, and exits non-zero when a score is under
# LIGHTHOUSE_MIN (default 95). docs/performance.md records the figures.
#
#   bash docs/lighthouse.sh            # needs node/npm and chromium
#   LIGHTHOUSE_RUNS=3 bash docs/lighthouse.sh   # the median of 3 runs each
#   LIGHTHOUSE_KEEP=1 bash docs/lighthouse.sh   # keep the JSON reports
#
# Lighthouse is installed with npm into LIGHTHOUSE_DIR (default
# ~/.cache/orders-lighthouse, outside the repository) on first use.
# Throttling is Lighthouse's own simulation; nothing leaves loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

min=${LIGHTHOUSE_MIN:-95}
lhdir=${LIGHTHOUSE_DIR:-$HOME/.cache/orders-lighthouse}
# 12.x is the last line that runs on Node 20 (13 needs Node 22).
lhversion=${LIGHTHOUSE_VERSION:-12.8.2}
lh=$lhdir/node_modules/.bin/lighthouse

command -v node >/dev/null || { echo "lighthouse.sh: node is not installed (apt-get install nodejs npm)"; exit 2; }
chrome=${CHROME_PATH:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chrome" ] || { echo "lighthouse.sh: chromium is not installed (apt-get install chromium)"; exit 2; }
export CHROME_PATH=$chrome
if [ ! -x "$lh" ] || [ "$("$lh" --version 2>/dev/null)" != "$lhversion" ]; then
  echo "installing lighthouse@$lhversion into $lhdir"
  mkdir -p "$lhdir"
  npm install --prefix "$lhdir" --no-audit --no-fund --loglevel=error "lighthouse@$lhversion" >/dev/null
fi

work=$(mktemp -d)
app_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null && wait "$app_pid" 2>/dev/null
  if [ -n "${LIGHTHOUSE_KEEP:-}" ]; then echo "reports kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

port=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 25000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
done
[ -n "$port" ] || { echo "lighthouse.sh: no free port"; exit 1; }

go build -o "$work/orders" .
"$work/orders" -addr "127.0.0.1:$port" -data "" -seed 200 >"$work/app.log" 2>&1 &
app_pid=$!
base=http://127.0.0.1:$port
for _ in $(seq 1 100); do
  curl -fs "$base/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fs "$base/healthz" >/dev/null || { echo "the app did not start:"; cat "$work/app.log"; exit 1; }

pages=("list /orders" "order /orders/1" "new /orders/new")
runs=${LIGHTHOUSE_RUNS:-1}
printf '%-7s %-8s %11s %13s %14s %4s  %s\n' page form performance accessibility best-practices seo seconds
low=0
for entry in "${pages[@]}"; do
  name=${entry%% *} path=${entry#* }
  for form in mobile desktop; do
    preset=()
    [ "$form" = desktop ] && preset=(--preset=desktop)
    start=$SECONDS
    reports=()
    for run in $(seq 1 "$runs"); do
      out=$work/$name-$form-$run.json
      "$lh" "$base$path" "${preset[@]}" --quiet --output=json --output-path="$out" \
        --only-categories=performance,accessibility,best-practices,seo \
        --chrome-flags="--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage" >/dev/null 2>"$work/$name-$form.log" || {
        echo "lighthouse failed on $path ($form):"; cat "$work/$name-$form.log"; exit 1; }
      reports+=("$out")
    done
    # With several runs: each category's median, and the details of the
    # run whose performance score is the median (Lighthouse's advice:
    # performance varies from run to run, the others hardly).
    line=$(node -e '
      const rs = process.argv.slice(1).map(f => require(f));
      const cats = ["performance", "accessibility", "best-practices", "seo"];
      const med = xs => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
      const scores = cats.map(k => med(rs.map(r => Math.round(r.categories[k].score * 100))));
      const perf = rs.map(r => r.categories.performance.score);
      const pick = perf.indexOf(med(perf));
      console.log(scores.join(" ") + " " + process.argv[1 + pick]);
    ' "${reports[@]}")
    read -r perf a11y bp seo report <<<"$line"
    printf '%-7s %-8s %11s %13s %14s %4s  %s\n' "$name" "$form" "$perf" "$a11y" "$bp" "$seo" $((SECONDS - start))
    for s in $perf $a11y $bp $seo; do [ "$s" -lt "$min" ] && low=1; done
    # What kept a category from 100: audits that count and did not pass,
    # and performance opportunities with savings (weight 0 in Lighthouse 12).
    node -e '
      const r = require(process.argv[1]);
      for (const [id, cat] of Object.entries(r.categories)) {
        for (const ref of cat.auditRefs) {
          const a = r.audits[ref.id];
          if ((ref.weight > 0 || a.scoreDisplayMode === "metricSavings") && a.score !== null && a.score < 1)
            console.log(`          ${id}: ${a.id} (${Math.round(a.score * 100)}) ${a.title}${a.displayValue ? " — " + a.displayValue : ""}`);
        }
      }
      const m = r.audits;
      console.log(`          FCP ${m["first-contentful-paint"].displayValue}, LCP ${m["largest-contentful-paint"].displayValue}, TBT ${m["total-blocking-time"].displayValue}, CLS ${m["cumulative-layout-shift"].displayValue}, transferred ${Math.round(m["total-byte-weight"].numericValue / 1024)} KiB, machine benchmarkIndex ${Math.round(r.environment.benchmarkIndex)}`);
    ' "$report"
  done
done
if [ "$low" = 1 ]; then
  echo "a score is below $min"
  exit 1
fi
echo "every score is at least $min"
