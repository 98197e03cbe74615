// Route groups: one canonical spelling of a request path, and the named groups of path patterns
// that make aliases of one route (`/v1/Orders/`, `/v1//orders`, `/v1/orders%2F`) count as one.

/**
 * The canonical form of a request path, so a limit cannot be dodged by spelling the URL
 * differently: drops the query and fragment, percent-decodes once (including `%2F`, so an encoded
 * slash becomes a separator), collapses repeated slashes, resolves `.` and `..` segments (never
 * above the root) and strips a trailing slash. Case is kept; matching folds it.
 *
 * Decoding happens exactly once: `%252F` becomes the text `%2F`, not a slash, so a double-encoded
 * path cannot turn into something the router would read differently.
 */
export function normalizePath(rawPath: string): string {
  let path = rawPath;
  const cut = path.search(/[?#]/);
  if (cut >= 0) path = path.slice(0, cut);
  path = decodeOnce(path);
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  return '/' + out.join('/');
}

/** Decodes each valid `%XX` escape (as UTF-8 where the bytes form it); invalid escapes stay as written. */
function decodeOnce(path: string): string {
  if (!path.includes('%')) return path;
  return path.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      // Not valid UTF-8: decode the bytes one by one as Latin-1 so a '%2F' inside still splits.
      return run.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    }
  });
}

/** One route group as configured: path patterns and, optionally, the methods it covers. */
export interface RouteGroupSpec {
  /**
   * Patterns over normalised paths, matched case-insensitively: literal segments, `*` or `:name`
   * for exactly one segment, and a final `**` for any number of segments (zero included).
   */
  paths: readonly string[];
  /** Upper-case methods; absent = every method. */
  methods?: readonly string[];
}

/** Undefined when `pattern` is a valid route pattern, otherwise what is wrong with it. */
export function checkRoutePattern(pattern: string): string | undefined {
  if (!pattern.startsWith('/')) return `pattern '${pattern}' must start with '/'`;
  const segments = normalizePath(pattern).split('/').slice(1);
  const deep = segments.indexOf('**');
  if (deep >= 0 && deep !== segments.length - 1) return `'**' may only be the last segment of '${pattern}'`;
  return undefined;
}

interface CompiledGroup {
  name: string;
  patterns: string[][];
  methods: ReadonlySet<string> | undefined;
}

/** Compiled route groups; the first group (in file order) that matches a request names its route. */
export class RouteGroups {
  private readonly groups: readonly CompiledGroup[];

  /** @param specs group name -> spec, in the order groups are tried. */
  constructor(specs: Readonly<Record<string, RouteGroupSpec>>) {
    this.groups = Object.entries(specs).map(([name, spec]) => ({
      name,
      patterns: spec.paths.map((p) => splitLower(normalizePath(p))),
      methods: spec.methods ? new Set(spec.methods.map((m) => m.toUpperCase())) : undefined,
    }));
  }

  /** Group names, in match order. */
  get names(): string[] {
    return this.groups.map((g) => g.name);
  }

  /**
   * The name of the group a request belongs to, or undefined when none matches.
   * @param method the HTTP method (any case).
   * @param rawPath the path as received (`req.originalUrl` or `req.url`); it is normalised here.
   */
  match(method: string, rawPath: string): string | undefined {
    const segments = splitLower(normalizePath(rawPath));
    const m = method.toUpperCase();
    for (const g of this.groups) {
      if (g.methods && !g.methods.has(m)) continue;
      if (g.patterns.some((p) => matchSegments(p, segments))) return g.name;
    }
    return undefined;
  }
}

function splitLower(normalized: string): string[] {
  return normalized === '/' ? [] : normalized.toLowerCase().split('/').slice(1);
}

function matchSegments(pattern: readonly string[], path: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === '**') return true;
    if (i >= path.length) return false;
    if (p !== '*' && !p.startsWith(':') && p !== path[i]) return false;
  }
  return pattern.length === path.length;
}
