// Preloaded into a child process (NODE_OPTIONS=--import) to skew its wall clock by SLUICE_TEST_CLOCK_SKEW_MS,
// as a host whose clock is off would be: Date.now() and performance.timeOrigin move; the monotonic
// clock (performance.now(), timers) does not, as with libfaketime's FAKETIME_DONT_FAKE_MONOTONIC.
const skew = Number(process.env.SLUICE_TEST_CLOCK_SKEW_MS ?? 0);
if (skew) {
  const realNow = Date.now;
  Date.now = () => realNow() + skew;
  Object.defineProperty(performance, 'timeOrigin', { value: performance.timeOrigin + skew, configurable: true });
}
