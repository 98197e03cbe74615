// Typed errors with stable codes: the one base class, and the registry every code is listed in.
//
// Being throttled is a *result*, never an exception. These are for misconfiguration, bad input
// and infrastructure failure only. docs/errors.md documents every code (a test holds them together).

/** Every error code sluice can throw, with the HTTP status it maps to and a line of help. */
export const ERROR_CODES = {
  SLUICE_ERR_INVALID_POLICY: { httpStatus: 500, help: 'A policy failed validation; the message names each field.' },
  SLUICE_ERR_INVALID_OPTIONS: { httpStatus: 500, help: 'Options passed to a sluice call failed validation.' },
  SLUICE_ERR_INVALID_COST: { httpStatus: 400, help: 'cost must be an integer >= 1 and no larger than the policy limit.' },
  SLUICE_ERR_INVALID_KEY: { httpStatus: 400, help: 'A key must be a non-empty string.' },
  SLUICE_ERR_REDIS_UNAVAILABLE: { httpStatus: 503, help: 'Redis did not answer within the deadline or is disconnected.' },
  SLUICE_ERR_SCRIPT: { httpStatus: 500, help: 'A Lua script answered with an unexpected reply; this is a bug.' },
  SLUICE_ERR_WRONG_ALGORITHM: { httpStatus: 500, help: 'The call is not supported by this limiter algorithm.' },
  SLUICE_ERR_CLOSED: { httpStatus: 503, help: 'The sluice instance was closed.' },
  SLUICE_ERR_INVALID_THROTTLE: { httpStatus: 500, help: 'A throttle configuration failed validation.' },
  SLUICE_ERR_UNKNOWN_THROTTLE: { httpStatus: 404, help: 'No throttle with that name is defined (call sluice.throttle first).' },
  SLUICE_ERR_INVALID_PAYLOAD: { httpStatus: 400, help: 'A job payload must be JSON-serialisable and within the size limit.' },
  SLUICE_ERR_PAYLOAD_TOO_LARGE: { httpStatus: 413, help: 'The serialised payload is larger than the throttle allows.' },
  SLUICE_ERR_QUEUE_FULL: { httpStatus: 429, help: 'schedule() could not get a place in the lane (queue full or wait too long); details say when to retry.' },
  SLUICE_ERR_SUBMIT_FAILED: { httpStatus: 503, help: 'The job could not be enqueued (not thrown since the admission writes the job; kept for compatibility).' },
  SLUICE_ERR_INVALID_RULES: { httpStatus: 500, help: 'The rules file failed validation; each issue names its path and line.' },
  SLUICE_ERR_INVALID_REQUEST: { httpStatus: 400, help: 'The HTTP body failed validation; the issues list says where.' },
  SLUICE_ERR_UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, help: 'The submit and decision routes take application/json only.' },
  SLUICE_ERR_BODY_TOO_LARGE: { httpStatus: 413, help: 'The request body is larger than the configured limit.' },
  SLUICE_ERR_NOT_FOUND: { httpStatus: 404, help: 'No such queue, job or route.' },
  SLUICE_ERR_INVALID_CONFIG: { httpStatus: 500, help: 'Process configuration (flags or environment) is invalid.' },
  SLUICE_ERR_UNAUTHORIZED: { httpStatus: 401, help: 'The request has no valid API key (or admin token); send Authorization: Bearer <key> or X-API-Key.' },
  SLUICE_ERR_CONFLICT: { httpStatus: 409, help: 'The job is not in a state the action applies to (a started job cannot be cancelled, only a failed job retried); the answer says its state.' },
  SLUICE_ERR_DRAINING: { httpStatus: 503, help: 'The queue is draining: new submits are refused while queued work finishes (an operator undrains it).' },
  SLUICE_ERR_JOB_FAILED: { httpStatus: 500, help: 'waitForResult(): the job failed for good; details give its failedReason and attemptsMade.' },
  SLUICE_ERR_WAIT_TIMEOUT: { httpStatus: 504, help: 'waitForResult(): the job had not finished when timeoutMs passed; details give its state.' },
  SLUICE_ERR_INTERNAL: { httpStatus: 500, help: 'An unexpected failure inside the HTTP service; the server log has the cause.' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Base class of every error sluice throws. `code` is stable; `httpStatus` is what the HTTP layer answers. */
export class SluiceError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly help: string;
  /** Structured detail, e.g. the list of validation issues. */
  readonly details: unknown;

  /** The same as httpStatus, under the name express's default error handler (and http-errors) read. */
  get status(): number {
    return this.httpStatus;
  }

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SluiceError';
    this.code = code;
    this.httpStatus = ERROR_CODES[code].httpStatus;
    this.help = ERROR_CODES[code].help;
    this.details = options.details;
  }
}

/** True when `e` is a SluiceError, optionally with the given code. */
export function isSluiceError(e: unknown, code?: ErrorCode): e is SluiceError {
  return e instanceof SluiceError && (code === undefined || e.code === code);
}
