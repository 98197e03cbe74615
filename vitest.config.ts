import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    // The suites start real Redis servers, clusters and worker processes on two cores: a test that loses a
    // race with the machine (a process start past its deadline, a timer late under load) gets two more
    // runs. A defect fails all three; the summary reporter lists every test that needed a retry.
    retry: 2,
    hookTimeout: 60_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          // Long fault runs (*.long.test.ts) only run with `npm run test:faults` (docs/testing.md).
          exclude: ['test/**/*.timing.test.ts', 'test/faults/**/*.long.test.ts'],
          // Two cores: the suites start their own Redis servers and worker processes.
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: {
          // Tests that measure start timestamps against a rate: run alone, one file at a time, so that
          // the machine's other work does not stand between a timer and its slot.
          name: 'timing',
          include: ['test/**/*.timing.test.ts'],
          fileParallelism: false,
          maxWorkers: 1,
        },
      },
      {
        extends: true,
        test: {
          // Fault families (docs/testing.md): `npm run test:faults` runs all of them at full length, one
          // file at a time (each starts its own Redis topology and sluice processes).
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          fileParallelism: false,
          maxWorkers: 1,
          testTimeout: 600_000,
        },
      },
    ],
  },
});
