// RefusalLog: refusals logged per (rule, client) and interval instead of one line per refused request.
// The first refusal of a client by a rule in an interval is logged as it always was (`event: "refused"`,
// the hashed identity, rule, rules version, reason); the others in that interval are only counted, and
// at its end one `refusals_suppressed` line per rule gives their number and how many clients they
// came from. A client hammering a limit at 10,000 requests/s is one line per interval, not 10,000
// (and costs no hash). Every refusal is still counted one by one in `sluice_decisions_total`.
import type { Logger } from 'pino';

/** Default interval: a client refused all the time is logged every 10 s. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;
/** Clients remembered per interval; beyond, new ones are counted, not logged (bounded memory). */
export const REFUSAL_LOG_MAX_CLIENTS = 10_000;

/** The fields of one refusal line; `identity` is already hashed (never the identity itself). */
export interface RefusalFields {
  rule: string;
  identity: string;
  rulesVersion: string;
  reason: string;
  algorithm?: string;
}

interface Suppressed {
  refusals: number;
  clients: Set<string>;
}

export class RefusalLog {
  /** (rule, raw identity) pairs logged in this interval. The raw identity stays in this process's memory. */
  private seen = new Set<string>();
  private suppressed = new Map<string, Suppressed>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly msg: string,
    private readonly intervalMs = REFUSAL_LOG_INTERVAL_MS,
    private readonly maxClients = REFUSAL_LOG_MAX_CLIENTS,
  ) {}

  /**
   * One refusal of `identity` by `rule`. `fields` (which hash the identity) are only worked out when
   * the line is written.
   */
  refused(rule: string, identity: string, fields: () => RefusalFields): void {
    const id = `${rule}\u0000${identity}`;
    if (!this.seen.has(id) && this.seen.size < this.maxClients) {
      this.seen.add(id);
      this.arm();
      this.logger.info({ event: 'refused', ...fields() }, this.msg);
      return;
    }
    let s = this.suppressed.get(rule);
    if (!s) {
      s = { refusals: 0, clients: new Set() };
      this.suppressed.set(rule, s);
    }
    s.refusals++;
    if (s.clients.size < this.maxClients) s.clients.add(identity);
    this.arm();
  }

  /** Ends the interval: one summary line per rule that had refusals not logged one by one. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const [rule, s] of this.suppressed) {
      this.logger.info(
        { event: 'refusals_suppressed', rule, refusals: s.refusals, clients: s.clients.size, intervalMs: this.intervalMs },
        'refusals not logged one by one in this interval',
      );
    }
    this.suppressed = new Map();
    this.seen = new Set();
  }

  private arm(): void {
    if (this.timer) return;
    // unref: an interval in progress never keeps the process alive.
    this.timer = setTimeout(() => this.flush(), this.intervalMs);
    this.timer.unref();
  }
}
