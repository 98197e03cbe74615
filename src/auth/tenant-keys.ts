// The compiled `auth:` section: digests of every configured key mapped to their tenant, and the
// lookup a request's key goes through. Raw keys from the environment or a file are hashed on load.
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { digestOf, digestOfSpec, sameDigest } from './key-hash.js';
import type { AuthSpec, KeySourceSpec } from './schema.js';

/** A tenant: its name and plan. */
export interface Tenant {
  readonly name: string;
  readonly plan?: string;
}

/** Authentication in force: `none`, or the tenants with their key digests. */
export type AuthRules = { readonly mode: 'none' } | { readonly mode: 'keys'; readonly keys: TenantKeys };

/** A key source that cannot be read (an unset variable, an unreadable file), with its field path. */
export interface KeySourceProblem {
  path: (string | number)[];
  message: string;
}

export class TenantKeys {
  /** hex digest -> tenant and the digest itself (compared in constant time after the lookup). */
  private readonly byDigest = new Map<string, { tenant: Tenant; digest: Buffer }>();
  readonly tenants: ReadonlyMap<string, Tenant>;

  constructor(entries: readonly { tenant: Tenant; digests: readonly Buffer[] }[]) {
    const tenants = new Map<string, Tenant>();
    for (const { tenant, digests } of entries) {
      tenants.set(tenant.name, tenant);
      for (const digest of digests) this.byDigest.set(digest.toString('hex'), { tenant, digest });
    }
    this.tenants = tenants;
  }

  /**
   * The tenant whose key `presented` is, or undefined. The map is keyed by the SHA-256 of the
   * presented key, so its timing depends only on the caller's own guess; the match is then confirmed
   * with a constant-time comparison.
   */
  tenantOf(presented: string): Tenant | undefined {
    const digest = digestOf(presented);
    const found = this.byDigest.get(digest.toString('hex'));
    return found && sameDigest(found.digest, digest) ? found.tenant : undefined;
  }

  get keyCount(): number {
    return this.byDigest.size;
  }
}

/** The digest a key source stands for: the hash as given, or the hash of the raw key read now. */
export function digestOfSource(source: KeySourceSpec, baseDir: string, env: NodeJS.ProcessEnv = process.env): Buffer | string {
  if (typeof source === 'string') return digestOfSpec(source);
  if ('env' in source) {
    const raw = env[source.env];
    if (raw === undefined || raw.length === 0) return `environment variable ${source.env} is not set`;
    return digestOf(raw);
  }
  const path = isAbsolute(source.file) ? source.file : resolve(baseDir, source.file);
  try {
    // A trailing newline (echo > file, a Kubernetes secret) is not part of the key.
    const raw = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    if (raw.length === 0) return `key file ${source.file} is empty`;
    return digestOf(raw);
  } catch (e) {
    return `cannot read key file ${source.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
}

/** Compiles a validated `auth:` section; unreadable key sources come back as problems with their paths. */
export function compileAuth(spec: AuthSpec, baseDir: string, env: NodeJS.ProcessEnv = process.env): { auth: AuthRules; problems: KeySourceProblem[] } {
  if (spec === 'none') return { auth: { mode: 'none' }, problems: [] };
  const problems: KeySourceProblem[] = [];
  const entries = Object.entries(spec.tenants).map(([name, t]) => {
    const digests: Buffer[] = [];
    t.keys.forEach((source, i) => {
      const d = digestOfSource(source, baseDir, env);
      if (typeof d === 'string') problems.push({ path: ['auth', 'tenants', name, 'keys', i], message: d });
      else digests.push(d);
    });
    return { tenant: { name, ...(t.plan !== undefined ? { plan: t.plan } : {}) }, digests };
  });
  return { auth: { mode: 'keys', keys: new TenantKeys(entries) }, problems };
}
