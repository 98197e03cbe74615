// Bundles the dashboard (ui/) into dist/ui/app.js and app.css with esbuild: preact, uPlot and the
// styles in two files, no CDN, nothing fetched at run time. Part of `npm run build`; `npm test`
// runs it first (pretest) and the browser test builds it when it is missing.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const started = Date.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: 'ui/main.tsx' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: 'dist/ui',
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
});
const bytes = Object.entries(result.metafile.outputs).map(([f, o]) => `${f.split('/').pop()} ${(o.bytes / 1024).toFixed(1)} KiB`);
console.error(`build-ui: ${bytes.join(', ')} in ${Date.now() - started} ms`);
