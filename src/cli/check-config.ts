// `sluice check-config FILE`: validates a rules file. Prints every problem as
// `file:line:col path: message` and exits 1, or prints a summary of the rules and exits 0.
import { isSluiceError } from '../errors.js';
import { formatIssue, type RulesIssue } from '../rules/issues.js';
import { loadRules } from '../rules/rules.js';
import type { CommandModule } from './io.js';
import { rulesSummary } from './rules-summary.js';

/** The `check-config` command. */
export const checkConfigCommand: CommandModule = {
  name: 'check-config',
  register(program, ctx) {
    program
      .command('check-config')
      .description('validate a rules file (YAML or JSON): list every error with its line, or summarise the rules')
      .argument('<file>', 'the rules file')
      .option('--json', 'print the result as JSON')
      .action((file: string, options: { json?: boolean }) => {
        try {
          const rules = loadRules(file);
          if (options.json) {
            ctx.io.out(
              JSON.stringify({
                valid: true,
                file,
                version: rules.version,
                rules: rules.rules.map((r) => ({ id: r.id, name: r.name, line: r.source.line, policy: r.policy, plan: r.plan, shadowMode: r.shadowMode, unlimited: r.unlimited })),
                plans: rules.plans,
                routeGroups: rules.routeGroups,
                http: rules.http,
                queues: rules.queues,
              }) + '\n',
            );
          } else {
            ctx.io.out(rulesSummary(rules));
          }
        } catch (e) {
          if (!isSluiceError(e, 'SLUICE_ERR_INVALID_RULES')) throw e;
          const issues = e.details as RulesIssue[];
          if (options.json) ctx.io.out(JSON.stringify({ valid: false, file, issues }) + '\n');
          else ctx.io.err(`${issues.map((i) => formatIssue(file, i)).join('\n')}\n${file}: ${issues.length} error${issues.length === 1 ? '' : 's'}\n`);
          ctx.exitCode = 1;
        }
      });
  },
};
