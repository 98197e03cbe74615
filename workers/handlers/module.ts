// The shipped handler for in-house work: a function exported by a JS (or, under tsx, TS) module.
import { pathToFileURL } from 'node:url';
import type { JobHandler } from '../../src/index.js';

export interface ModuleHandlerSpec {
  /** Absolute path of the module. */
  path: string;
  /** Export name (default `default`). */
  exportName: string;
}

export async function moduleHandler(spec: ModuleHandlerSpec): Promise<JobHandler> {
  const mod = (await import(pathToFileURL(spec.path).href)) as Record<string, unknown>;
  const fn = mod[spec.exportName];
  if (typeof fn !== 'function') throw new Error(`handler module ${spec.path} exports no function '${spec.exportName}'`);
  return fn as JobHandler;
}
