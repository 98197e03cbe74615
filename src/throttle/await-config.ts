// A worker started before any process published its throttle's configuration: it waits for it, says
// so (once), and starts as soon as it appears, instead of idling in silence.
import { isSluiceError } from '../errors.js';
import type { ThrottleContext } from './context.js';
import { publishedConfig } from './worker.js';

/** Where a waiting worker reports that it waits; default: a Node process warning (stderr). */
export type WaitLogger = (message: string) => void;

const defaultLogger: WaitLogger = (message) => process.emitWarning(message, { code: 'SLUICE_WAITING_FOR_THROTTLE' });

/**
 * Resolves with the throttle's published configuration, checking every `pollMs` until it exists (or
 * `stopped()`). Says once that it waits, and again when it found it.
 */
export async function awaitPublishedConfig(
  ctx: ThrottleContext,
  configKey: string,
  name: string,
  stopped: () => boolean,
  log: WaitLogger = defaultLogger,
  pollMs = 1_000,
): Promise<unknown> {
  let waited = false;
  for (;;) {
    try {
      const config = await publishedConfig(ctx, configKey, name);
      if (waited) log(`throttle '${name}': configuration published; worker starting`);
      return config;
    } catch (error) {
      if (!isSluiceError(error, 'SLUICE_ERR_UNKNOWN_THROTTLE') || stopped()) throw error;
      if (!waited) log(`throttle '${name}' has no published configuration yet: the worker waits for it (checking every ${pollMs} ms) and starts as soon as a process calls sluice.throttle('${name}', config) or submits to it; or pass { config } to the worker`);
      waited = true;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }
}
