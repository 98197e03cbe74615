// Every route of the app with the zod schemas that validate it (parameters, query, body) and of its
// answers: the source the OpenAPI document is generated from. A test holds it to the app's router.
import { z } from 'zod';
import { cancelResponseSchema } from '../admin/schemas.js';
import * as admin from '../admin/schemas.js';
import { decisionBodySchema, jobStatusQuerySchema, releaseBodySchema, submitBodySchema } from '../schemas.js';
import * as pub from './public-schemas.js';

export type Auth = 'none' | 'tenant' | 'admin';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express style: `/v1/queues/:queue/jobs`. */
  path: string;
  summary: string;
  tag: 'jobs' | 'decisions' | 'admin' | 'service' | 'ui';
  auth: Auth;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Status -> what it means and the answer's schema (absent: not JSON). */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
}

const uiAssetParams = z.object({ file: z.string() });
const err = (description: string) => ({ description, schema: pub.problemSchema });
const tenantErrors = { 401: err('no valid API key (WWW-Authenticate says how)'), 404: err('no such queue or job (another tenant\'s job is not found either)') };
const adminErrors = { 400: err('a parameter, query or body field is invalid (issues name it)'), 401: err('no valid admin token'), 404: err('no such queue, lane or job') };

export const ROUTES: readonly RouteDoc[] = [
  { method: 'get', path: '/healthz', summary: 'The process is up', tag: 'service', auth: 'none', responses: { 200: { description: 'up', schema: pub.healthSchema } } },
  { method: 'get', path: '/readyz', summary: 'Redis answers and the rules are loaded', tag: 'service', auth: 'none', responses: { 200: { description: 'ready', schema: pub.readySchema }, 503: { description: 'not ready', schema: pub.readySchema } } },
  { method: 'get', path: '/metrics', summary: 'Prometheus metrics', tag: 'service', auth: 'none', responses: { 200: { description: 'the text exposition format', contentType: 'text/plain' } } },
  { method: 'get', path: '/v1/openapi.json', summary: 'This document', tag: 'service', auth: 'none', responses: { 200: { description: 'OpenAPI 3.1' } } },
  {
    method: 'post', path: '/v1/queues/:queue/jobs', summary: "Submit a job into its key's lane", tag: 'jobs', auth: 'tenant', params: pub.queueParams, body: submitBodySchema,
    responses: { 202: { description: 'admitted', schema: pub.submittedSchema }, 400: err('invalid body'), ...tenantErrors, 413: err('body or payload too large'), 415: err('not application/json'), 429: { description: 'the lane is full or the wait too long (Retry-After)', schema: pub.refusalSchema }, 503: err('the queue is draining (reason `draining`) or Redis is unavailable') },
  },
  { method: 'get', path: '/v1/queues/:queue/jobs/:id', summary: "A job's state, result or failure; ?wait= long-polls until it is finished (at most 30 s)", tag: 'jobs', auth: 'tenant', params: pub.jobParams, query: jobStatusQuerySchema, responses: { 200: { description: 'the job (when the wait ended first, as it is then)', schema: pub.jobStatusSchema }, 400: err('wait is not a number >= 0'), ...tenantErrors } },
  { method: 'get', path: '/v1/queues/:queue/jobs/:id/events', summary: "A job's transitions as Server-Sent Events (state, admitted, started, deferred, progress, completed, failed, cancelled)", tag: 'jobs', auth: 'tenant', params: pub.jobParams, responses: { 200: { description: 'an event stream; it ends after the job is finished', contentType: 'text/event-stream' }, ...tenantErrors } },
  { method: 'delete', path: '/v1/queues/:queue/jobs/:id', summary: 'Cancel a queued job (its lane units are freed)', tag: 'jobs', auth: 'tenant', params: pub.jobParams, responses: { 200: { description: 'cancelled', schema: cancelResponseSchema }, ...tenantErrors, 409: err('the job has started or finished (state says which)') } },
  { method: 'post', path: '/v1/decisions', summary: 'Decide the descriptors of a call (Envoy style)', tag: 'decisions', auth: 'tenant', body: decisionBodySchema, responses: { 200: { description: 'the statuses', schema: pub.decisionResponseSchema }, 400: err('invalid body'), ...tenantErrors } },
  { method: 'post', path: '/v1/decisions/release', summary: "Give back a concurrency rule's lease", tag: 'decisions', auth: 'tenant', body: releaseBodySchema, responses: { 200: { description: 'released or not', schema: pub.releaseResponseSchema }, 400: err('invalid body'), ...tenantErrors } },

  { method: 'get', path: '/v1/admin/queues', summary: 'Every queue with its settings and live figures', tag: 'admin', auth: 'admin', responses: { 200: { description: 'the queues', schema: admin.queuesResponseSchema }, 401: adminErrors[401] } },
  { method: 'post', path: '/v1/admin/queues/:queue/pause', summary: 'Pause a queue (optionally until a time)', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, body: admin.pauseBodySchema, responses: { 200: { description: 'paused', schema: admin.queuePauseResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/resume', summary: 'Resume a paused queue', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, responses: { 200: { description: 'resumed', schema: admin.queuePauseResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/drain', summary: 'Refuse new submits (503 draining); queued work goes on', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, responses: { 200: { description: 'draining', schema: admin.drainResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/undrain', summary: 'Take submits again', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, responses: { 200: { description: 'not draining', schema: admin.drainResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/queues/:queue/lanes', summary: 'Busy lanes, busiest first, paged by cursor', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, query: admin.pageQuerySchema, responses: { 200: { description: 'a page', schema: admin.lanePageResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/lane-id', summary: 'The lane id of a key, hashed exactly as a submit stores it', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, body: admin.laneIdBodySchema, responses: { 200: { description: 'the lane id', schema: admin.laneIdResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/queues/:queue/lanes/:lane', summary: "A lane's detail and queued jobs", tag: 'admin', auth: 'admin', params: admin.laneParamsSchema, responses: { 200: { description: 'the lane', schema: admin.laneDetailResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/lanes/:lane/pause', summary: 'Pause a lane (optionally until a time)', tag: 'admin', auth: 'admin', params: admin.laneParamsSchema, body: admin.pauseBodySchema, responses: { 200: { description: 'paused', schema: admin.lanePauseResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/lanes/:lane/resume', summary: "End a lane's pause now", tag: 'admin', auth: 'admin', params: admin.laneParamsSchema, responses: { 200: { description: 'resumed', schema: admin.lanePauseResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/queues/:queue/overrides', summary: 'The overrides in force', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, responses: { 200: { description: 'the overrides', schema: admin.overridesResponseSchema }, ...adminErrors } },
  { method: 'put', path: '/v1/admin/queues/:queue/overrides/:lane', summary: "Override a lane's rate, capacity, burst or max wait", tag: 'admin', auth: 'admin', params: admin.laneParamsSchema, body: admin.overrideBodySchema, responses: { 200: { description: 'set', schema: admin.overrideSchema }, ...adminErrors } },
  { method: 'delete', path: '/v1/admin/queues/:queue/overrides/:lane', summary: 'Remove an override (back to the rules)', tag: 'admin', auth: 'admin', params: admin.laneParamsSchema, responses: { 200: { description: 'removed', schema: admin.overrideRemovedResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/queues/:queue/jobs', summary: 'Failed jobs, most recent first, paged', tag: 'admin', auth: 'admin', params: admin.queueParamsSchema, query: admin.failedJobsQuerySchema, responses: { 200: { description: 'a page', schema: admin.failedJobsResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/queues/:queue/jobs/:id', summary: "Any job's detail (payload, result, failure, tenant, lane)", tag: 'admin', auth: 'admin', params: admin.jobParamsSchema, responses: { 200: { description: 'the job', schema: admin.jobDetailResponseSchema }, ...adminErrors } },
  { method: 'post', path: '/v1/admin/queues/:queue/jobs/:id/retry', summary: 'Retry a failed job through its lane', tag: 'admin', auth: 'admin', params: admin.jobParamsSchema, responses: { 202: { description: 're-admitted', schema: admin.retryResponseSchema }, ...adminErrors, 409: err('the job is not failed (state says what it is)'), 429: { description: 'its lane is full or too far behind (Retry-After)', schema: pub.refusalSchema } } },
  { method: 'post', path: '/v1/admin/queues/:queue/jobs/:id/cancel', summary: 'Cancel a queued job (its lane units are freed)', tag: 'admin', auth: 'admin', params: admin.jobParamsSchema, responses: { 200: { description: 'cancelled', schema: admin.cancelResponseSchema }, ...adminErrors, 409: err('the job has started or finished (state says which)') } },
  { method: 'post', path: '/v1/admin/decisions/reset', summary: "Clear a rule's counter for one descriptor", tag: 'admin', auth: 'admin', body: admin.resetBodySchema, responses: { 200: { description: 'reset', schema: admin.resetResponseSchema }, ...adminErrors } },
  { method: 'get', path: '/v1/admin/audit', summary: 'Admin actions, newest first, paged', tag: 'admin', auth: 'admin', query: admin.pageQuerySchema, responses: { 200: { description: 'a page', schema: admin.auditResponseSchema }, 400: adminErrors[400], 401: adminErrors[401] } },
  { method: 'get', path: '/v1/admin/stream', summary: "Server-Sent Events: every queue's overview (as GET /v1/admin/queues) once a second", tag: 'admin', auth: 'admin', responses: { 200: { description: '`event: figures` frames, data `{ at, queues }`', contentType: 'text/event-stream' }, 401: adminErrors[401] } },

  { method: 'get', path: '/ui', summary: 'The operator dashboard (the login form without a session)', tag: 'ui', auth: 'none', responses: { 200: { description: 'the page', contentType: 'text/html' }, 503: { description: 'the bundle was not built (npm run build:ui)', contentType: 'text/html' } } },
  { method: 'get', path: '/ui/assets/:file', summary: "The dashboard's bundled script and styles", tag: 'ui', auth: 'none', params: uiAssetParams, responses: { 200: { description: 'the file' }, 404: err('no such file') } },
  { method: 'post', path: '/ui/login', summary: 'Log in with the admin token (form field `token`): sets the session cookie', tag: 'ui', auth: 'none', responses: { 303: { description: 'logged in: to /ui' }, 401: { description: 'not the admin token: the login form with an error', contentType: 'text/html' } } },
  { method: 'post', path: '/ui/logout', summary: 'Ends the session (clears the cookie)', tag: 'ui', auth: 'none', responses: { 303: { description: 'to /ui' } } },
];
