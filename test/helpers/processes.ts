// Runs TypeScript helper scripts as separate OS processes (through tsx), with a start barrier so
// that every process hammers Redis at the same moment.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export interface ChildHandle {
  child: ChildProcess;
  /** Resolves with the first stdout line that parses as JSON and has `type` === `type`. */
  message<T = Record<string, unknown>>(type: string): Promise<T>;
  /** Writes one line to the child's stdin. */
  send(line: string): void;
  exited: Promise<number | null>;
}

/**
 * Extra node flags for every helper child, from SLUICE_CHILD_NODE_ARGS (space-separated): a bench can
 * profile its worker processes (`--cpu-prof --cpu-prof-dir=/tmp/prof`), which NODE_OPTIONS refuses.
 */
const CHILD_NODE_ARGS = (process.env.SLUICE_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** Starts `node --import tsx <script> <args...>`; stdout lines are JSON messages. */
export function startTsProcess(script: string, args: string[], env: Record<string, string> = {}): ChildHandle {
  const path = script.startsWith('/') ? script : fileURLToPath(new URL(`../${script}`, import.meta.url));
  const child = spawn(process.execPath, [...CHILD_NODE_ARGS, '--import', 'tsx', path, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  live.add(child);
  const messages: Record<string, unknown>[] = [];
  const waiters: { type: string; resolve: (m: Record<string, unknown>) => void }[] = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      const i = waiters.findIndex((w) => w.type === msg.type);
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(msg);
      else messages.push(msg);
    }
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      live.delete(child);
      resolve(code);
    }),
  );
  // 'exit' can come before the last stdout chunks are read (a large final message): a waiter gives up
  // only once the child's stdio is closed too, so a message sent just before exiting is never lost.
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    child,
    exited,
    send: (line) => child.stdin!.write(line + '\n'),
    message<T>(type: string) {
      const i = messages.findIndex((m) => m.type === type);
      if (i >= 0) return Promise.resolve(messages.splice(i, 1)[0] as T);
      return new Promise<T>((resolve, reject) => {
        waiters.push({ type, resolve: resolve as (m: Record<string, unknown>) => void });
        void closed.then((code) => reject(new Error(`child exited (${code}) before sending '${type}'`)));
      });
    },
  };
}
