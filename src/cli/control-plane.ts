// A process's part of the control plane: the cache of overrides, drain and pause flags it follows
// (polled every 250 ms), the live figures it adds to, and the resume of a timed queue pause when it ends.
import type { Logger } from 'pino';
import { AuditLog } from '../admin/audit.js';
import { ControlCache } from '../admin/control-cache.js';
import { ControlKeys } from '../admin/control-keys.js';
import { ControlStore } from '../admin/control-store.js';
import { LiveFigures } from '../admin/figures.js';
import { endTimedOverride } from '../admin/override-end.js';
import { endTimedPause } from '../admin/queue-pause.js';
import type { RulesSource } from '../rules/rules-source.js';
import type { Sluice, SluiceObserver } from '../sluice.js';
import { ThrottleKeys } from '../throttle/keys.js';

export interface ControlPlane {
  cache: ControlCache;
  close(): Promise<void>;
}

/** The metrics observer, also counting starts and refusals into the live figures. */
export function withFigures(metrics: SluiceObserver, figures: LiveFigures): SluiceObserver {
  // Everything else is the metrics' own (looked up through the prototype, `this` still works).
  return Object.assign(Object.create(metrics) as SluiceObserver, {
    onStart: (e: Parameters<NonNullable<SluiceObserver['onStart']>>[0]) => {
      metrics.onStart?.(e);
      figures.onStart(e);
    },
    onSubmit: (e: Parameters<NonNullable<SluiceObserver['onSubmit']>>[0]) => {
      metrics.onSubmit?.(e);
      figures.onSubmit(e);
    },
  });
}

export async function startControlPlane(sluice: Sluice, rules: RulesSource, figures: LiveFigures, logger: Logger): Promise<ControlPlane> {
  const keys = new ControlKeys(sluice.keys);
  const throttleKeys = (q: string) => new ThrottleKeys(sluice.keys, q);
  const store = new ControlStore(sluice.redis, keys);
  const audit = new AuditLog(sluice.redis, keys.audit);
  const ending = new Set<string>();
  const cache = new ControlCache(sluice.redis, keys, throttleKeys, () => rules.current().queues.map((q: { name: string }) => q.name), {
    onPauseEnded: (name) => {
      const queue = rules.current().queue(name);
      if (!queue || ending.has(name)) return;
      ending.add(name);
      void endTimedPause(sluice.throttle(queue.name, queue.throttle), store, audit)
        .then((resumed) => resumed && logger.info({ event: 'queue_resumed', queue: name }, 'timed queue pause ended'))
        .catch((error: unknown) => logger.warn({ err: error, queue: name }, 'could not end a timed queue pause'))
        .finally(() => ending.delete(name));
    },
    onOverrideEnded: (name, lane) => {
      const queue = rules.current().queue(name);
      const key = `${name}\u0000${lane}`;
      if (!queue || ending.has(key)) return;
      ending.add(key);
      void endTimedOverride(sluice.redis, sluice.throttle(queue.name, queue.throttle), store, audit, lane)
        .then((ended) => ended && logger.info({ event: 'override_ended', queue: name, lane }, 'lane override ended'))
        .catch((error: unknown) => logger.warn({ err: error, queue: name, lane }, 'could not end a lane override'))
        .finally(() => ending.delete(key));
    },
    onError: () => undefined,
  });
  await cache.start();
  sluice.useOverrides(cache);
  figures.attach(sluice.redis, keys, throttleKeys);
  return {
    cache,
    async close() {
      cache.close();
      await figures.close().catch(() => undefined);
    },
  };
}
