// The audit stream: every admin action (who, when, what) appended to one capped Redis stream, read
// back newest first with a cursor.
import { whenReady, type RedisClient } from '../redis/connection.js';

/** The stream keeps about this many entries (XADD MAXLEN ~). */
export const AUDIT_MAX_ENTRIES = 10_000;

export interface AuditEntry {
  /** The stream entry id (`<ms>-<seq>`): also the cursor. */
  id: string;
  at: string;
  /** The actor the request named (X-Sluice-Actor), or `admin`. */
  who: string;
  /** 8 hex chars of the admin token's SHA-256: which token was used, never the token. */
  token: string;
  action: string;
  queue?: string;
  target?: string;
  details?: unknown;
}

export type AuditInput = Omit<AuditEntry, 'id' | 'at'>;

export class AuditLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
  ) {}

  async record(entry: AuditInput): Promise<string> {
    await whenReady(this.redis, 2_000);
    const fields = ['who', entry.who, 'token', entry.token, 'action', entry.action];
    if (entry.queue !== undefined) fields.push('queue', entry.queue);
    if (entry.target !== undefined) fields.push('target', entry.target);
    if (entry.details !== undefined) fields.push('details', JSON.stringify(entry.details));
    return (await this.redis.xadd(this.key, 'MAXLEN', '~', String(AUDIT_MAX_ENTRIES), '*', ...fields)) as string;
  }

  /** Up to `limit` entries, newest first, older than `before` (an entry id) when given. */
  async read(limit: number, before?: string): Promise<{ entries: AuditEntry[]; next?: string }> {
    await whenReady(this.redis, 2_000);
    const rows = (await this.redis.xrevrange(this.key, before ? `(${before}` : '+', '-', 'COUNT', String(limit))) as [string, string[]][];
    const entries = rows.map(([id, flat]) => entryOf(id, flat));
    return entries.length === limit ? { entries, next: entries[entries.length - 1]!.id } : { entries };
  }
}

function entryOf(id: string, flat: string[]): AuditEntry {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i]!, flat[i + 1]!);
  const entry: AuditEntry = { id, at: new Date(Number(id.split('-')[0])).toISOString(), who: f.get('who') ?? '', token: f.get('token') ?? '', action: f.get('action') ?? '' };
  if (f.has('queue')) entry.queue = f.get('queue')!;
  if (f.has('target')) entry.target = f.get('target')!;
  if (f.has('details')) {
    try {
      entry.details = JSON.parse(f.get('details')!);
    } catch {
      entry.details = f.get('details');
    }
  }
  return entry;
}
