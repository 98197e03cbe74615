// The gate's scripts and the reference model driven side by side, for the property tests of late starts
// (test/integration/throttle/late-start.test.ts, burst-cost-property.test.ts): every call made on both,
// their answers held equal, and the two worker steps those tests share.
import { expect } from 'vitest';
import type { DispatchModel, ModelStart } from '../../src/throttle/dispatch.model.js';
import type { ThrottleTiming } from '../../src/throttle/config.js';
import { laneMember } from '../../src/throttle/keys.js';
import type { LaneScripts, StartMode } from '../../src/throttle/lane-scripts.js';

/** A gate call on a lane's job, made on the scripts and the model; resolves with the (equal) answer. */
export type GateCall = (lane: string, jobId: string, how: StartMode) => Promise<ModelStart>;

/** A job given a start and waiting for it. */
export interface Holding {
  lane: string;
  jobId: string;
  startUs: number;
}

/** The gate call of `lanes` and `model` at the instant `now()`, for jobs of `costOf(jobId)` units and lanes of burst `burst`. */
export function gateCall(lanes: LaneScripts, model: DispatchModel, t: ThrottleTiming, now: () => number, costOf: (jobId: string) => number, burst: number): GateCall {
  return async (lane, jobId, how) => {
    const cost = costOf(jobId);
    const at = now();
    const got = await lanes.start(lane, jobId, cost, how, String(at));
    const want = model.start(at, lane, laneMember(jobId, cost), how, t.laneIntervalUs, burst, t.leadUs, t.lateLeadUs, t.lateToleranceUs);
    expect(got.go ? { go: true, startUs: got.startUs } : { go: false, ...(got.slotUs ? { slotUs: got.slotUs } : {}), ...(got.askAtUs ? { askAtUs: got.askAtUs } : {}) }).toEqual(want);
    return want;
  };
}

/** A worker's word that a job started (lua/throttle-started.lua), on the scripts and the model; their answers held equal. */
export type StartedCall = (j: Holding) => Promise<void>;

export function startedCall(lanes: LaneScripts, model: DispatchModel, costOf: (jobId: string) => number): StartedCall {
  return async (j) => {
    const cost = costOf(j.jobId);
    const got = await lanes.started(j.lane, j.jobId, cost, j.startUs);
    expect(got).toBe(model.started(j.lane, laneMember(j.jobId, cost), j.startUs));
  };
}

/**
 * One of the jobs that started says so (`any` < 0: the first to start; else the `any`-th, modulo): its
 * word reaches Redis in any order with the other calls, as a worker's message does.
 */
export async function sayStarted(say: StartedCall, starting: Holding[], any: number): Promise<void> {
  if (starting.length === 0) return;
  await say(starting.splice(any < 0 ? 0 : any % starting.length, 1)[0]!);
}

/**
 * A worker takes job `j`, handed out: its gate call. No start now: parked by its worker, then back at the
 * head of its lane. Its start more than a horizon ahead (moved): no answer yet, it asks again later (back
 * among the jobs handed out and not arrived, `out`).
 */
export async function arrive(call: GateCall, j: { lane: string; jobId: string }, holding: Holding[], out: { lane: string; jobId: string }[]): Promise<void> {
  const answer = await call(j.lane, j.jobId, { mode: 'start' });
  if (answer.go) holding.push({ ...j, startUs: answer.startUs });
  else if (answer.askAtUs !== undefined) out.push(j);
  else expect((await call(j.lane, j.jobId, { mode: 'requeue', slotUs: answer.slotUs })).go).toBe(false);
}

/**
 * A job holding a start reaches it at `now` (`any` < 0: the one holding the earliest start; else the
 * `any`-th by start, modulo: workers reach their starts in any order): within the tolerance it starts
 * (`started`, and it joins `starting`: its word that it started is on its way, sayStarted), later it
 * asks again (a fresh start, or back to its lane). One whose start is still ahead starts at its start.
 */
export async function reachStart(call: GateCall, holding: Holding[], starting: Holding[], now: number, toleranceUs: number, started: (j: Holding) => void, any = -1): Promise<void> {
  holding.sort((x, y) => x.startUs - y.startUs);
  const j = holding.splice(any < 0 ? 0 : any % holding.length, 1)[0]!;
  if (now - j.startUs <= toleranceUs) {
    starting.push(j);
    return started(j);
  }
  const answer = await call(j.lane, j.jobId, { mode: 'late', heldUs: j.startUs });
  if (answer.go) holding.push({ ...j, startUs: answer.startUs });
  else expect((await call(j.lane, j.jobId, { mode: 'requeue', slotUs: answer.slotUs })).go).toBe(false);
}
