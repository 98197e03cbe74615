// `sluice admin queues|lanes|lane|jobs|retry|cancel|pause|resume|drain|override|reset|audit`: the
// admin API from a terminal. --url (or SLUICE_URL), the token from SLUICE_ADMIN_TOKEN, tables by
// default and the API's JSON with --json. A refused action prints the server's message and exits 1.
import type { Command } from 'commander';
import { AdminClient, table } from './admin-client.js';
import type { CliContext, CommandModule } from './io.js';

interface Common {
  url?: string;
  json?: boolean;
}

const enc = encodeURIComponent;

function client(options: Common): AdminClient {
  return new AdminClient({ url: options.url ?? process.env.SLUICE_URL ?? 'http://127.0.0.1:8080', token: process.env.SLUICE_ADMIN_TOKEN, actor: process.env.USER ?? 'cli' });
}

/** Runs one call and prints its answer: `render` for a table, or the JSON; an error status sets exit code 1. */
async function run(ctx: CliContext, options: Common, method: string, path: string, body: unknown, render: (b: Record<string, any>) => string): Promise<void> {
  const res = await client(options).call(method, path, body);
  if (res.status >= 400) {
    if (options.json) ctx.io.out(JSON.stringify({ status: res.status, ...res.body }) + '\n');
    else ctx.io.err(`${res.status} ${String(res.body.message ?? res.body.error ?? '')}${res.body.state ? ` (state: ${String(res.body.state)})` : ''}\n`);
    ctx.exitCode = 1;
    return;
  }
  ctx.io.out(options.json ? JSON.stringify(res.body, null, 2) + '\n' : render(res.body));
}

function common(cmd: Command): Command {
  return cmd.option('--url <url>', 'the sluice server (env SLUICE_URL, default http://127.0.0.1:8080)').option('--json', "print the API's JSON");
}

const untilBody = (o: { until?: string }) => (o.until ? { until: new Date(o.until).toISOString() } : {});

export const adminCommand: CommandModule = {
  name: 'admin',
  register(program, ctx) {
    const admin = program.command('admin').description('the admin API: queues, lanes, jobs, pauses, drains, overrides, resets, audit (token from SLUICE_ADMIN_TOKEN)');

    common(admin.command('queues').description('every queue with its settings and live figures')).action((o: Common) =>
      run(ctx, o, 'GET', '/v1/admin/queues', undefined, (b) =>
        table(
          b.queues.map((q: any) => ({ queue: q.name, rate: q.config.ratePerSecond, capacity: q.config.capacity, queued: q.live.queued, active: q.live.active, failed: q.live.failed, lanes: q.live.busyLanes, 'started/1s': q.live.startedLast1s, 'started/60s': q.live.startedLast60s, 'refused/60s': q.live.refusedLast60s, paused: q.live.paused, draining: q.live.draining })),
          ['queue', 'rate', 'capacity', 'queued', 'active', 'failed', 'lanes', 'started/1s', 'started/60s', 'refused/60s', 'paused', 'draining'],
        ),
      ),
    );

    common(admin.command('lanes').description('busy lanes of a queue, busiest first').argument('<queue>'))
      .option('--limit <n>', 'lanes per page (default 20)', '20')
      .option('--cursor <cursor>', 'the next page (printed under the table)')
      .action((queue: string, o: Common & { limit: string; cursor?: string }) =>
        run(ctx, o, 'GET', `/v1/admin/queues/${enc(queue)}/lanes?limit=${enc(o.limit)}${o.cursor ? `&cursor=${enc(o.cursor)}` : ''}`, undefined, (b) =>
          table(b.lanes, ['lane', 'depth']) + `${b.total} busy lanes${b.next ? `; next page: --cursor ${b.next}` : ''}\n`,
        ),
      );

    common(admin.command('lane').description("a lane's limits, plan, override, pause and queued jobs").argument('<queue>').argument('<lane>')).action((queue: string, lane: string, o: Common) =>
      run(ctx, o, 'GET', `/v1/admin/queues/${enc(queue)}/lanes/${enc(lane)}`, undefined, (b) =>
        `lane ${b.lane}: ${b.depth}/${b.limits.capacity} queued at ${b.limits.ratePerSecond}/s (burst ${b.limits.burst})${b.plan ? `, plan ${b.plan}` : ''}${b.override ? `, override by ${b.override.by}` : ''}\nnext start ${b.nextStartAt}${b.pausedUntil ? `, paused until ${b.pausedUntil}` : ''}\n` +
        table(b.queued, ['id', 'cost', 'predictedStartAt', 'reserved']),
      ),
    );

    common(admin.command('jobs').description("a queue's failed jobs, or one job's detail").argument('<queue>').argument('[id]'))
      .option('--limit <n>', 'jobs per page (default 20)', '20')
      .option('--cursor <cursor>', 'the next page')
      .action((queue: string, id: string | undefined, o: Common & { limit: string; cursor?: string }) =>
        id
          ? run(ctx, o, 'GET', `/v1/admin/queues/${enc(queue)}/jobs/${enc(id)}`, undefined, (b) => table([b], ['id', 'state', 'tenant', 'lane', 'plan', 'attemptsMade', 'failedReason', 'submittedAt', 'finishedAt']))
          : run(ctx, o, 'GET', `/v1/admin/queues/${enc(queue)}/jobs?state=failed&limit=${enc(o.limit)}${o.cursor ? `&cursor=${enc(o.cursor)}` : ''}`, undefined, (b) =>
              table(b.jobs, ['id', 'tenant', 'lane', 'attemptsMade', 'failedReason', 'finishedAt']) + `${b.total} failed${b.next ? `; next page: --cursor ${b.next}` : ''}\n`,
            ),
      );

    common(admin.command('retry').description('retry a failed job through its lane').argument('<queue>').argument('<id>')).action((queue: string, id: string, o: Common) =>
      run(ctx, o, 'POST', `/v1/admin/queues/${enc(queue)}/jobs/${enc(id)}/retry`, undefined, (b) => `retried ${b.id}: starts at ${b.startsAt} (position ${b.position})\n`),
    );

    common(admin.command('cancel').description('cancel a queued job (its lane units are freed)').argument('<queue>').argument('<id>')).action((queue: string, id: string, o: Common) =>
      run(ctx, o, 'POST', `/v1/admin/queues/${enc(queue)}/jobs/${enc(id)}/cancel`, undefined, (b) => `cancelled ${b.id} (was ${b.previousState}; ${b.freedUnits} unit(s) freed)\n`),
    );

    for (const verb of ['pause', 'resume'] as const) {
      const cmd = common(admin.command(verb).description(`${verb} a queue, or one lane of it`).argument('<queue>').argument('[lane]'));
      if (verb === 'pause') cmd.option('--until <time>', 'resume by itself at this time (ISO 8601)');
      cmd.action((queue: string, lane: string | undefined, o: Common & { until?: string }) =>
        run(ctx, o, 'POST', `/v1/admin/queues/${enc(queue)}${lane ? `/lanes/${enc(lane)}` : ''}/${verb}`, verb === 'pause' ? untilBody(o) : undefined, (b) =>
          `${lane ? `lane ${lane} of ` : ''}queue ${queue}: ${b.paused ? `paused${b.pausedUntil ? ` until ${b.pausedUntil}` : ''}` : 'running'}\n`,
        ),
      );
    }

    common(admin.command('drain').description('refuse new submits to a queue (503 draining); --off to take them again').argument('<queue>'))
      .option('--off', 'undrain')
      .action((queue: string, o: Common & { off?: boolean }) =>
        run(ctx, o, 'POST', `/v1/admin/queues/${enc(queue)}/${o.off ? 'undrain' : 'drain'}`, undefined, (b) => `queue ${queue}: ${b.draining ? 'draining' : 'taking submits'}\n`),
      );

    common(admin.command('override').description("list a queue's overrides, or set (or --remove) one lane's").argument('<queue>').argument('[lane]'))
      .option('--rate <n>', 'starts per second')
      .option('--capacity <n>', 'queued units the lane may hold')
      .option('--burst <n>', 'units that may start back to back')
      .option('--max-wait-ms <n>', 'refuse when the wait would be longer')
      .option('--until <time>', 'the override ends by itself at this time (ISO 8601)')
      .option('--remove', 'remove the override (back to the rules)')
      .action((queue: string, lane: string | undefined, o: Common & { rate?: string; capacity?: string; burst?: string; maxWaitMs?: string; until?: string; remove?: boolean }) => {
        if (!lane) return run(ctx, o, 'GET', `/v1/admin/queues/${enc(queue)}/overrides`, undefined, (b) => table(b.overrides, ['lane', 'ratePerSecond', 'capacity', 'burst', 'maxWaitMs', 'until', 'by', 'at']));
        if (o.remove) return run(ctx, o, 'DELETE', `/v1/admin/queues/${enc(queue)}/overrides/${enc(lane)}`, undefined, () => `override of lane ${lane} removed\n`);
        const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
        const body = Object.fromEntries(
          Object.entries({ ratePerSecond: num(o.rate), capacity: num(o.capacity), burst: num(o.burst), maxWaitMs: num(o.maxWaitMs), ...untilBody(o) }).filter(([, v]) => v !== undefined),
        );
        return run(ctx, o, 'PUT', `/v1/admin/queues/${enc(queue)}/overrides/${enc(lane)}`, body, (b) => table([b], ['lane', 'ratePerSecond', 'capacity', 'burst', 'maxWaitMs', 'until', 'by']));
      });

    common(admin.command('reset').description("clear a rule's counter for one descriptor: reset <domain> <key=value>...").argument('<domain>').argument('<entries...>')).action(
      (domain: string, entries: string[], o: Common) => {
        const parsed = entries.map((e) => ({ key: e.slice(0, Math.max(0, e.indexOf('='))), value: e.slice(e.indexOf('=') + 1) }));
        return run(ctx, o, 'POST', '/v1/admin/decisions/reset', { domain, descriptor: parsed.length === 1 ? parsed[0] : { entries: parsed } }, (b) => `reset rule ${b.rule}\n`);
      },
    );

    common(admin.command('audit').description('admin actions, newest first'))
      .option('--limit <n>', 'entries (default 20)', '20')
      .option('--cursor <cursor>', 'the next page')
      .action((o: Common & { limit: string; cursor?: string }) =>
        run(ctx, o, 'GET', `/v1/admin/audit?limit=${enc(o.limit)}${o.cursor ? `&cursor=${enc(o.cursor)}` : ''}`, undefined, (b) =>
          table(b.entries, ['at', 'who', 'action', 'queue', 'target', 'details']) + (b.next ? `next page: --cursor ${b.next}\n` : ''),
        ),
      );
  },
};
