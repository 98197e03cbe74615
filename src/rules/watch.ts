// Hot reload of the rules file: watched (fs.watch on its folder, plus polling as a fallback),
// debounced, re-read; a bad new file is refused with a logged error and the last good rules stay.
import { createHash } from 'node:crypto';
import { statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { isSluiceError } from '../errors.js';
import type { Rules } from './compile.js';
import { loadRules, parseRules } from './rules.js';

/** The part of a pino logger the watcher uses (a pino `Logger` fits). */
export interface RulesLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Options of {@link watchRules}. */
export interface WatchRulesOptions {
  /** Called after new rules are in force. Must not throw. */
  onChange?: (rules: Rules, previous: Rules) => void;
  /** Called when a changed file is refused (the previous rules stay in force), or cannot be read. */
  onError?: (error: Error) => void;
  logger?: RulesLogger;
  /** Quiet time after the last change event before the file is re-read (default 100 ms): editors write in steps. */
  debounceMs?: number;
  /** How often the file's size and mtime are polled, catching what fs.watch misses (default 1000 ms; 0 = no polling). */
  pollIntervalMs?: number;
  /** Use fs.watch (default true); polling alone when false. */
  fsWatch?: boolean;
}

/** A live view of the rules in force. */
export interface RulesWatcher {
  /** The rules in force now (the last good file). */
  current(): Rules;
  /** Re-reads the file now; resolves true when new rules were taken, false when unchanged or refused. */
  reload(): Promise<boolean>;
  /** Stops watching. */
  close(): void;
}

/**
 * Loads `file` (throwing SLUICE_ERR_INVALID_RULES if it is bad: a process must not start on bad
 * rules) and keeps it current. Reloads are serialised; content identical to the rules in force is
 * ignored, and a refused content is reported once, not on every poll.
 */
export function watchRules(file: string, options: WatchRulesOptions = {}): RulesWatcher {
  const debounceMs = options.debounceMs ?? 100;
  const pollMs = options.pollIntervalMs ?? 1000;
  // The signature is taken before the first read, so a change racing the start is still seen.
  let signature = signatureOf(() => statSync(file));
  let rules = loadRules(file);
  let closed = false;
  let refusedHash: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<boolean> | undefined;
  let again = false;

  const reloadOnce = async (): Promise<boolean> => {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      report(new Error(`cannot read rules file ${file}: ${(e as Error).message}`), { file }, 'rules file unreadable; keeping the last good rules');
      return false;
    }
    const hash = createHash('sha256').update(text).digest('hex').slice(0, 12);
    if (closed || hash === rules.version || hash === refusedHash) return false;
    try {
      const next = parseRules(text, { filename: file });
      const previous = rules;
      rules = next;
      refusedHash = undefined;
      options.logger?.info({ file, version: next.version, previous: previous.version, rules: next.rules.length }, 'rules reloaded');
      options.onChange?.(next, previous);
      return true;
    } catch (e) {
      refusedHash = hash;
      const issues = isSluiceError(e, 'SLUICE_ERR_INVALID_RULES') ? e.details : undefined;
      report(e as Error, { file, refused: hash, version: rules.version, issues }, 'rules file refused; keeping the last good rules');
      return false;
    }
  };

  function report(error: Error, fields: object, msg: string): void {
    if (closed) return;
    options.logger?.error({ ...fields, err: { message: error.message } }, msg);
    options.onError?.(error);
  }

  const reload = (): Promise<boolean> => {
    if (running) {
      again = true;
      return running;
    }
    running = reloadOnce().finally(() => {
      running = undefined;
      if (again && !closed) {
        again = false;
        void reload();
      }
    });
    return running;
  };

  const schedule = () => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void reload();
    }, debounceMs);
    timer.unref();
  };

  // Watch the folder, not the file: editors and config managers replace the file by renaming a new
  // one over it, which ends a watch on the old inode.
  let watcher: FSWatcher | undefined;
  if (options.fsWatch !== false) {
    const name = basename(file);
    try {
      watcher = watch(dirname(file), { persistent: false }, (_event, changed) => {
        if (changed === null || changed === name) schedule();
      });
      watcher.on('error', (e: Error) => options.logger?.warn({ file, err: { message: e.message } }, 'fs.watch failed; polling only'));
    } catch (e) {
      options.logger?.warn({ file, err: { message: (e as Error).message } }, 'fs.watch unavailable; polling only');
    }
  }

  let poller: NodeJS.Timeout | undefined;
  if (pollMs > 0) {
    const poll = async () => {
      let s: Stats | undefined;
      try {
        s = await stat(file);
      } catch {
        s = undefined;
      }
      const next = signatureOf(() => s);
      if (next !== signature) schedule();
      signature = next;
    };
    poller = setInterval(() => void poll(), pollMs);
    poller.unref();
  }

  return {
    current: () => rules,
    reload,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (poller) clearInterval(poller);
      watcher?.close();
    },
  };
}

/** Inode, size and mtime: what changes when a file is written or replaced. */
function signatureOf(read: () => Stats | undefined): string {
  try {
    const s = read();
    return s ? `${s.ino}:${s.size}:${s.mtimeMs}` : 'missing';
  } catch {
    return 'missing';
  }
}
