// A deadline around a Redis call: a decision must return within its policy's timeout even when
// Redis is slow or a packet is lost, whatever ioredis does with the command afterwards.
import { SluiceError } from '../errors.js';

/** Resolves or rejects like `work()`, or rejects with SLUICE_ERR_REDIS_UNAVAILABLE after `ms`. */
export function withDeadline<T>(work: () => Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `${what}: no answer from Redis within ${ms} ms`));
    }, ms);
    work().then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
