// docs/http-api.md lists every route of the app (the OpenAPI route table, itself held to the app's
// router by test/integration/http/openapi.test.ts) in its route tables, and no route the app lacks.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openApiPath } from '../../../src/http/openapi/document.js';
import { ROUTES } from '../../../src/http/openapi/route-table.js';

const doc = readFileSync(new URL('../../../docs/http-api.md', import.meta.url), 'utf8');
const ROW = /^\| `(GET|POST|PUT|DELETE)` \| `(\/[^`]*)` \|/gm;

describe('docs/http-api.md', () => {
  it('lists every route of the app in its tables, and only those', () => {
    const listed = [...doc.matchAll(ROW)].map((m) => `${m[1]} ${m[2]}`).sort();
    const routes = ROUTES.map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`).sort();
    expect(listed).toEqual(routes);
  });
});
