// e2e: POST /v1/decisions of `sluice serve` — one status per descriptor, all-or-nothing across rules
// (a refused call charges no rule), unknown domains and bad bodies, and shadow rules that count
// (see /metrics) but never refuse.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { postJson, sampleValue, scrape, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

// Algorithms without window boundaries, so a test straddling a minute never sees a counter reset:
// a token bucket that refills one token per 1,000 s, and an exact sliding log over an hour.
const RULES = `auth: none
domains:
  - domain: api
    descriptors:
      - key: user
        policy: { algorithm: token-bucket, capacity: 3, refill_per_second: 0.001 }
      - key: region
        value: eu
        policy: { algorithm: sliding-log, limit: 2, window: 1h }
      - key: partner
        unlimited: true
      - key: route
        value: search
        descriptors:
          - key: user
            name: search-per-user
            policy: { algorithm: sliding-log, limit: 5, window: 1h }
      - key: global
        name: global-trial
        policy: { algorithm: sliding-log, limit: 1, window: 1h }
        shadow_mode: true
  - domain: billing
    descriptors:
      - key: user
        policy: { algorithm: sliding-log, limit: 1, window: 1h }
`;

interface Status {
  descriptor: { key: string; value: string }[];
  code: 'OK' | 'OVER_LIMIT';
  rule: string | null;
  allowed?: boolean;
  limit?: number;
  remaining?: number;
  retry_after_ms?: number;
  reset_at?: string;
  shadow?: boolean;
  unlimited?: boolean;
  failure?: string;
}
interface Answer {
  allowed: boolean;
  retry_after?: number;
  statuses: Status[];
}

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('decisions');
  serve = await startSluice('serve', { config: dir.write('rules.yaml', RULES), redisUrl: redis.url });
});

afterAll(async () => {
  await stopAll(serve);
  await redis?.dispose();
  dir?.dispose();
});

async function decide(body: unknown): Promise<{ status: number; answer: Answer }> {
  const res = await postJson(`${serve.url}/v1/decisions`, body);
  return { status: res.status, answer: (await res.json()) as Answer };
}

const entry = (key: string, value: string) => ({ key, value });

describe('POST /v1/decisions', () => {
  it('answers one status per descriptor, in order: decided, unmatched, unlimited, nested', async () => {
    const before = Date.now();
    const { status, answer } = await decide({
      domain: 'api',
      descriptors: [entry('user', 'u1'), entry('colour', 'red'), entry('partner', 'acme'), { entries: [entry('route', 'search'), entry('user', 'u1')] }],
    });
    const after = Date.now();
    expect(status).toBe(200);
    expect(answer.allowed).toBe(true);
    expect(answer.retry_after).toBeUndefined();
    expect(answer.statuses).toHaveLength(4);
    const [user, unmatched, partner, search] = answer.statuses;
    expect(user).toEqual({ descriptor: [entry('user', 'u1')], code: 'OK', rule: 'api.user', allowed: true, limit: 3, remaining: 2, retry_after_ms: 0, reset_at: user!.reset_at });
    // One token missing, refilled at one per 1,000 s: full again 1,000 s after the call.
    const resetAt = Date.parse(user!.reset_at!);
    expect(new Date(resetAt).toISOString()).toBe(user!.reset_at);
    expect(resetAt).toBeGreaterThanOrEqual(before + 1_000_000 - 1000);
    expect(resetAt).toBeLessThanOrEqual(after + 1_000_000 + 1000);
    expect(unmatched).toEqual({ descriptor: [entry('colour', 'red')], code: 'OK', rule: null });
    expect(partner).toEqual({ descriptor: [entry('partner', 'acme')], code: 'OK', rule: 'api.partner', unlimited: true });
    expect(search).toMatchObject({ descriptor: [entry('route', 'search'), entry('user', 'u1')], code: 'OK', rule: 'search-per-user', allowed: true, limit: 5, remaining: 4 });
  });

  it('every distinct descriptor value has its own counter; so does every domain', async () => {
    const a = await decide({ domain: 'api', descriptors: [entry('user', 'counter-a')] });
    const b = await decide({ domain: 'api', descriptors: [entry('user', 'counter-b')] });
    const a2 = await decide({ domain: 'api', descriptors: [entry('user', 'counter-a')] });
    expect([a, b, a2].map((d) => d.answer.statuses[0]!.remaining)).toEqual([2, 2, 1]);
    const billing = await decide({ domain: 'billing', descriptors: [entry('user', 'counter-a')] });
    expect(billing.answer.statuses[0]).toMatchObject({ rule: 'billing.user', allowed: true, limit: 1, remaining: 0 });
  });

  it('cost charges that many units', async () => {
    const { answer } = await decide({ domain: 'api', descriptors: [entry('user', 'costly')], cost: 2 });
    expect(answer.statuses[0]).toMatchObject({ allowed: true, limit: 3, remaining: 1 });
  });

  it('is all-or-nothing: when one rule refuses, the other is not charged (a follow-up call shows it)', async () => {
    const both = { domain: 'api', descriptors: [entry('user', 'u2'), entry('region', 'eu')] };
    // region=eu allows 2 an hour, user u2 holds 3 tokens.
    for (const remaining of [[2, 1], [1, 0]]) {
      const { answer } = await decide(both);
      expect(answer.allowed).toBe(true);
      expect(answer.statuses.map((s) => [s.code, s.remaining])).toEqual([
        ['OK', remaining[0]],
        ['OK', remaining[1]],
      ]);
    }
    const refused = await decide(both);
    expect(refused.status).toBe(200);
    expect(refused.answer.allowed).toBe(false);
    const [user, region] = refused.answer.statuses;
    // The user rule would have allowed (one token left) but was only looked at.
    expect(user).toMatchObject({ code: 'OK', rule: 'api.user', allowed: true });
    expect(region).toMatchObject({ code: 'OVER_LIMIT', rule: 'api.region_eu', allowed: false, limit: 2, remaining: 0 });
    // The oldest of the two region calls leaves the hour window in just under 3,600 s.
    expect(region!.retry_after_ms).toBeGreaterThan(3_600_000 - 10_000);
    expect(region!.retry_after_ms).toBeLessThanOrEqual(3_600_000);
    expect(refused.answer.retry_after).toBe(Math.max(1, Math.ceil(region!.retry_after_ms! / 1000)));

    // The follow-up: u2 still has its last token (3 - 2 charges), so the refused call took none.
    const followUp = await decide({ domain: 'api', descriptors: [entry('user', 'u2')] });
    expect(followUp.answer).toEqual({ allowed: true, statuses: [expect.objectContaining({ code: 'OK', allowed: true, remaining: 0 })] });
    const empty = await decide({ domain: 'api', descriptors: [entry('user', 'u2')] });
    expect(empty.answer.allowed).toBe(false);
    expect(empty.answer.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', remaining: 0 });
  });

  it('an unknown domain is 404', async () => {
    const { status, answer } = await decide({ domain: 'nope', descriptors: [entry('user', 'u1')] });
    expect(status).toBe(404);
    expect(answer).toEqual({ error: 'not_found', code: 'SLUICE_ERR_NOT_FOUND', message: "no domain 'nope'" });
  });

  it('a bad body is 400 naming each field; a wrong content type is 415', async () => {
    const res = await postJson(`${serve.url}/v1/decisions`, { descriptors: [], cost: -1, extra: true });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; issues: { path: string }[] };
    expect(body.error).toBe('invalid_request');
    expect(body.issues.map((i) => i.path).sort()).toEqual(['cost', 'descriptors', 'domain', 'extra']);
    const nested = await postJson(`${serve.url}/v1/decisions`, { domain: 'api', descriptors: [{ key: 'user' }] });
    expect(nested.status).toBe(400);
    // A descriptor is one of two shapes (a union): the issue names the missing field of the closest shape.
    expect(((await nested.json()) as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual(['descriptors.0.value']);
    const text = await fetch(`${serve.url}/v1/decisions`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(text.status).toBe(415);
  });
});

describe('shadow mode', () => {
  it('decides and counts but never refuses: sluice_decisions_total{outcome="shadow-refused"} grows', async () => {
    const labels = (outcome: string) => ({ rule: 'global-trial', outcome });
    const before = await scrape(serve.url);
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push((await decide({ domain: 'api', descriptors: [entry('global', 'all')] })).answer);
    // Limit 1 an hour: the first is within it, the next three would be refused — and are not.
    expect(answers.map((a) => a.allowed)).toEqual([true, true, true, true]);
    expect(answers.map((a) => a.statuses[0]!.code)).toEqual(['OK', 'OK', 'OK', 'OK']);
    expect(answers.map((a) => a.statuses[0]!.shadow)).toEqual([true, true, true, true]);
    expect(answers.map((a) => a.statuses[0]!.allowed)).toEqual([true, false, false, false]);
    expect(answers.every((a) => a.retry_after === undefined)).toBe(true);
    const after = await scrape(serve.url);
    const delta = (outcome: string) => sampleValue(after, 'sluice_decisions_total', labels(outcome)) - sampleValue(before, 'sluice_decisions_total', labels(outcome));
    expect(delta('allowed')).toBe(1);
    expect(delta('shadow-refused')).toBe(3);
    expect(delta('refused')).toBe(0);
  });

  it('a shadow rule next to an enforcing one: the shadow refusal neither refuses nor blocks the charge', async () => {
    const { answer } = await decide({ domain: 'api', descriptors: [entry('user', 'with-shadow'), entry('global', 'all')] });
    expect(answer.allowed).toBe(true);
    expect(answer.statuses.map((s) => [s.rule, s.code, s.allowed])).toEqual([
      ['api.user', 'OK', true],
      ['global-trial', 'OK', false],
    ]);
    const again = await decide({ domain: 'api', descriptors: [entry('user', 'with-shadow')] });
    expect(again.answer.statuses[0]!.remaining).toBe(1);
  });

  it('refused decisions are counted per rule; the log names the rule and a hashed identity, never the value', async () => {
    const metrics = await scrape(serve.url);
    expect(sampleValue(metrics, 'sluice_decisions_total', { rule: 'api.region_eu', outcome: 'refused' })).toBe(1);
    const refusal = await serve.waitForLog((l) => l.event === 'refused' && l.rule === 'api.region_eu', 5000, 'the refusal log line');
    expect(refusal).toMatchObject({ rule: 'api.region_eu', reason: 'limit_exceeded' });
    expect(refusal.identity).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(JSON.stringify(serve.logs)).not.toContain('region=eu');
  });
});
