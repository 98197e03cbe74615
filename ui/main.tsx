// The dashboard's entry: a hash router (#/, #/queue/<q>, #/lane/<q>/<lane>) over three views, one
// live-figures stream for the whole page, and the logout form.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { LanePage } from './lane.js';
import { useLive } from './live.js';
import { Overview } from './overview.js';
import { QueuePage } from './queue.js';
import './style.css';

function useHash(): string {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const on = () => setHash(window.location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function App() {
  const live = useLive();
  const parts = useHash()
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const [view, a, b] = parts;
  return (
    <>
      <header>
        <a class="brand" href="#/">
          sluice
        </a>
        <span class={`status ${live.status}`} data-field="status">
          {live.status}
        </span>
        <form method="post" action="/ui/logout">
          <button type="submit">Log out</button>
        </form>
      </header>
      <main>
        {view === 'queue' && a ? <QueuePage queue={a} live={live} /> : view === 'lane' && a && b ? <LanePage queue={a} lane={b} /> : <Overview live={live} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
