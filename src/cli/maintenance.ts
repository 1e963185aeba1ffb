import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerRepository, updateSchedule, type Scheduler } from '../commands/schedule.js';
import { parseArgs, positionals } from './args.js';
import { UsageError } from './io.js';
import type { CliContext } from './main.js';
import { openRepository } from './repo.js';

export const MAINTENANCE_USAGE = `usage: git repack-ts maintenance start [--scheduler=<scheduler>]
   or: git repack-ts maintenance stop [--scheduler=<scheduler>]

Runs 'git repack-ts --auto --quiet' every hour in every repository that 'git maintenance
register' (or 'git maintenance start') has registered: the maintenance.repo list, through
'git for-each-repo'. start also registers the repository it runs in.

    --scheduler <scheduler>
                          auto (default: systemd timers where they run, else cron), crontab
                          or systemd-timer: the schedulers 'git maintenance start' uses
`;

const SCHEDULERS = ['auto', 'crontab', 'systemd-timer'] as const;

export async function runMaintenance(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, MAINTENANCE_USAGE, (y) =>
    y.option('scheduler', { type: 'string' }),
  );
  const [action, ...extra] = positionals(o);
  if (action !== 'start' && action !== 'stop')
    throw new UsageError(
      action === undefined
        ? 'a subcommand is required: start or stop'
        : `invalid subcommand: ${action}`,
      MAINTENANCE_USAGE,
    );
  if (extra.length > 0)
    throw new UsageError(`unexpected argument '${extra[0]}'`, MAINTENANCE_USAGE);
  const want = o.scheduler ?? 'auto';
  if (!(SCHEDULERS as readonly string[]).includes(want))
    throw new UsageError(`unrecognized --scheduler argument '${want}'`, MAINTENANCE_USAGE);
  const env = ctx.io.env;
  // What cron or systemd must find: git's own binary (as git's schedule names it), this
  // package's launcher, and the node it runs with.
  const execPath = spawnSync('git', ['--exec-path'], { env, encoding: 'utf8' }).stdout?.trim();
  const git = execPath ? join(execPath, 'git') : 'git';
  const path = [fileURLToPath(new URL('../../bin', import.meta.url)), dirname(process.execPath)];
  const r = updateSchedule(action, want as Scheduler | 'auto', { env, path, git });
  if (action === 'start') {
    let where: string | undefined;
    try {
      const repo = openRepository(ctx);
      where = repo.workTree ?? repo.gitDir;
    } catch {
      // outside a repository: nothing to register
    }
    if (where !== undefined && registerRepository(where, env))
      ctx.io.out(`registered ${where} in maintenance.repo\n`);
    ctx.io.out(`scheduled on ${r.schedulers[0]} (${r.schedule}): ${r.command}\n`);
  } else
    ctx.io.out(
      r.schedulers.length > 0
        ? `removed from ${r.schedulers.join(' and ')}\n`
        : 'no scheduler to remove it from\n',
    );
  return 0;
}
