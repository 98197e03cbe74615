// The starts/s chart of one queue (uPlot): starts in each second against what the queue may start
// (its global cap, or its lane rate times its busy lanes), redrawn on every stream frame.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Point } from './live.js';

export function StartsChart({ points, width = 520 }: { points: Point[]; width?: number }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => [points.map((p) => p.t), points.map((p) => p.started), points.map((p) => p.ceiling)];
  useEffect(() => {
    if (!el.current) return;
    plot.current = new uPlot(
      {
        width,
        height: 160,
        legend: { show: true },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] } },
        series: [{}, { label: 'starts/s', stroke: '#2563eb', width: 2, fill: 'rgba(37,99,235,0.08)' }, { label: 'allowed/s', stroke: '#dc2626', width: 1, dash: [6, 4] }],
        axes: [{}, { size: 44 }],
      },
      data(),
      el.current,
    );
    return () => plot.current?.destroy();
  }, []);
  useEffect(() => {
    plot.current?.setData(data());
  });
  return <div class="chart" ref={el} />;
}
