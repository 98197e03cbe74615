// The docs' own links land: every relative link of README.md and docs/*.md to a file names a file that
// exists, and every `#anchor` (in the same page or another) names a heading of that page (as GitHub
// makes its anchor) or an explicit `<a id="...">`. Two links that led nowhere were found this way.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, `_`, `-` and spaces kept), spaces to `-`. */
function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a page offers: its headings' (a repeated one gets -1, -2, ... as on GitHub) and its `<a id>`s. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  // Headings outside fenced code blocks only.
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading] of prose.matchAll(/^#{1,6} (.*)$/gm)) {
    const base = headingAnchor(heading!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of markdown.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(id!);
  return anchors;
}

/** Every relative link of `page` (path inside the repository) that does not land, as readable lines. */
function brokenLinks(page: string, read: (path: string) => string | undefined): string[] {
  const text = read(page)!;
  const prose = text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  const problems: string[] = [];
  for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
    const [path, anchor] = target!.split('#') as [string, string | undefined];
    const file = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)));
    const body = read(file);
    if (body === undefined) {
      problems.push(`${page}: ${target} — no file ${file}`);
      continue;
    }
    if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(body).has(anchor)) problems.push(`${page}: ${target} — no heading or <a id> '${anchor}' in ${file}`);
  }
  return problems;
}

const readRepo = (path: string) => {
  const full = join(ROOT, path);
  if (!existsSync(full)) return undefined;
  try {
    return readFileSync(full, 'utf8');
  } catch {
    return ''; // a directory: it exists
  }
};

describe('the docs link to what exists', () => {
  it('makes the anchors GitHub makes', () => {
    expect(headingAnchor('The global cap under load: the dispatcher (`bench/global-cap.ts`, issue 13)')).toBe('the-global-cap-under-load-the-dispatcher-benchglobal-capts-issue-13');
    expect(headingAnchor('`POST /v1/queues/{queue}/jobs` — submit a job')).toBe('post-v1queuesqueuejobs--submit-a-job');
    expect([...anchorsOf('# A\n## Commands\n```\n# not a heading\n```\n### Commands\n<a id="x"></a>')]).toEqual(['a', 'commands', 'commands-1', 'x']);
  });

  it('finds a link that leads nowhere (the check can fail)', () => {
    const pages: Record<string, string> = { 'docs/a.md': '# Top\nsee [b](b.md#missing), [top](#top), [c](c.md), [x](https://example.com/#y)', 'docs/b.md': '# Present' };
    expect(brokenLinks('docs/a.md', (p) => pages[p])).toEqual(['docs/a.md: b.md#missing — no heading or <a id> \'missing\' in docs/b.md', 'docs/a.md: c.md — no file docs/c.md']);
  });

  it.each(PAGES)('%s: every relative link and anchor lands', (page) => {
    expect(brokenLinks(page, readRepo)).toEqual([]);
  });
});
