// Moving one hash slot from one master of a test cluster to another with Redis Cluster's own live
// resharding protocol (what `redis-cli --cluster reshard` does): IMPORTING on the target, MIGRATING on
// the source, MIGRATE of the slot's keys in batches, then SETSLOT NODE on every master. Pauses between the
// steps keep the slot in its in-between states long enough for a running load to meet them (ASK,
// TRYAGAIN), as a migration of a big slot would.
import { Redis } from 'ioredis';

export interface SlotMove {
  slot: number;
  fromPort: number;
  toPort: number;
  /** Keys moved, batches sent, and MIGRATE errors by their first word (BUSYKEY, IOERR...). */
  keysMoved: number;
  batches: number;
  migrateErrors: Record<string, number>;
  /** From IMPORTING to the last SETSLOT NODE. */
  ms: number;
}

export interface MoveOptions {
  /** Keys per MIGRATE (default 5). */
  batch?: number;
  /** Pause after MIGRATING/IMPORTING, between batches, and before SETSLOT NODE (ms, default 20). */
  pauseMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Which master port serves `slot` now (CLUSTER SLOTS as `any` node sees it). */
export async function ownerOf(anyPort: number, slot: number): Promise<number> {
  const c = new Redis(anyPort, '127.0.0.1');
  try {
    const ranges = (await c.cluster('SLOTS')) as unknown as [number, number, [string, number, string]][];
    const r = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
    if (!r) throw new Error(`slot ${slot} has no owner`);
    return r[2][1];
  } finally {
    c.disconnect();
  }
}

/** The slot of `key` (its hash tag decides). */
export async function slotOf(anyPort: number, key: string): Promise<number> {
  const c = new Redis(anyPort, '127.0.0.1');
  try {
    return Number(await c.cluster('KEYSLOT', key));
  } finally {
    c.disconnect();
  }
}

/** Moves `slot` from the master on `fromPort` to the one on `toPort`; `allPorts` are every master's. */
export async function moveSlot(slot: number, fromPort: number, toPort: number, allPorts: number[], options: MoveOptions = {}): Promise<SlotMove> {
  const batch = options.batch ?? 5;
  const pauseMs = options.pauseMs ?? 20;
  const clients = new Map(allPorts.map((p) => [p, new Redis(p, '127.0.0.1')]));
  const src = clients.get(fromPort)!;
  const dst = clients.get(toPort)!;
  const move: SlotMove = { slot, fromPort, toPort, keysMoved: 0, batches: 0, migrateErrors: {}, ms: 0 };
  try {
    const srcId = String(await src.cluster('MYID'));
    const dstId = String(await dst.cluster('MYID'));
    const t0 = performance.now();
    // Target first: once the source says MIGRATING it sends ASK there, which must then accept ASKING.
    await dst.cluster('SETSLOT', slot, 'IMPORTING', srcId);
    await src.cluster('SETSLOT', slot, 'MIGRATING', dstId);
    await sleep(pauseMs);
    for (;;) {
      const keys = (await src.cluster('GETKEYSINSLOT', slot, batch)) as string[];
      if (!keys.length) break;
      try {
        // No REPLACE: a key that already exists on the target (re-created there during the move) is an
        // error to count, not something to overwrite.
        await src.migrate('127.0.0.1', toPort, '', 0, 5_000, 'KEYS', ...keys);
        move.keysMoved += keys.length;
      } catch (error) {
        // Counted (the test asserts none), then finished with REPLACE so the slot still ends on the
        // target and what the load did to the state can be read there.
        const kind = String((error as Error).message).split(' ')[0]!;
        move.migrateErrors[kind] = (move.migrateErrors[kind] ?? 0) + 1;
        await src.migrate('127.0.0.1', toPort, '', 0, 5_000, 'REPLACE', 'KEYS', ...keys);
        move.keysMoved += keys.length;
      }
      move.batches++;
      await sleep(pauseMs);
    }
    // The new owner first (it then answers the slot without ASKING), then the old one, then the rest.
    await dst.cluster('SETSLOT', slot, 'NODE', dstId);
    await src.cluster('SETSLOT', slot, 'NODE', dstId);
    for (const [p, c] of clients) if (p !== fromPort && p !== toPort) await c.cluster('SETSLOT', slot, 'NODE', dstId);
    move.ms = Math.round(performance.now() - t0);
    return move;
  } finally {
    for (const c of clients.values()) c.disconnect();
  }
}

/** Every master's `INFO errorstats`, summed by error kind (MOVED, ASK, TRYAGAIN, ERR, ...). */
export async function errorStats(ports: number[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of ports) {
    const c = new Redis(p, '127.0.0.1');
    try {
      const text = await c.info('errorstats');
      for (const m of text.matchAll(/^errorstat_([^:]+):count=(\d+)/gm)) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    } finally {
      c.disconnect();
    }
  }
  return out;
}

/** CONFIG RESETSTAT on every master (errorstats start from 0). */
export async function resetStats(ports: number[]): Promise<void> {
  for (const p of ports) {
    const c = new Redis(p, '127.0.0.1');
    try {
      await c.config('RESETSTAT');
    } finally {
      c.disconnect();
    }
  }
}
