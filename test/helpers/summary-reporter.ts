// A vitest reporter that ends the run with one plain line, "N passed, N failed, N skipped", so any
// CI log reader can tell how many tests ran, after a list of the tests that passed only on a retry (each
// a race with the loaded machine to look at, never to ignore).
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const retried: string[] = [];
    for (const m of testModules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        const retries = t.diagnostic()?.retryCount ?? 0;
        if (state === 'passed' && retries > 0) {
          // What the failed tries said (vitest keeps their errors on a test that passed on a retry): the
          // first lines, so a CI log tells which assertion lost the race.
          const said = (t.result().errors ?? []).map((e) => `      ${String(e.message ?? e).split('\n').slice(0, 3).join(' | ').slice(0, 400)}`);
          retried.push([`${m.moduleId.replace(process.cwd() + '/', '')} > ${t.fullName} (${retries} retr${retries === 1 ? 'y' : 'ies'})`, ...said].join('\n'));
        }
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no tests but is a failure all the same.
      if (m.state() === 'failed' && ![...m.children.allTests()].length) failed++;
    }
    if (retried.length) process.stdout.write(`\npassed only on a retry:\n${retried.map((r) => `  ${r}`).join('\n')}\n`);
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
