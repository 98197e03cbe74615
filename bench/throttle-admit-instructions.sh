#!/usr/bin/env bash
# Redis instructions per admission: the private redis-server of bench/throttle-admit-profile.ts run under
# valgrind's callgrind, twice (--n N1 and --n N2 submits), and (Ir(N2) - Ir(N1)) / (N2 - N1): the startup,
# the warm-up and the script loading cancel out. A count of user-space instructions does not move with the
# machine's load (rates and µs do, by ±30% on a shared 2-core machine), so a before/after of the same case
# compares what the code asks of Redis; it does not weigh cache misses (100,000 keys pay more of those).
#   bench/throttle-admit-instructions.sh KEYS INFLIGHT [--base DIR | --bull]   (env N1=1000 N2=5000)
# SCRIPT=bench/throttle-admit-breakdown.ts runs that bench instead (one key, one in flight; its --variant as an
# extra argument): the instructions of each part of one admission.
# Prints one JSON line. Needs valgrind; takes ~30-60 s (Redis runs ~50x slower under callgrind).
set -euo pipefail
KEYS=${1:?keys}; INFLIGHT=${2:?inflight}; shift 2
N1=${N1:-1000}; N2=${N2:-5000}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
real=$(command -v redis-server)
mkdir -p "$work/bin"
printf '#!/usr/bin/env bash\nexec valgrind --tool=callgrind --callgrind-out-file=%s/cg.%%p -q %s "$@"\n' "$work" "$real" > "$work/bin/redis-server"
chmod +x "$work/bin/redis-server"
count() {
  local n=$1
  shift
  rm -f "$work"/cg.*
  (cd "$here" && PATH="$work/bin:$PATH" npx tsx "${SCRIPT:-bench/throttle-admit-profile.ts}" --keys "$KEYS" --inflight "$INFLIGHT" --n "$n" "$@" > /dev/null 2>&1)
  awk '/^totals:/ { print $2 }' "$work"/cg.*
}
a=$(count "$N1" "$@")
b=$(count "$N2" "$@")
echo "{\"keys\": $KEYS, \"inflight\": $INFLIGHT, \"args\": \"$*\", \"n\": [$N1, $N2], \"redisInstructionsPerOp\": $(( (b - a) / (N2 - N1) ))}"
