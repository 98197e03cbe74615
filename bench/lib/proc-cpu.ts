// CPU a process has used, read from /proc: what the throttle benches charge to each of their processes
// (workers, Redis, the submitter).
import { readFileSync } from 'node:fs';

/** CPU seconds (user + system) a process has used so far, from /proc (Linux; 0 elsewhere). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}
