# bench/lib.sh — helpers shared by bench/run.sh and bench/search.sh (sourced
# from the repository's root).

# note TEXT: print a line and append it to $report.
note() { printf '%s\n' "$*" | tee -a "$report"; }

# free_port: a free loopback port.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

# wait_port PORT SECONDS: wait until something listens on PORT.
wait_port() {
  for _ in $(seq 1 $(($2 * 10))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1"; return 1
}

# wait_log FILE PATTERN SECONDS: wait until FILE has a line matching PATTERN.
wait_log() {
  for _ in $(seq 1 $(($3 * 10))); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "timed out waiting for '$2' in $1:"; tail -5 "$1"; return 1
}
