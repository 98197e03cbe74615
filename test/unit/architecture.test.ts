// docs/architecture.md's rooms table against the import graph (madge, type-only imports included):
// every file sits in a listed room, imports only the rooms its row names, rows name only rooms of
// earlier rows (the floors), and no rooms import each other around a loop.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import madge from 'madge';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC = new URL('../../docs/architecture.md', import.meta.url);
/** The folders whose TypeScript the map covers. */
const SCANNED = ['src', 'workers', 'test', 'bench'];

/** One row of the table: a room and the rooms it may import, in the table's order (bottom floor first). */
interface Row {
  room: string;
  mayImport: string[];
}

/** The rows of the table after the `<!-- rooms-table -->` marker; `src/*` stands for every room of src/. */
function parseRooms(doc: string): Row[] {
  const start = doc.indexOf('<!-- rooms-table -->');
  if (start < 0) throw new Error('docs/architecture.md has no <!-- rooms-table --> marker');
  const rows: Row[] = [];
  for (const line of doc.slice(start).split('\n').slice(1)) {
    if (!line.startsWith('|')) {
      if (rows.length) break;
      continue;
    }
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    const room = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!room) continue; // the header and the separator
    rows.push({ room, mayImport: [...(cells[3] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!) });
  }
  return rows;
}

/** The room of a file: the listed room with the longest matching name (a folder by prefix, a file exactly). */
function roomOf(file: string, rooms: readonly string[]): string | undefined {
  let best: string | undefined;
  for (const room of rooms) {
    const fits = room.endsWith('/') ? file.startsWith(room) : file === room;
    if (fits && (!best || room.length > best.length)) best = room;
  }
  return best;
}

/** Every way the graph (file -> files it imports) breaks the table, as readable lines (empty when it keeps it). */
function roomProblems(graph: Readonly<Record<string, readonly string[]>>, rows: readonly Row[]): string[] {
  const problems: string[] = [];
  const rooms = rows.map((r) => r.room);
  const expand = (name: string) => (name === 'src/*' ? rooms.filter((r) => r.startsWith('src/')) : [name]);

  // The table itself: each row names only rooms of earlier rows, so the allowed imports are floors.
  const allowed = new Map<string, Set<string>>();
  rows.forEach((row, i) => {
    if (allowed.has(row.room)) problems.push(`table: ${row.room} is listed twice`);
    const may = new Set<string>();
    for (const name of row.mayImport) {
      for (const target of expand(name)) {
        const at = rooms.indexOf(target);
        if (at < 0) problems.push(`table: ${row.room} names ${target}, which is not a room of the table`);
        else if (at >= i && target !== row.room) problems.push(`table: ${row.room} names ${target}, which is not on a lower floor (a later row)`);
        else if (at < i) may.add(target);
      }
    }
    allowed.set(row.room, may);
  });

  // The code: every file in a room, every import between rooms allowed.
  const edges = new Map<string, Map<string, string>>(); // room -> imported room -> one example
  for (const [file, deps] of Object.entries(graph)) {
    const from = roomOf(file, rooms);
    if (!from) {
      problems.push(`${file}: in no room of the table`);
      continue;
    }
    for (const dep of deps) {
      const to = roomOf(dep, rooms);
      if (!to) {
        problems.push(`${dep} (imported by ${file}): in no room of the table`);
        continue;
      }
      if (to === from) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${file} -> ${dep}`);
      if (!allowed.get(from)?.has(to)) problems.push(`${file} imports ${dep}: ${from} may not import ${to}`);
    }
  }
  for (const cycle of roomCycles(edges)) problems.push(`rooms import each other around a loop: ${cycle.join(' -> ')}`);
  return problems;
}

/** The loops of the room graph: one per strongly connected component of more than one room (Tarjan). */
function roomCycles(edges: ReadonlyMap<string, ReadonlyMap<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('the rooms check', () => {
  const rows: Row[] = [
    { room: 'src/a.ts', mayImport: [] },
    { room: 'src/low/', mayImport: ['src/a.ts'] },
    { room: 'src/high/', mayImport: ['src/low/', 'src/a.ts'] },
    { room: 'test/', mayImport: ['src/*'] },
  ];

  it('accepts imports down the floors, inside a room, and src/* from a later row', () => {
    const graph = {
      'src/a.ts': [],
      'src/low/x.ts': ['src/a.ts', 'src/low/y.ts'],
      'src/low/y.ts': [],
      'src/high/z.ts': ['src/low/x.ts'],
      'test/t.test.ts': ['src/high/z.ts', 'src/a.ts'],
    };
    expect(roomProblems(graph, rows)).toEqual([]);
  });

  it('names an import a row does not allow, and a loop between rooms', () => {
    const graph = { 'src/low/x.ts': ['src/high/z.ts'], 'src/high/z.ts': ['src/low/x.ts'], 'src/a.ts': ['test/t.test.ts'] };
    expect(roomProblems(graph, rows)).toEqual([
      'src/low/x.ts imports src/high/z.ts: src/low/ may not import src/high/',
      'src/a.ts imports test/t.test.ts: src/a.ts may not import test/',
      'rooms import each other around a loop: src/high/ -> src/low/',
    ]);
  });

  it('names a file in no room, and a table whose row names a higher or unknown room', () => {
    const bad: Row[] = [
      { room: 'src/a.ts', mayImport: ['src/low/'] },
      { room: 'src/low/', mayImport: ['src/nowhere/'] },
    ];
    expect(roomProblems({ 'lib/x.ts': [] }, bad)).toEqual([
      'table: src/a.ts names src/low/, which is not on a lower floor (a later row)',
      'table: src/low/ names src/nowhere/, which is not a room of the table',
      'lib/x.ts: in no room of the table',
    ]);
  });
});

describe('docs/architecture.md', () => {
  const rows = parseRooms(readFileSync(DOC, 'utf8'));

  it('lists the rooms of the code', () => {
    expect(rows.map((r) => r.room)).toEqual(expect.arrayContaining(['src/errors.ts', 'src/request/', 'src/headers/', 'src/rules/', 'src/http/', 'src/sluice.ts', 'src/index.ts', 'src/express.ts', 'workers/', 'test/helpers/', 'test/', 'bench/']));
  });

  it('is kept by every import of src/, workers/, test/ and bench/', async () => {
    const result = await madge(SCANNED.map((d) => ROOT + d), { baseDir: ROOT, fileExtensions: ['ts'] });
    // A file madge could not resolve would drop out of the graph unseen: there must be none.
    expect(result.warnings().skipped).toEqual([]);
    const graph = result.obj();
    // The scan really covers the code (not an empty graph that passes trivially).
    expect(Object.keys(graph)).toEqual(expect.arrayContaining(['src/index.ts', 'src/http/app.ts', 'workers/run.ts', 'bench/http.ts', 'test/helpers/redis-server.ts']));
    expect(roomProblems(graph, rows)).toEqual([]);
  }, 180_000);
});
