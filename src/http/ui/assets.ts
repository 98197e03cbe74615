// The dashboard's bundle (dist/ui/, built by scripts/build-ui.mjs with esbuild): found from the
// package root, so the same code serves it when run from src/ (tests, tsx) and from dist/ (the
// package). The files are read once, when the app is made: a request never touches the disk.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** The folder of the package this file belongs to (the first one up with a package.json). */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) return from;
    dir = up;
  }
  return dir;
}

/** The built files by name; empty when the bundle was not built. */
export function loadAssets(dir = join(packageRoot(), 'dist', 'ui')): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) assets.set(name, { body: readFileSync(join(dir, name)), type });
  }
  return assets;
}
