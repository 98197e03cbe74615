// GET /v1/openapi.json: an OpenAPI 3.1 document generated from the zod schemas of the routes, holding
// every route the app answers (walked from its router) and no route it does not.
import { pino } from 'pino';
import request from 'supertest';
import type { Express } from 'express';
import { beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');
let app: Express;

beforeAll(() => {
  const rules = parseRules('auth: none\n', { filename: 'rules.yaml' });
  app = createApp({ sluice: ctx.sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
});

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** Every (method, path) the app routes, from express's router stack (nested routers included). */
function routesOf(stack: readonly Layer[]): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) return Object.keys(layer.route.methods).map((m) => `${m.toUpperCase()} ${layer.route!.path}`);
    return layer.handle?.stack ? routesOf(layer.handle.stack) : [];
  });
}

describe('GET /v1/openapi.json', () => {
  it('documents every route of the app, and only those', async () => {
    const res = await request(app).get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const documented = Object.entries(res.body.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{([A-Za-z_]+)\}/g, ':$1')}`),
    );
    const routed = routesOf((app as unknown as { router: { stack: Layer[] } }).router.stack);
    expect(routed.length).toBeGreaterThan(20);
    expect([...new Set(routed)].sort()).toEqual([...new Set(documented)].sort());
  });

  it('takes request bodies and answers from the zod schemas, every reference resolvable', async () => {
    const doc = (await request(app).get('/v1/openapi.json')).body;
    const submit = doc.paths['/v1/queues/{queue}/jobs'].post;
    const body = doc.components.schemas[submit.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    expect(body.required).toEqual(['payload']);
    expect(body.additionalProperties).toBe(false);
    const override = doc.paths['/v1/admin/queues/{queue}/overrides/{lane}'].put;
    expect(override.security).toEqual([{ adminToken: [] }]);
    const ovr = doc.components.schemas[override.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    expect(Object.keys(ovr.properties).sort()).toEqual(['burst', 'capacity', 'maxWaitMs', 'ratePerSecond', 'until']);
    const lanes = doc.paths['/v1/admin/queues/{queue}/lanes'].get;
    expect(lanes.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(['path:queue', 'query:limit', 'query:cursor']);
    // Every $ref points at a component that exists (recursive payload schemas included).
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const name = ref.slice('"$ref":"#/components/schemas/'.length, -1);
      expect(ref.startsWith('"$ref":"#/components/schemas/'), ref).toBe(true);
      expect(doc.components.schemas[name], ref).toBeDefined();
    }
  });
});
