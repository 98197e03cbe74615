// WorkerReloader: keeps a process's queue workers on the `queues:` section of the rules in force. A
// changed section restarts them; when the new queues fail to start, the last queues that ran are
// started again, and any later reload tries the new section again (never left with no workers and no
// way back, as when a failed restart dropped the workers for good).
import type { Logger } from 'pino';
import type { QueueRule } from '../rules/queues.js';
import { sameConfig } from '../validation.js';
import type { RunningWorkers } from '../workers-entry.js';

export type StartWorkers = (queues: readonly QueueRule[]) => Promise<RunningWorkers>;

export class WorkerReloader {
  private running: RunningWorkers | undefined;
  /** The queues the running workers were started on, or undefined when none run. */
  private runningOn: readonly QueueRule[] | undefined;
  /** The last queues that started (what a failed restart goes back to). */
  private runningQueues: readonly QueueRule[] = [];
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly start: StartWorkers,
    private readonly logger: Logger,
  ) {}

  /** Starts the first workers; a failure here is the caller's (a process that cannot start its workers exits). */
  async startInitial(queues: readonly QueueRule[]): Promise<RunningWorkers> {
    const running = await this.start(queues);
    this.running = running;
    this.runningQueues = queues;
    this.runningOn = queues;
    return running;
  }

  /** The names of the queues being worked now (empty when none run). */
  get queues(): string[] {
    return this.running?.queues ?? [];
  }

  /** Restarts the workers when `queues` differ from what runs; calls are applied one after another. */
  reload(queues: readonly QueueRule[], rulesVersion: string): Promise<void> {
    this.chain = this.chain.then(() => this.apply(queues, rulesVersion));
    return this.chain;
  }

  /** From now on reloads change nothing (a shutdown has begun; the workers are closed later by close()). */
  stopReloading(): void {
    this.closed = true;
  }

  /** Stops reloading and closes the running workers (after a restart in progress finishes). */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    const running = this.running;
    this.running = undefined;
    this.runningOn = undefined;
    await running?.close();
  }

  private async apply(queues: readonly QueueRule[], rulesVersion: string): Promise<void> {
    if (this.closed) return;
    if (this.runningOn !== undefined && sameConfig(queues, this.runningOn)) return;
    // The old workers stop first (their running jobs finish): two sets on one queue would run each job's
    // handler under two configurations at once.
    await this.stopRunning();
    try {
      await this.startOn(queues);
      this.logger.info({ event: 'workers_restarted', rulesVersion, queues: this.queues }, 'workers restarted on the new queues');
      return;
    } catch (error) {
      this.logger.error({ event: 'workers_restart_failed', err: error, rulesVersion }, 'workers could not start on the new queues; going back to the previous ones');
    }
    const previous = this.runningQueues;
    try {
      await this.startOn(previous);
      this.logger.warn({ event: 'workers_restored', rulesVersion, queues: this.queues }, 'workers running on the previous queues; the next reload tries the new ones again');
    } catch (error) {
      // Nothing runs now; runningOn is undefined, so the next reload starts workers whatever it holds.
      this.logger.error({ event: 'workers_stopped', err: error, rulesVersion }, 'workers could not start on the previous queues either; none run until the next reload');
    }
  }

  private async stopRunning(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    this.runningOn = undefined;
    await running?.close();
  }

  private async startOn(queues: readonly QueueRule[]): Promise<void> {
    this.running = await this.start(queues);
    this.runningQueues = queues;
    this.runningOn = queues;
  }
}
