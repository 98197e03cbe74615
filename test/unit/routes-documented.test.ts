// docs/http-api.md against the app: every route createApp() answers has a row in the doc's route table
// (method and path), and the table names no route the app does not have.
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/express.js';
import { Metrics, createSluice, parseRules } from '../../src/index.js';

const DOC = new URL('../../docs/http-api.md', import.meta.url);

/** express route layers, nested routers included. */
interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/** "METHOD /path" of every route in an express router stack, `:param` written `{param}` as the doc does. */
function routesOf(stack: readonly Layer[]): string[] {
  const out: string[] = [];
  for (const layer of stack) {
    if (layer.route) {
      const path = layer.route.path.replace(/:([A-Za-z_]+)/g, '{$1}');
      for (const [method, on] of Object.entries(layer.route.methods)) if (on) out.push(`${method.toUpperCase()} ${path}`);
    } else if (layer.handle?.stack) {
      out.push(...routesOf(layer.handle.stack));
    }
  }
  return out;
}

/** "METHOD /path" of every row of the doc's route table (the first table: | `GET` | `/path` | ... |). */
function documentedRoutes(doc: string): string[] {
  const table = doc.slice(0, doc.indexOf('\n## '));
  return [...table.matchAll(/^\|\s*`([A-Z]+)`\s*\|\s*`([^`]+)`\s*\|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

// No Redis is needed to list routes: the client never connects before it is closed.
const sluice = createSluice({ redis: 'redis://127.0.0.1:1' });
afterAll(() => sluice.close());

describe('docs/http-api.md routes', () => {
  it('has a row for every route of the app, and none for a route it does not have', () => {
    const app = createApp({ sluice, rules: { current: () => parseRules('domains: []\n') }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
    const routes = routesOf((app as unknown as { router: { stack: Layer[] } }).router.stack).sort();
    expect(routes.length).toBeGreaterThanOrEqual(7);
    expect(routes).toContain('POST /v1/decisions/release');
    expect(documentedRoutes(readFileSync(DOC, 'utf8')).sort()).toEqual(routes);
  });

  it('the check catches a missing and an extra row', () => {
    const doc = '| Method | Path | What |\n|---|---|---|\n| `GET` | `/a/{id}` | x |\n| `POST` | `/b` | y |\n\n## Next\n| `GET` | `/not-the-table` | z |\n';
    expect(documentedRoutes(doc)).toEqual(['GET /a/{id}', 'POST /b']);
    expect(routesOf([{ route: { path: '/a/:id', methods: { get: true } } }, { handle: { stack: [{ route: { path: '/b', methods: { post: true } } }] } }])).toEqual(['GET /a/{id}', 'POST /b']);
  });
});
