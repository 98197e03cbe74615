// The OpenAPI 3.1 document, generated from the route table's zod schemas with zod's own JSON Schema
// output (draft 2020-12, the dialect of OpenAPI 3.1). Each schema goes into components; the $defs a
// recursive schema (a JSON payload) brings are moved there too, with their references rewritten.
import { z } from 'zod';
import { problemSchema, refusalSchema } from './public-schemas.js';
import { ROUTES, type RouteDoc } from './route-table.js';

type Json = Record<string, unknown>;

/** Puts `schema` into `components` as `name` (and its $defs beside it); returns a reference to it. */
function embed(schema: z.ZodType, name: string, components: Record<string, Json>, io: 'input' | 'output'): Json {
  if (!components[name]) {
    const generated = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
    const { $schema: _s, $defs, ...root } = generated;
    const rewrite = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(rewrite);
      if (v && typeof v === 'object') {
        return Object.fromEntries(
          Object.entries(v as Json).map(([k, x]) => {
            if (k !== '$ref' || typeof x !== 'string') return [k, rewrite(x)];
            if (x === '#') return [k, `#/components/schemas/${name}`];
            return [k, x.replace('#/$defs/', `#/components/schemas/${name}_`)];
          }),
        );
      }
      return v;
    };
    components[name] = rewrite(root) as Json;
    for (const [d, def] of Object.entries(($defs ?? {}) as Json)) components[`${name}_${d}`] = rewrite(def) as Json;
  }
  return { $ref: `#/components/schemas/${name}` };
}

/** `/v1/queues/:queue/jobs` -> `/v1/queues/{queue}/jobs` */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_]+)/g, '{$1}');
}

const pascal = (s: string) => s.replace(/(^|[^A-Za-z0-9])([A-Za-z0-9])/g, (_, _sep, c: string) => c.toUpperCase());

function operation(r: RouteDoc, components: Record<string, Json>): Json {
  const base = pascal(`${r.method} ${r.path.replace(/:/g, '')}`);
  const parameters: Json[] = [];
  for (const [where, obj] of [['path', r.params], ['query', r.query]] as const) {
    if (!obj) continue;
    const json = z.toJSONSchema(obj, { target: 'draft-2020-12', io: 'input' }) as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, schema] of Object.entries(json.properties ?? {})) {
      parameters.push({ name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema });
    }
  }
  const responses: Json = {};
  for (const [status, res] of Object.entries(r.responses)) {
    const content = res.schema
      ? { 'application/json': { schema: embed(res.schema, SHARED.get(res.schema) ?? `${base}${status}`, components, 'output') } }
      : res.contentType
        ? { [res.contentType]: { schema: { type: 'string' } } }
        : { 'application/json': { schema: { type: 'object' } } };
    responses[status] = { description: res.description, content };
  }
  return {
    operationId: base.charAt(0).toLowerCase() + base.slice(1),
    summary: r.summary,
    tags: [r.tag],
    ...(r.auth === 'none' ? { security: [] } : { security: [r.auth === 'admin' ? { adminToken: [] } : { apiKey: [] }, ...(r.auth === 'tenant' ? [{ bearerKey: [] }] : [])] }),
    ...(parameters.length ? { parameters } : {}),
    ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: embed(r.body, `${base}Body`, components, 'input') } } } } : {}),
    responses,
  };
}

/** The error and refusal shapes are shared by every route: one component each. */
const SHARED = new Map<z.ZodType, string>([
  [problemSchema, 'Problem'],
  [refusalSchema, 'Refusal'],
]);

/** The whole document, for the routes of the table. */
export function openApiDocument(version = '0.1.0', routes: readonly RouteDoc[] = ROUTES): Json {
  const components: Record<string, Json> = {};
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const p = openApiPath(r.path);
    paths[p] = { ...(paths[p] ?? {}), [r.method]: operation(r, components) };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'sluice', version, description: 'Queue-backed job throttler and API rate limiter: submit, job status, decisions, and the admin API.' },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearerKey: { type: 'http', scheme: 'bearer', description: "A tenant's API key (auth.tenants in the rules file)" },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: "A tenant's API key" },
        adminToken: { type: 'http', scheme: 'bearer', description: 'SLUICE_ADMIN_TOKEN' },
      },
    },
  };
}
