// At the start of serve/worker/dev: a Redis that refuses the credentials (NOAUTH, WRONGPASS) or the
// user's rights (NOPERM) gets one clear error line naming the cause and the fix, not a stream of
// reconnect errors (docs/operations.md#least-privilege-redis-user).
import type { Logger } from 'pino';
import type { RedisClient } from '../redis/connection.js';

const CAUSES: { code: string; fix: string }[] = [
  { code: 'NOAUTH', fix: 'Redis requires a password: put user and password in the URL (redis://user:password@host:port)' },
  { code: 'WRONGPASS', fix: 'Redis refused the user or password in the URL: check SLUICE_REDIS_URL (redis://user:password@host:port)' },
  { code: 'NOPERM', fix: "the Redis user lacks a command or key pattern sluice needs: grant the ACL in docs/operations.md#least-privilege-redis-user" },
];

/** Logs one error line per distinct refusal cause (never the URL or password); returns a stop function. */
export function watchAuthErrors(client: RedisClient, logger: Logger): () => void {
  const seen = new Set<string>();
  const onError = (error: Error) => {
    const cause = CAUSES.find((c) => error.message.startsWith(c.code) || error.message.includes(` ${c.code} `));
    if (!cause || seen.has(error.message)) return;
    seen.add(error.message);
    logger.error({ event: 'redis_auth_refused', code: cause.code, reply: error.message }, `Redis refused sluice (${cause.code}): ${cause.fix}`);
  };
  client.on('error', onError);
  return () => client.off('error', onError);
}
