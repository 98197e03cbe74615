// One lane: depth, limits in force, plan and override, its pause, the queued jobs with their predicted
// starts (refreshed every second), and pause/resume.
import { useState } from 'preact/hooks';
import { api, ApiError, enc, type LaneDetail } from './api.js';
import { usePoll } from './queue.js';

/** A pause without an end is ten years: a start past a year is "when resumed", not a date. */
const YEAR_S = 365 * 86_400;

const inSeconds = (iso: string, now: number) => {
  const s = (Date.parse(iso) - now) / 1000;
  return s <= 0 ? 'now' : s > YEAR_S ? 'when resumed' : `in ${s.toFixed(1)} s`;
};

const startText = (iso: string, now: number) => {
  const s = (Date.parse(iso) - now) / 1000;
  return s > YEAR_S ? 'when resumed' : `${new Date(iso).toLocaleTimeString()} (${inSeconds(iso, now)})`;
};

export function LanePage({ queue, lane }: { queue: string; lane: string }) {
  const path = `/v1/admin/queues/${enc(queue)}/lanes/${enc(lane)}`;
  const [detail, error, reload] = usePoll(
    () => api<LaneDetail>('GET', path).catch((e: unknown) => (e instanceof ApiError && e.status === 404 ? null : Promise.reject(e))),
    1000,
    [path],
  );
  const [message, setMessage] = useState<string | undefined>(undefined);
  const act = async (verb: 'pause' | 'resume') => {
    try {
      await api('POST', `${path}/${verb}`, verb === 'pause' ? {} : undefined);
      setMessage(verb === 'pause' ? 'lane paused' : 'lane resumed');
    } catch (err) {
      setMessage(`${verb} failed: ${(err as Error).message}`);
    }
    reload();
  };
  const now = Date.now();
  const paused = detail?.pausedUntil !== undefined && Date.parse(detail.pausedUntil) > now;
  const pausedText = !paused ? 'running' : Date.parse(detail!.pausedUntil!) - now > 365 * 86_400_000 ? 'paused until resumed' : `paused until ${new Date(detail!.pausedUntil!).toLocaleString()}`;
  return (
    <div class="lane-page" data-lane={lane}>
      <h2>
        <a href="#/">queues</a> / <a href={`#/queue/${enc(queue)}`}>{queue}</a> / {lane}
      </h2>
      {error && <p class="error">{error}</p>}
      {detail === null && <p data-field="empty">This lane has no queued work, pause or override now.</p>}
      <section class="card">
        <dl class="figures">
          <div class="figure">
            <dt>state</dt>
            <dd data-field="paused">{detail ? pausedText : '—'}</dd>
          </div>
          <div class="figure">
            <dt>queued units</dt>
            <dd data-field="depth">{detail?.depth ?? 0}</dd>
          </div>
          <div class="figure">
            <dt>queued jobs</dt>
            <dd data-field="jobs">{detail?.jobs ?? 0}</dd>
          </div>
          {detail && (
            <>
              <div class="figure">
                <dt>limits</dt>
                <dd data-field="limits">
                  {detail.limits.ratePerSecond}/s, capacity {detail.limits.capacity}, burst {detail.limits.burst}
                </dd>
              </div>
              <div class="figure">
                <dt>plan</dt>
                <dd data-field="plan">{detail.plan ?? 'default'}</dd>
              </div>
              <div class="figure">
                <dt>override</dt>
                <dd data-field="override">
                  {detail.override
                    ? `${detail.override.ratePerSecond !== undefined ? `${detail.override.ratePerSecond}/s ` : ''}by ${detail.override.by}${detail.override.until ? ` until ${new Date(detail.override.until).toLocaleString()}` : ''}`
                    : 'none'}
                </dd>
              </div>
              <div class="figure">
                <dt>next start</dt>
                <dd data-field="nextStart">{inSeconds(detail.nextStartAt, now)}</dd>
              </div>
              {detail.quotas?.map((q, i) => (
                <div class="figure" key={`quota${i}`}>
                  <dt>{`${q.period === 'day' ? 'daily' : 'monthly'} ${q.scope} quota`}</dt>
                  <dd data-field={`quota${i}`}>
                    {q.used} of {q.limit} {q.unit}, resets {new Date(q.resetsAt).toLocaleString()} ({q.timeZone})
                  </dd>
                </div>
              ))}
            </>
          )}
        </dl>
        <p>
          {paused ? (
            <button data-action="resume" onClick={() => void act('resume')}>
              Resume lane
            </button>
          ) : (
            <button data-action="pause" onClick={() => void act('pause')}>
              Pause lane
            </button>
          )}
        </p>
        {message && <p class="note" role="status">{message}</p>}
      </section>
      <section class="card">
        <h3>Queued jobs (first 100, in start order)</h3>
        <table class="queued">
          <thead>
            <tr>
              <th>job</th>
              <th>cost</th>
              <th>predicted start</th>
            </tr>
          </thead>
          <tbody>
            {detail?.queued.map((j) => (
              <tr key={j.id} data-job={j.id}>
                <td>{j.id}</td>
                <td>{j.cost}</td>
                <td title={j.predictedStartAt}>{startText(j.predictedStartAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </div>
  );
}
