// Sending a script on a cluster with no send after its caller's deadline and no second run. ioredis's
// Cluster follows redirections (MOVED, ASK, TRYAGAIN) by sending the same command again: those replies
// say the script did not run, so following one at once is safe, but following it after the caller was
// answered by the fail mode would charge a call whose caller was told otherwise. The guard sits on the
// command's `reject`, the one path every redirection and retry goes through. A command that never left
// this process (its node's connection was not up yet) is sent again, a little later, while the caller
// still waits; one that was written is never sent again after a failure (it may have run).
import { Command, type Cluster } from 'ioredis';

/** Wait before sending again a command that never reached a node (its connection is being made). */
const UNSENT_RETRY_MS = 10;

/**
 * Sends `name` (fcall / evalsha / eval) with `args` on `cluster`. While `pending()` is true a redirection is
 * followed as ioredis does; once it is false (the deadline passed) the command ends with the error it
 * got, and is never sent again.
 */
export function sendWhilePending(cluster: Cluster, name: 'fcall' | 'evalsha' | 'eval', args: readonly (string | number)[], pending: () => boolean): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const command = new Command(name, [...args], { replyEncoding: 'utf8' });
      let written = false;
      const toWritable = command.toWritable.bind(command);
      command.toWritable = (socket) => {
        written = true;
        return toWritable(socket);
      };
      const settle = command.reject;
      let handler = settle;
      // The Cluster reads `reject` (to keep it) and then replaces it with its redirection handler: reads
      // after that get a function that hands an error to that handler only while the caller still waits.
      const guarded = (error: Error) => (pending() ? handler : settle).call(command, error);
      Object.defineProperty(command, 'reject', {
        configurable: true,
        get: () => (handler === settle ? settle : guarded),
        set: (fn: (error: Error) => void) => {
          handler = fn;
        },
      });
      (cluster.sendCommand(command) as Promise<unknown>).then(resolve, (error: unknown) => {
        if (!written && pending()) setTimeout(attempt, UNSENT_RETRY_MS);
        else reject(error);
      });
    };
    attempt();
  });
}
