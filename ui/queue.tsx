// One queue: its figures, drain/undrain, the busiest lanes (and a search by key, hashed by the server
// exactly as a submit stores it), and its failed jobs with retry.
import { useEffect, useState } from 'preact/hooks';
import { api, enc, type FailedJobs, type LaneId, type LanePage, type Retried } from './api.js';
import type { Live } from './live.js';
import { Badges, QueueFigures } from './overview.js';

/** Calls `load` now and every `ms` while the view is shown. */
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[]): [T | undefined, string | undefined, () => void] {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    const run = () =>
      load().then(
        (v) => live && (setValue(v), setError(undefined)),
        (e: Error) => live && setError(e.message),
      );
    void run();
    const timer = setInterval(run, ms);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [...deps, n]);
  return [value, error, () => setN((x) => x + 1)];
}

function Lanes({ queue }: { queue: string }) {
  const [page, error] = usePoll(() => api<LanePage>('GET', `/v1/admin/queues/${enc(queue)}/lanes?limit=25`), 2000, [queue]);
  const [key, setKey] = useState('');
  const [searchError, setSearchError] = useState<string | undefined>(undefined);
  const search = async (e: Event) => {
    e.preventDefault();
    try {
      const { lane } = await api<LaneId>('POST', `/v1/admin/queues/${enc(queue)}/lane-id`, { key });
      window.location.hash = `#/lane/${enc(queue)}/${enc(lane)}`;
    } catch (err) {
      setSearchError((err as Error).message);
    }
  };
  return (
    <section class="card">
      <h3>Busiest lanes {page && <small data-field="laneTotal">{page.total} busy</small>}</h3>
      <form class="search" onSubmit={search}>
        <input name="key" placeholder="lane key (tenant, customer, …)" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
        <button type="submit">Find lane</button>
      </form>
      {searchError && <p class="error">{searchError}</p>}
      {error && <p class="error">{error}</p>}
      <table class="lanes">
        <thead>
          <tr>
            <th>lane</th>
            <th>queued units</th>
          </tr>
        </thead>
        <tbody>
          {page?.lanes.map((l) => (
            <tr key={l.lane} data-lane={l.lane}>
              <td>
                <a href={`#/lane/${enc(queue)}/${enc(l.lane)}`}>{l.lane}</a>
              </td>
              <td>{l.depth}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Failed({ queue }: { queue: string }) {
  const [page, error, reload] = usePoll(() => api<FailedJobs>('GET', `/v1/admin/queues/${enc(queue)}/jobs?limit=25`), 3000, [queue]);
  const [message, setMessage] = useState<string | undefined>(undefined);
  const retry = async (id: string) => {
    try {
      const r = await api<Retried>('POST', `/v1/admin/queues/${enc(queue)}/jobs/${enc(id)}/retry`);
      setMessage(`job ${r.id} queued again, starts ${new Date(r.startsAt).toLocaleTimeString()}`);
    } catch (err) {
      setMessage(`retry of ${id} refused: ${(err as Error).message}`);
    }
    reload();
  };
  return (
    <section class="card">
      <h3>Failed jobs {page && <small data-field="failedTotal">{page.total}</small>}</h3>
      {message && <p class="note" role="status">{message}</p>}
      {error && <p class="error">{error}</p>}
      <table class="failed">
        <thead>
          <tr>
            <th>job</th>
            <th>lane</th>
            <th>attempts</th>
            <th>reason</th>
            <th>failed at</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {page?.jobs.map((j) => (
            <tr key={j.id} data-job={j.id}>
              <td>{j.id}</td>
              <td>{j.lane ?? ''}</td>
              <td>{j.attemptsMade}</td>
              <td>{j.failedReason ?? ''}</td>
              <td>{j.finishedAt ? new Date(j.finishedAt).toLocaleTimeString() : ''}</td>
              <td>
                <button onClick={() => void retry(j.id)}>Retry</button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function QueuePage({ queue, live }: { queue: string; live: Live }) {
  const q = live.queues?.find((x) => x.name === queue);
  const [error, setError] = useState<string | undefined>(undefined);
  const drain = async (on: boolean) => {
    try {
      await api('POST', `/v1/admin/queues/${enc(queue)}/${on ? 'drain' : 'undrain'}`);
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div class="queue-page" data-queue={queue}>
      <h2>
        <a href="#/">queues</a> / {queue} {q && <Badges q={q} />}
      </h2>
      {q && <QueueFigures q={q} />}
      <p>
        {q?.live.draining ? (
          <button onClick={() => void drain(false)}>Undrain (take submits again)</button>
        ) : (
          <button onClick={() => void drain(true)}>Drain (refuse new submits)</button>
        )}
      </p>
      {error && <p class="error">{error}</p>}
      <Lanes queue={queue} />
      <Failed queue={queue} />
    </div>
  );
}
