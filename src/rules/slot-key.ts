// Which descriptor entry gives a rule's limiter keys their Redis Cluster slot (the rules' `slot_key`).
// The rules one request matches are decided in one atomic script call only when their keys share a
// slot; tagging them by the client's entry puts one client's rules together without making a hot
// slot of a low-cardinality value (a plan, a route), which is why only client identities qualify.
import type { HttpSpec } from './http-schema.js';

/** Sources whose values are per client (many values): the only ones a default slot key is taken from. */
const CLIENT_SOURCES = ['api_key', 'user', 'ip'] as const;

/**
 * The default `slot_key`: the key of the client-identity entry (`api_key`, then `user`, then `ip`
 * source) that the most `http:` descriptor templates share, when at least two do; otherwise none (each
 * rule's key keeps a slot of its own).
 */
export function defaultSlotKey(http: HttpSpec | undefined): string | undefined {
  if (!http) return undefined;
  const counts = new Map<string, { templates: number; rank: number }>();
  for (const template of http.descriptors) {
    const keys = new Map<string, number>();
    for (const e of template) {
      const rank = CLIENT_SOURCES.indexOf(e.source as (typeof CLIENT_SOURCES)[number]);
      if (rank >= 0) keys.set(e.key, rank);
    }
    for (const [key, rank] of keys) {
      const c = counts.get(key) ?? { templates: 0, rank };
      c.templates++;
      counts.set(key, c);
    }
  }
  let best: { key: string; templates: number; rank: number } | undefined;
  for (const [key, c] of counts) {
    if (!best || c.templates > best.templates || (c.templates === best.templates && c.rank < best.rank)) best = { key, ...c };
  }
  return best && best.templates >= 2 ? best.key : undefined;
}

/** The slot key in force: `false` turns it off, a key names it, absent takes the default. */
export function slotKeyOf(setting: string | false | undefined, http: HttpSpec | undefined): string | undefined {
  if (setting === false) return undefined;
  return setting ?? defaultSlotKey(http);
}
