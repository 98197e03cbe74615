// e2e: hot reload of the rules file by a running `sluice serve` — a good change applies without a
// restart (decision limits and queue settings), a bad file is refused with a logged error naming the
// file and line while the last good rules stay in force and /readyz stays ready.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { pollUntil, postJson, sampleValue, scrape, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

// Line 6 holds the decision limit; the queue (no worker runs it) only fills.
const rules = (limit: number | string, capacity: number) => `domains:
  - domain: api
    descriptors:
      - key: user
        policy: { algorithm: sliding-log, window: 1h,
                  limit: ${limit} }
auth: none
queues:
  - name: jobs
    rate_per_second: 0.5
    capacity: ${capacity}
    handler: { type: module, path: ./noop.mjs }
`;
const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let file: string;
let users = 0;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('reload');
  dir.write('noop.mjs', 'export default async () => null;\n');
  file = dir.write('rules.yaml', rules(2, 1));
  serve = await startSluice('serve', { config: file, redisUrl: redis.url });
});

afterAll(async () => {
  await stopAll(serve);
  await redis?.dispose();
  dir?.dispose();
});

/** The limit a fresh user is decided with now. */
async function limitNow(): Promise<number> {
  const res = await postJson(`${serve.url}/v1/decisions`, { domain: 'api', descriptors: [{ key: 'user', value: `u${users++}` }] });
  const body = (await res.json()) as { statuses: { limit: number }[] };
  return body.statuses[0]!.limit;
}

async function submitStatus(key: string): Promise<number> {
  const res = await postJson(`${serve.url}/v1/queues/jobs/jobs`, { key, payload: 1 });
  await res.arrayBuffer();
  return res.status;
}

async function readyz(): Promise<{ status: number; body: { status: string; checks: { redis: string; rules: string } } }> {
  const res = await fetch(`${serve.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: { redis: string; rules: string } } };
}

describe('rules hot reload', () => {
  it('a rewritten file with a different limit applies without a restart', async () => {
    expect(await limitNow()).toBe(2);
    expect(await submitStatus('k')).toBe(202);
    expect(await submitStatus('k')).toBe(429); // capacity 1
    const text = rules(5, 3);
    dir.replace('rules.yaml', text);
    await pollUntil(limitNow, (limit) => limit === 5, 10_000, 100, 'the new limit');
    const reloaded = await serve.waitForLog((l) => l.event === 'rules_reloaded', 5000, 'the rules_reloaded line');
    expect(reloaded.rulesVersion).toBe(version(text));
    // The queue's new capacity applies to the lane that was full.
    expect(await submitStatus('k')).toBe(202);
    expect(await submitStatus('k')).toBe(202);
    expect(await submitStatus('k')).toBe(429);
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { redis: 'ok', rules: version(text) } } });
    expect(sampleValue(await scrape(serve.url), 'sluice_rules_reloads_total', { result: 'applied' })).toBe(1);
  });

  it('a broken file is refused with an error naming the file and line; the last good rules stay; /readyz stays ready', async () => {
    const good = rules(5, 3);
    dir.replace('rules.yaml', rules(0, 3));
    const refused = await serve.waitForLog((l) => l.level === 50 && l.file === file, 10_000, 'the refusal of the bad file');
    expect(refused.msg).toBe('rules file refused; keeping the last good rules');
    expect(refused.version).toBe(version(good));
    const issues = refused.issues as { path: string; line: number; column: number; message: string }[];
    expect(issues).toHaveLength(1);
    expect(issues[0]).toEqual({ path: 'domains.0.descriptors.0.policy.limit', line: 6, column: 26, message: 'Too small: expected number to be >0' });
    expect(String((refused.err as { message: string }).message)).toContain(`${file}:6:26 domains.0.descriptors.0.policy.limit: Too small`);

    // Still the old rules, however often we ask.
    for (let i = 0; i < 5; i++) expect(await limitNow()).toBe(5);
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: { redis: 'ok', rules: version(good) } } });
    expect(sampleValue(await scrape(serve.url), 'sluice_rules_reloads_total', { result: 'refused' })).toBe(1);
  });

  it('a file that is not even YAML is refused with its line too; a good file afterwards applies again', async () => {
    const broken = `${rules(7, 3)}  - name: [unclosed\n`;
    dir.replace('rules.yaml', broken);
    const refused = await serve.waitForLog((l) => l.level === 50 && l.refused === version(broken), 10_000, 'the refusal of the YAML syntax error');
    // The unclosed flow sequence on line 13 is noticed where the file ends, line 14.
    expect(refused.issues).toEqual([expect.objectContaining({ path: '(syntax)', line: 14, column: 1 })]);
    expect(await limitNow()).toBe(5);

    const fixed = rules(7, 3);
    dir.replace('rules.yaml', fixed);
    await pollUntil(limitNow, (limit) => limit === 7, 10_000, 100, 'the fixed file to apply');
    expect((await readyz()).body.checks.rules).toBe(version(fixed));
    // The process never restarted: one listening line, same pid throughout.
    expect(serve.logs.filter((l) => l.event === 'listening')).toHaveLength(1);
    expect(new Set(serve.logs.map((l) => l.pid)).size).toBe(1);
  });
});
