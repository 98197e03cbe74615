// Spend quotas over HTTP (issue 11, item 5): a queue of the rules file with a refusing daily key quota
// answers 429 `quota_exhausted` with Retry-After = the seconds until the window resets (the ceiling);
// a queued job's status and the admin lane detail show the quota's use and reset; the refusal is counted
// in sluice_quota_refusals_total. Real Redis; the app in process.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { quotaWindows } from '../../../src/throttle/quota.js';
import { useRulesApp } from '../../helpers/rules-app.js';

const TOKEN = 'quota-admin-token-0123456789';
let attempt = 0;
const ctx = useRulesApp(
  `auth: none
queues:
  - name: llm
    rate_per_second: 0.01
    capacity: 10
    key: body
    quotas:
      - { scope: key, period: day, limit: 2, time_zone: Europe/Berlin }
    handler: { type: module, path: ./none.mjs }
`,
  TOKEN,
);

describe('spend quotas over HTTP', () => {
  it('429 quota_exhausted with Retry-After until the reset; status, lane detail and metrics show it', async () => {
    // A key of its own per attempt (a retried attempt finds the last one's quota used).
    const key = `tenant-q${attempt++}`;
    const submit = () => request(ctx.app).post('/v1/queues/llm/jobs').send({ key, payload: { n: 1 } });
    const first = await submit();
    expect(first.status).toBe(202);
    expect((await submit()).status).toBe(202);
    const before = Date.now();
    const refused = await submit();
    const after = Date.now();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'rate_limit_exceeded', reason: 'quota_exhausted' });
    expect(refused.body.message).toMatch(/daily key's quota of queue 'llm' \(2 calls\) is used up/);
    // The header is the ceiling of the wait until midnight in Berlin (Redis time ~ this clock).
    const reset = quotaWindows({ period: 'day', timeZone: 'Europe/Berlin' }, before).endMs;
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(Math.ceil((reset - after) / 1000) - 1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((reset - before) / 1000) + 1);
    expect(refused.body.retry_after).toBe(retryAfter);

    const status = await request(ctx.app).get(`/v1/queues/llm/jobs/${first.body.id as string}`);
    expect(status.status).toBe(200);
    expect(status.body.state).toBe('queued');
    expect(status.body.quotas).toEqual([{ scope: 'key', period: 'day', unit: 'calls', limit: 2, used: 0, resetsAt: new Date(reset).toISOString(), timeZone: 'Europe/Berlin' }]);

    const lane = await request(ctx.app).get(`/v1/admin/queues/llm/lanes/${key}`).set({ authorization: `Bearer ${TOKEN}` });
    expect(lane.status).toBe(200);
    expect(lane.body.quotas).toEqual(status.body.quotas);

    const text = await ctx.metrics.registry.metrics();
    expect(text).toMatch(/sluice_quota_refusals_total\{queue="llm",scope="key",period="day"\} [1-9]/);
  });
});
