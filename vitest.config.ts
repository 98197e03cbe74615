import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.timing.test.ts'],
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
    ],
  },
});
