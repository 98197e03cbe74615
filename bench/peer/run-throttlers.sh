#!/usr/bin/env bash
# The throttler scenarios of peer-bench for BullMQ, Bottleneck and sluice (adapter `project`), back to
# back in one sitting, with run-all.sh's parameters, on a PRIVATE redis-server on $PORT that this script
# starts and stops (by its pid). Run it from a writable peer-bench copy with project-queue.mjs registered
# as `project` (see bench/peer/README.md, "Throttler"):
#   cd /tmp/peer-bench-q && PORT=6391 bash /work/main/bench/peer/run-throttlers.sh   # ~5 min
# Writes results/<date>-throttlers.json (node lib/report.mjs <file> renders it).
set -uo pipefail
PORT=${PORT:-6391}
PIDFILE=/tmp/bench-redis-throttlers-$PORT.pid
R=${R:-3}; OUTD=10; JOBS=3000; BNJOBS=2000
[ -f scenarios/throttle-outflow.mjs ] || { echo "run this from a peer-bench copy"; exit 1; }
node -e "import('./adapters/index.mjs').then(m=>m.loadAdapter('project','throttler'))" || { echo "register project-queue.mjs as 'project' first"; exit 1; }
if redis-cli -p "$PORT" ping >/dev/null 2>&1; then echo "something already answers on port $PORT; refusing to use or stop it"; exit 1; fi
START=$(date -u +%Y-%m-%dT%H:%M:%SZ); T0=$(date +%s); LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --pidfile "$PIDFILE" || exit 1
stop_redis() {
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE")
    if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "redis-server" ]; then kill "$pid"; fi
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PIDFILE"
  fi
}
trap stop_redis EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done

RAW=$(mktemp -d /tmp/bench-throttlers.XXXXXX)
P="--port $PORT"
run() { # run <name> <timeout-s> <script> [args...]
  local name=$1 to=$2; shift 2
  local t=$(date +%s)
  timeout --kill-after=5 "$to" node "$@" $P >"$RAW/$name.json" 2>"$RAW/$name.err"
  echo "[$(date +%T)] $name rc=$? $(( $(date +%s) - t ))s"
}
for ad in bullmq bottleneck project; do
  timeout 40 node scenarios/check-adapter.mjs --adapter $ad $P >"$RAW/0-check-$ad.json" 2>&1 || echo "check-adapter $ad FAILED"
done
run 3-bottleneck-throughput 90 scenarios/throttle-throughput.mjs --adapter bottleneck --jobs $BNJOBS --concurrency 1,50,0 --reps $R
run 3-bottleneck-mintime-2proc 90 scenarios/throttle-outflow.mjs --adapter bottleneck --procs 2 --min-time 10 --duration $OUTD --reps $R
run 3-bottleneck-reservoir-2proc 90 scenarios/throttle-outflow.mjs --adapter bottleneck --procs 2 --rate-max 100 --rate-duration 1000 --duration $OUTD --reps $R
run 3-bottleneck-latency 60 scenarios/throttle-latency.mjs --adapter bottleneck --rates 100,1000 --duration 2 --reps $R
run 4-bullmq-throughput 90 scenarios/throttle-throughput.mjs --adapter bullmq --jobs $JOBS --admit-inflight 1,64 --bulk 100 --concurrency 1,50 --reps $R
run 4-bullmq-limiter-2proc 90 scenarios/throttle-outflow.mjs --adapter bullmq --procs 2 --rate-max 100 --rate-duration 1000 --duration $OUTD --reps $R
run 4-bullmq-latency 60 scenarios/throttle-latency.mjs --adapter bullmq --rates 100,1000 --duration 2 --reps $R
run 8-throughput-project 90 scenarios/throttle-throughput.mjs --adapter project --jobs $JOBS --admit-inflight 1,64 --bulk 100 --concurrency 1,50 --reps $R
run 8-outflow-project 90 scenarios/throttle-outflow.mjs --adapter project --procs 2 --rate-max 100 --rate-duration 1000 --duration $OUTD --reps $R
run 8-outflow-project-mintime 90 scenarios/throttle-outflow.mjs --adapter project --procs 2 --min-time 10 --duration $OUTD --reps $R
run 8-latency-project 60 scenarios/throttle-latency.mjs --adapter project --rates 100,1000 --duration 2 --reps $R

mkdir -p results
OUT=results/$(date -u +%F-%H%M%S)-throttlers.json
node lib/collect.mjs "$RAW" "$START" "$LOAD0" >"$OUT"
mkdir -p results-raw && cp -r "$RAW" results-raw/ 2>/dev/null || true
rm -rf "$RAW"
echo "wrote $OUT in $(( $(date +%s) - T0 ))s"
