// Waiting in-process, for the instant a reserved slot begins.

/** Resolves after `ms` (immediately when ms <= 0). */
export function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
