// The admin API's HTTP client for `sluice admin`: the base URL, the token from SLUICE_ADMIN_TOKEN
// (never printed), who is acting ($USER), and errors turned into one line each.
import { SluiceError } from '../errors.js';

export interface AdminClientOptions {
  url: string;
  token: string | undefined;
  actor?: string;
}

export class AdminClient {
  constructor(private readonly options: AdminClientOptions) {}

  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    if (!this.options.token) throw new SluiceError('SLUICE_ERR_INVALID_CONFIG', 'SLUICE_ADMIN_TOKEN is not set: the admin API needs the token the server was started with');
    let res: Response;
    try {
      res = await fetch(new URL(path, this.options.url), {
        method,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(this.options.actor ? { 'x-sluice-actor': this.options.actor } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (e) {
      throw new SluiceError('SLUICE_ERR_INVALID_CONFIG', `cannot reach ${this.options.url}: ${(e as Error).message}`);
    }
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { message: text };
    }
    return { status: res.status, body: parsed };
  }
}

/** Plain-text tables: one header row, columns padded to their widest cell. */
export function table(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cell = (v: unknown) => (v === undefined || v === null ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}
