// Job payloads: JSON only, checked at submit so that a bad payload fails at the call and nothing is enqueued.
import { SluiceError } from '../errors.js';

/** Serialises `payload`, refusing what JSON would silently drop or mangle; returns the byte size. */
export function checkPayload(payload: unknown, maxBytes: number): number {
  return Buffer.byteLength(payloadJson(payload, maxBytes));
}

/** `payload` as JSON (the job data's `p`), refusing what JSON would silently drop or mangle, or a payload over `maxBytes`. */
export function payloadJson(payload: unknown, maxBytes: number): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload, (_key, value: unknown) => {
      const t = typeof value;
      if (t === 'function' || t === 'symbol' || t === 'bigint') throw new TypeError(`a ${t} is not JSON`);
      if (t === 'number' && !Number.isFinite(value)) throw new TypeError(`${String(value)} is not JSON`);
      return value;
    });
  } catch (error) {
    throw new SluiceError('SLUICE_ERR_INVALID_PAYLOAD', `payload: not JSON-serialisable (${(error as Error).message})`, { cause: error });
  }
  if (json === undefined) throw new SluiceError('SLUICE_ERR_INVALID_PAYLOAD', 'payload: must be a JSON value (got undefined)');
  // A string is at most 3 bytes a UTF-16 unit: only a long one needs counting.
  if (json.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(json);
    if (bytes > maxBytes) throw new SluiceError('SLUICE_ERR_PAYLOAD_TOO_LARGE', `payload: ${bytes} bytes, more than the throttle's maxPayloadBytes ${maxBytes}`);
  }
  return json;
}
