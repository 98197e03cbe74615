#!/usr/bin/env bash
# The package as a consumer gets it: packs a copy of the tracked files (no dist/, as a fresh clone:
# `prepack` must build it), unpacks the tarball into a temporary project that has neither express nor
# @types/express, and there (1) typechecks a program using the library and the throttle with
# skipLibCheck false, (2) imports the main entry at run time, and (3) with express and its types
# added, typechecks a program using `sluice/express`. Offline: the project's dependencies are links to
# this repo's node_modules (installed by npm ci), never fetched.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 1. A fresh-clone copy of the tracked (and new, not ignored) files, with the repo's node_modules.
mkdir "$tmp/clone"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) | tar -xf - -C "$tmp/clone"
test ! -e "$tmp/clone/dist" || { echo "the copy has a dist/: not a fresh clone" >&2; exit 1; }
ln -s "$repo/node_modules" "$tmp/clone/node_modules"
(cd "$tmp/clone" && npm pack --silent --pack-destination "$tmp" >/dev/null)
tarball=$(ls "$tmp"/sluice-*.tgz)

# 2. The consumer: the unpacked package and links to its dependencies only (no express, no @types/express).
app="$tmp/app"
mkdir -p "$app/node_modules/@types"
tar -xzf "$tarball" -C "$app/node_modules" && mv "$app/node_modules/package" "$app/node_modules/sluice"
test -f "$app/node_modules/sluice/dist/src/index.d.ts" || { echo "the tarball has no dist/src/index.d.ts" >&2; exit 1; }
test -f "$app/node_modules/sluice/dist/ui/app.js" && test -f "$app/node_modules/sluice/dist/ui/app.css" || { echo "the tarball has no dashboard bundle (dist/ui/app.js, app.css)" >&2; exit 1; }
for dep in $(node -e 'console.log(Object.keys(require(process.argv[1]).dependencies ?? {}).join(" "))' "$app/node_modules/sluice/package.json"); do
  mkdir -p "$(dirname "$app/node_modules/$dep")"
  ln -s "$repo/node_modules/$dep" "$app/node_modules/$dep"
done
ln -s "$repo/node_modules/@types/node" "$app/node_modules/@types/node"
for absent in express @types/express; do
  test ! -e "$app/node_modules/$absent" || { echo "$absent must not be in the consumer" >&2; exit 1; }
done
cat > "$app/package.json" <<'JSON'
{ "name": "consumer", "private": true, "type": "module" }
JSON
cat > "$app/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
    "strict": true, "skipLibCheck": false, "noEmit": true
  },
  "files": ["library.ts"]
}
JSON
cat > "$app/library.ts" <<'TS'
// A consumer of the library and the throttle only.
import { createSluice, DeferJob, type Decision, type Sluice, type ThrottledJob, type SubmitResult } from 'sluice';

const sluice: Sluice = createSluice({ redis: 'redis://127.0.0.1:6379', prefix: 'consumer' });
const limiter = sluice.limiter({ algorithm: 'token-bucket', capacity: 20, refillPerSecond: 5 });
export async function decide(key: string): Promise<Decision> {
  return limiter.limit(key, { sensitive: true });
}
const payments = sluice.throttle('payments', { ratePerSecond: 5, capacity: 100 });
export async function pay(tenant: string): Promise<SubmitResult> {
  return payments.submit(tenant, { amount: 1200 });
}
sluice.worker('payments', async (job: ThrottledJob<{ amount: number }>) => {
  if (job.data.amount > 1_000_000) throw new DeferJob(1000);
  return job.data.amount;
});
TS
echo "+ tsc (library and throttle; skipLibCheck false; no express, no @types/express)"
"$repo/node_modules/.bin/tsc" -p "$app"
echo "+ node: the main entry loads without express"
(cd "$app" && node --input-type=module -e "const m = await import('sluice'); if (typeof m.createSluice !== 'function') process.exit(1);")

# 3. With express and its types, sluice/express typechecks too.
ln -s "$repo/node_modules/express" "$app/node_modules/express"
for t in "$repo"/node_modules/@types/*; do
  [ -e "$app/node_modules/@types/$(basename "$t")" ] || ln -s "$t" "$app/node_modules/@types/$(basename "$t")"
done
cat > "$app/middleware.ts" <<'TS'
// A consumer of the express entry.
import express from 'express';
import { createSluice } from 'sluice';
import { decisionMiddleware } from 'sluice/express';

const sluice = createSluice({ redis: 'redis://127.0.0.1:6379' });
const app = express();
app.get('/hello', decisionMiddleware(sluice, { policy: { algorithm: 'fixed-window', limit: 2, windowMs: 60_000 } }), (_req, res) => {
  res.json({ hello: 'world' });
});
TS
sed -i 's/"files": \["library.ts"\]/"files": ["library.ts", "middleware.ts"]/' "$app/tsconfig.json"
echo "+ tsc (with sluice/express, express and @types/express; skipLibCheck false)"
"$repo/node_modules/.bin/tsc" -p "$app"
echo "consumer check passed: $(basename "$tarball")"
