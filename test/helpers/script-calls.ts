// Counting script calls on a server: sluice calls a script by FCALL once its function library is loaded
// (src/redis/scripts.ts), by EVALSHA before that, and by EVAL when Redis did not have it.

/** The commands that run one of sluice's scripts. */
export const SCRIPT_COMMANDS: ReadonlySet<string> = new Set(['fcall', 'evalsha', 'eval']);

/** Script runs counted in the text of INFO commandstats. */
export function scriptCallsIn(commandstats: string): number {
  let n = 0;
  for (const m of commandstats.matchAll(/cmdstat_(fcall|evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
  return n;
}

/** The commands a script call is first sent as (an EVAL follows one Redis did not have, with the same keys and arguments). */
export const FIRST_SEND_COMMANDS: ReadonlySet<string> = new Set(['fcall', 'evalsha']);
