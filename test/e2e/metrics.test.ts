// e2e: /metrics of `sluice dev` (server and workers in one process, so the job metrics are on the same
// registry) after submits, completed jobs, allowed, refused and shadow decisions: the instruments the
// operations page lists have samples with exact counts, and no label holds a key, an API key or an IP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { postJson, scrape, sampleValue, startSluice, stopAll, tempDir, waitForJob, type MetricSample, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const API_KEY = 'sk_live_e2eSecretKey0123456789';
const TENANT = 'tenant-acme@example.com';
const USER = 'user-4711';

const RULES = `domains:
  - domain: api
    descriptors:
      - key: user
        policy: { algorithm: sliding-log, limit: 2, window: 1h }
      - key: global
        policy: { algorithm: sliding-log, limit: 1, window: 1h }
        shadow_mode: true
queues:
  - name: orders
    rate_per_second: 50
    capacity: 3
    key: api_key
    handler: { type: module, path: ./echo.mjs }
  - name: tenants
    rate_per_second: 50
    capacity: 10
    handler: { type: module, path: ./echo.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let dev: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('metrics');
  dir.write('echo.mjs', 'export default async (job) => ({ echoed: job.data });\n');
  dev = await startSluice('dev', { config: dir.write('rules.yaml', RULES), redisUrl: redis.url });
});

afterAll(async () => {
  await stopAll(dev);
  await redis?.dispose();
  dir?.dispose();
});

describe('/metrics after traffic', () => {
  let samples: MetricSample[];

  beforeAll(async () => {
    // 3 jobs keyed by API key (one lane of capacity 3, drained at 50/s), 2 keyed by tenant.
    const locations: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${dev.url}/v1/queues/orders/jobs`, { payload: { i } }, { 'x-api-key': API_KEY });
      expect(res.status).toBe(202);
      locations.push(res.headers.get('location')!);
    }
    for (let i = 0; i < 2; i++) {
      const res = await postJson(`${dev.url}/v1/queues/tenants/jobs`, { key: TENANT, payload: { i } }, { 'x-forwarded-for': '203.0.113.9' });
      expect(res.status).toBe(202);
      locations.push(res.headers.get('location')!);
    }
    for (const l of locations) expect((await waitForJob(dev.url, l)).state).toBe('completed');
    // user: 2 allowed, 1 refused; global (shadow): 1 allowed, 2 shadow-refused.
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${dev.url}/v1/decisions`, { domain: 'api', descriptors: [{ key: 'user', value: USER }, { key: 'global', value: 'all' }] });
      expect(res.status).toBe(200);
    }
    samples = await scrape(dev.url);
  });

  it('counts decisions by rule and outcome, submits as queue:<name>', () => {
    const decisions = (rule: string, outcome: string) => sampleValue(samples, 'sluice_decisions_total', { rule, outcome });
    expect(decisions('api.user', 'allowed')).toBe(2);
    expect(decisions('api.user', 'refused')).toBe(1);
    expect(decisions('api.global', 'allowed')).toBe(1);
    expect(decisions('api.global', 'shadow-refused')).toBe(2);
    expect(decisions('queue:orders', 'deferred')).toBe(3);
    expect(decisions('queue:tenants', 'deferred')).toBe(2);
  });

  it('counts jobs by queue and outcome, and observes each job\'s queue wait once', () => {
    expect(sampleValue(samples, 'sluice_jobs_total', { queue: 'orders', outcome: 'completed' })).toBe(3);
    expect(sampleValue(samples, 'sluice_jobs_total', { queue: 'tenants', outcome: 'completed' })).toBe(2);
    expect(sampleValue(samples, 'sluice_queue_wait_seconds_count', { queue: 'orders' })).toBe(3);
    expect(sampleValue(samples, 'sluice_queue_wait_seconds_count', { queue: 'tenants' })).toBe(2);
    // One lane of rate 50/s: no job waits anywhere near a second.
    expect(sampleValue(samples, 'sluice_queue_wait_seconds_bucket', { queue: 'orders', le: '1' })).toBe(3);
    expect(sampleValue(samples, 'sluice_lane_depth_count', { queue: 'orders' })).toBe(3);
    // 3 calls x 2 rules, but the third call's shadow rule was refused before (until the hour ends): the
    // deny cache answered it without Redis, so it is counted as a hit and not timed.
    expect(sampleValue(samples, 'sluice_decision_duration_seconds_count', { algorithm: 'sliding-log' })).toBe(5);
    expect(sampleValue(samples, 'sluice_deny_cache_hits_total', { algorithm: 'sliding-log' })).toBe(1);
    // Every worker said its jobs started: no unit was taken for started (read from Redis at the scrape).
    const silent = samples.filter((x) => x.name === 'sluice_throttle_silent_units');
    expect(silent.map((x) => [x.labels.queue, x.value]).sort()).toEqual([
      ['orders', 0],
      ['tenants', 0],
    ]);
  });

  it('no label holds a key, an API key (or its hash), a tenant, a user or an IP', () => {
    const sluiceSamples = samples.filter((s) => s.name.startsWith('sluice_') && !s.name.startsWith('sluice_process_'));
    const labelNames = new Set(sluiceSamples.flatMap((s) => Object.keys(s.labels)));
    // Only these label names exist (`reason` shows once a job was deferred: a retry goes back to its lane).
    for (const name of labelNames) expect(['algorithm', 'le', 'outcome', 'queue', 'reason', 'rule']).toContain(name);
    expect(labelNames.has('queue') && labelNames.has('rule')).toBe(true);
    const values = new Set(samples.flatMap((s) => Object.values(s.labels)));
    for (const v of values) {
      for (const secret of [API_KEY, TENANT, USER, '203.0.113.9', '127.0.0.1']) expect(v).not.toContain(secret);
      expect(v).not.toMatch(/^#?[A-Za-z0-9_-]{22}$/); // a key hash
    }
    // Rule and queue labels are configuration names only.
    expect(new Set(sluiceSamples.flatMap((s) => (s.labels.rule ? [s.labels.rule] : [])))).toEqual(new Set(['api.user', 'api.global', 'queue:orders', 'queue:tenants']));
  });

  it('the raw API key appears in no log line either', () => {
    expect(JSON.stringify(dev.logs)).not.toContain(API_KEY);
    expect(dev.stderr()).not.toContain(API_KEY);
  });
});
