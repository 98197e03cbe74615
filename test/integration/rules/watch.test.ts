// Hot reload with real files in a temporary folder: a good new file is taken, a bad one is refused
// with a logged error (the last good rules stay), replaced-by-rename and polling-only both work.
import { mkdtempSync, rmSync, writeFileSync, renameSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSluiceError } from '../../../src/errors.js';
import type { Rules } from '../../../src/rules/compile.js';
import { watchRules, type RulesWatcher } from '../../../src/rules/watch.js';

const rulesText = (perSecond: number) => `domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: second, requests_per_unit: ${perSecond} }
`;
const limitOf = (rules: Rules) => (rules.rules[0]!.policy as { limit: number }).limit;

async function waitFor(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let dir: string;
let file: string;
let watcher: RulesWatcher | undefined;
let logs: { level: number; msg: string; [k: string]: unknown }[];
let changes: [Rules, Rules][];
let errors: Error[];
const logger = () => pino({ level: 'info', base: null }, { write: (line: string) => void logs.push(JSON.parse(line)) });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-watch-'));
  file = join(dir, 'rules.yaml');
  writeFileSync(file, rulesText(10));
  logs = [];
  changes = [];
  errors = [];
});

afterEach(() => {
  watcher?.close();
  watcher = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function start(options: Parameters<typeof watchRules>[1] = {}): RulesWatcher {
  watcher = watchRules(file, {
    logger: logger(),
    debounceMs: 20,
    pollIntervalMs: 50,
    onChange: (next, previous) => void changes.push([next, previous]),
    onError: (e) => void errors.push(e),
    ...options,
  });
  return watcher;
}

describe('watchRules', () => {
  it('takes a good new file', async () => {
    const w = start();
    const first = w.current();
    expect(limitOf(first)).toBe(10);
    writeFileSync(file, rulesText(20));
    // An in-place write can be seen half done (and refused) before it is complete: wait for the result.
    await waitFor(() => limitOf(w.current()) === 20, 'the change');
    expect(changes.at(-1)![0]).toBe(w.current());
    expect(changes[0]![1]).toBe(first);
    expect(w.current().version).not.toBe(first.version);
    expect(logs.find((l) => l.msg === 'rules reloaded')).toMatchObject({ level: 30, file, version: w.current().version, previous: first.version });
  });

  it('refuses a bad new file, logs why, keeps the last good rules, then takes the fixed file', async () => {
    const w = start();
    const good = w.current();
    writeFileSync(file, rulesText(20).replace('unit: second', 'unit: fortnight'));
    const refusedUnit = (e: Error) => e.message.includes('rate_limit.unit');
    await waitFor(() => errors.some(refusedUnit), 'the refusal');
    expect(w.current()).toBe(good);
    expect(isSluiceError(errors.find(refusedUnit), 'SLUICE_ERR_INVALID_RULES')).toBe(true);
    const logged = logs.find((l) => l.msg === 'rules file refused; keeping the last good rules' && String(l.err && (l.err as { message: string }).message).includes('rate_limit.unit'));
    expect(logged).toMatchObject({ level: 50, file, version: good.version });
    expect(logged!.issues).toEqual([
      { path: 'domains.0.descriptors.0.rate_limit.unit', line: 5, column: 29, message: 'Invalid option: expected one of "second"|"minute"|"hour"|"day"' },
    ]);
    // The refused content is reported once, not again on every poll.
    const reported = errors.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(errors).toHaveLength(reported);

    writeFileSync(file, rulesText(30));
    await waitFor(() => limitOf(w.current()) === 30, 'the fixed file');
  });

  it('sees a file replaced by rename (how editors and config managers save)', async () => {
    const w = start();
    const tmp = join(dir, '.rules.yaml.tmp');
    writeFileSync(tmp, rulesText(40));
    renameSync(tmp, file);
    await waitFor(() => changes.length === 1, 'the renamed file');
    expect(limitOf(w.current())).toBe(40);
    // And keeps watching the new file.
    writeFileSync(file, rulesText(41));
    await waitFor(() => limitOf(w.current()) === 41, 'a change after the rename');
  });

  it('polling alone finds changes when fs.watch is off', async () => {
    const w = start({ fsWatch: false });
    writeFileSync(file, rulesText(500));
    await waitFor(() => limitOf(w.current()) === 500, 'the polled change');
  });

  it('rewriting the same content changes nothing', async () => {
    const w = start();
    const before = w.current();
    writeFileSync(file, rulesText(10));
    expect(await w.reload()).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(changes).toHaveLength(0);
    expect(w.current()).toBe(before);
  });

  it('a deleted file is an error; the rules stay', async () => {
    const w = start();
    const before = w.current();
    unlinkSync(file);
    await waitFor(() => errors.length >= 1, 'the read error');
    expect(errors[0]!.message).toContain('cannot read rules file');
    expect(w.current()).toBe(before);
  });

  it('reload() re-reads on demand', async () => {
    const w = start({ fsWatch: false, pollIntervalMs: 0 });
    writeFileSync(file, rulesText(77));
    expect(await w.reload()).toBe(true);
    expect(limitOf(w.current())).toBe(77);
  });

  it('after close() nothing changes', async () => {
    const w = start();
    w.close();
    writeFileSync(file, rulesText(99));
    await new Promise((r) => setTimeout(r, 250));
    expect(changes).toHaveLength(0);
    expect(limitOf(w.current())).toBe(10);
  });

  it('will not start on a bad file', () => {
    writeFileSync(file, 'domains: [\n');
    expect(() => start()).toThrow(/rules\.yaml:2:1 \(syntax\)/);
  });
});
