// The throttle's soak (test/helpers/soak/cli.ts, where `npm run test:faults` runs it from too): a private
// redis-server, worker processes, a seeded Zipf-skewed load above the lanes' rate with lane pauses and a
// worker SIGKILLed mid-job, then every documented guarantee checked after the drain. Exit code 1 on a
// violation. Flags and output: see that file.
//   npx tsx bench/soak.ts [--scenario cap|nocap|burst|quota] [--seed 1] [--duration 40] [--dump records.json] ...
import '../test/helpers/soak/cli.js';
