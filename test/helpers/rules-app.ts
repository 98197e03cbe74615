// An express app of sluice in this process, on a private single redis-server, for the rules given (YAML),
// with an admin token: what the HTTP integration tests of a rules file share. Its sluice reports to the
// app's metrics, as `sluice serve` wires it. Started before the file's tests, disposed after.
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { Metrics, parseRules } from '../../src/index.js';
import { createApp } from '../../src/express.js';
import type { Sluice } from '../../src/sluice.js';
import { startBackend, type Backend } from './fixtures.js';

export interface RulesApp {
  backend: Backend;
  sluice: Sluice;
  app: ReturnType<typeof createApp>;
  metrics: Metrics;
}

/** The app of `rulesYaml` for the tests of this file (read its fields inside the tests). */
export function useRulesApp(rulesYaml: string, adminToken: string): RulesApp {
  const ctx = {} as RulesApp;
  beforeAll(async () => {
    ctx.backend = await startBackend('single');
    const rules = parseRules(rulesYaml, { filename: 'rules.yaml' });
    ctx.metrics = new Metrics();
    ctx.sluice = ctx.backend.sluice({ observer: ctx.metrics });
    ctx.app = createApp({ sluice: ctx.sluice, rules: { current: () => rules }, metrics: ctx.metrics, logger: pino({ level: 'silent' }), adminToken });
  });
  afterAll(async () => {
    await ctx.backend?.dispose();
  });
  return ctx;
}
