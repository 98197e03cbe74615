// The queues overview: per queue its live figures (the stream's, equal to GET /v1/admin/queues) and
// the starts/s chart against what it may start.
import { enc, type QueueOverview } from './api.js';
import { StartsChart } from './chart.js';
import type { Live } from './live.js';

function Figure({ name, label, value }: { name: string; label: string; value: string | number }) {
  return (
    <div class="figure">
      <dt>{label}</dt>
      <dd data-field={name}>{value}</dd>
    </div>
  );
}

export function QueueFigures({ q }: { q: QueueOverview }) {
  const gc = q.live.globalCap;
  return (
    <dl class="figures">
      <Figure name="startedLast1s" label="starts/s" value={q.live.startedLast1s} />
      <Figure name="ratePerSecond" label="rate per lane" value={`${q.config.ratePerSecond}/s`} />
      <Figure name="refusedPerSecond" label="refused/s (60 s)" value={(q.live.refusedLast60s / 60).toFixed(2)} />
      <Figure name="queued" label="queued" value={q.live.queued} />
      <Figure name="active" label="active" value={q.live.active} />
      <Figure name="failed" label="failed" value={q.live.failed} />
      <Figure name="busyLanes" label="busy lanes" value={q.live.busyLanes} />
      <Figure name="globalCap" label="global cap in use" value={gc ? `${Math.round(gc.inUse * 100)}% of ${gc.ratePerSecond}/s` : 'none'} />
      {gc?.shards && <Figure name="shardShares" label="cap per shard" value={gc.shards.map((s) => s.share).join(' / ') + ' /s'} />}
    </dl>
  );
}

export function Badges({ q }: { q: QueueOverview }) {
  return (
    <>
      {q.live.paused && <span class="badge paused">paused</span>}
      {q.live.draining && <span class="badge draining">draining</span>}
    </>
  );
}

export function Overview({ live }: { live: Live }) {
  if (live.error) return <p class="error" role="alert">{live.error}</p>;
  if (!live.queues) return <p>Loading…</p>;
  if (live.queues.length === 0) return <p>No queues in the rules file.</p>;
  return (
    <div class="queues">
      {live.queues.map((q) => (
        <section class="queue card" data-queue={q.name} key={q.name}>
          <h2>
            <a href={`#/queue/${enc(q.name)}`}>{q.name}</a> <Badges q={q} />
          </h2>
          <QueueFigures q={q} />
          <StartsChart points={live.history.get(q.name) ?? []} />
        </section>
      ))}
    </div>
  );
}
