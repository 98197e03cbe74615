// Just enough of RFC 8941 structured fields for the IETF RateLimit headers: a list of items, each a
// token, string or integer with `;key=value` parameters, and a dictionary of `key=value` members.
// Anything else is malformed (undefined), never an exception.

export interface SfItem {
  /** The item's bare value: a string's content, a token or an integer as written. */
  value: string;
  params: Record<string, string>;
}

const PARAM = /^\s*([a-z*][a-z0-9_.*-]*)(?:=("(?:[^"\\]|\\.)*"|[^;,"\s]+))?\s*$/;

/** Splits at commas outside double quotes. */
function splitOutsideQuotes(text: string, sep: string): string[] {
  const parts: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\\' && quoted) i++;
    else if (ch === '"') quoted = !quoted;
    else if (ch === sep && !quoted) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return quoted ? [] : parts;
}

const unquote = (v: string) => (v.startsWith('"') ? v.slice(1, -1).replace(/\\(.)/g, '$1') : v);

function params(parts: string[]): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const p of parts) {
    const m = PARAM.exec(p);
    if (!m) return undefined;
    out[m[1]!] = m[2] === undefined ? '?1' : unquote(m[2]);
  }
  return out;
}

/** A list of items, or undefined when any member is malformed. */
export function parseList(text: string): SfItem[] | undefined {
  const items: SfItem[] = [];
  for (const member of splitOutsideQuotes(text, ',')) {
    const [head, ...rest] = splitOutsideQuotes(member, ';');
    const value = head?.trim() ?? '';
    if (!/^("(?:[^"\\]|\\.)*"|[A-Za-z*][A-Za-z0-9_.:%*/!#$&'+^`|~-]*|-?\d+(\.\d+)?)$/.test(value)) return undefined;
    const p = params(rest);
    if (!p) return undefined;
    items.push({ value: unquote(value), params: p });
  }
  return items.length ? items : undefined;
}

/** A dictionary `k=v, k=v` (values bare or quoted), or undefined when malformed. */
export function parseDictionary(text: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const member of splitOutsideQuotes(text, ',')) {
    const m = PARAM.exec(member.split(';')[0] ?? '');
    if (!m || m[2] === undefined) return undefined;
    out[m[1]!] = unquote(m[2]);
  }
  return Object.keys(out).length ? out : undefined;
}
