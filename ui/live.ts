// The live figures: GET /v1/admin/queues once for the first paint, then GET /v1/admin/stream (one
// EventSource for the whole page), keeping the last two minutes of each queue's starts for the chart.
import { useEffect, useState } from 'preact/hooks';
import { api, type QueueOverview, type Queues } from './api.js';

/** Points kept per queue (one a second). */
const HISTORY = 120;

export interface Point {
  t: number;
  started: number;
  ceiling: number;
}

export interface Live {
  queues: QueueOverview[] | undefined;
  at: number;
  status: 'connecting' | 'live' | 'reconnecting';
  history: Map<string, Point[]>;
  error?: string;
}

/** What a queue can start per second at most now: its global cap, else its lane rate times its busy lanes. */
export function ceilingOf(q: QueueOverview): number {
  return q.config.globalRatePerSecond ?? q.config.ratePerSecond * q.live.busyLanes;
}

export function useLive(): Live {
  const [live, setLive] = useState<Live>({ queues: undefined, at: 0, status: 'connecting', history: new Map() });
  useEffect(() => {
    const history = new Map<string, Point[]>();
    const take = (queues: QueueOverview[], at: number, status: Live['status']) => {
      const t = Math.floor(at / 1000);
      for (const q of queues) {
        const points = history.get(q.name) ?? [];
        if (points[points.length - 1]?.t !== t) points.push({ t, started: q.live.startedLast1s, ceiling: ceilingOf(q) });
        if (points.length > HISTORY) points.shift();
        history.set(q.name, points);
      }
      setLive({ queues, at, status, history });
    };
    let streamed = false;
    void api<Queues>('GET', '/v1/admin/queues')
      .then((body) => {
        if (!streamed) take(body.queues, Date.now(), 'connecting');
      })
      .catch((e: Error) => setLive((l) => ({ ...l, error: e.message })));
    const source = new EventSource('/v1/admin/stream');
    source.addEventListener('figures', (e) => {
      streamed = true;
      const body = JSON.parse((e as MessageEvent<string>).data) as Queues & { at: string };
      take(body.queues, Date.parse(body.at), 'live');
    });
    source.addEventListener('error', () => {
      setLive((l) => ({ ...l, status: 'reconnecting' }));
      // A stream refused for good (401: the session ended) is not retried by the browser: ask the API, which sends us to the login.
      if (source.readyState === EventSource.CLOSED) void api('GET', '/v1/admin/queues').catch(() => undefined);
    });
    return () => source.close();
  }, []);
  return live;
}
