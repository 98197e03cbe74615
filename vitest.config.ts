import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: the suites start their own Redis servers and worker processes.
    maxWorkers: 2,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
