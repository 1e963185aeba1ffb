import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GitError, systemError } from '../errors.js';

/**
 * `git repack-ts maintenance start|stop`: runs `git repack-ts --auto --quiet` every hour in every
 * repository `git maintenance register` knows (the `maintenance.repo` list that `git for-each-repo`
 * reads), on the scheduler `git maintenance start` uses (builtin/gc.c): a systemd user timer where
 * one runs, else cron. Like git, the crontab gets a block of its own between marker lines (git's
 * own block is left as it is), and GIT_TEST_MAINT_SCHEDULER swaps in a stand-in for `crontab` or
 * `systemctl` (git's `get_schedule_cmd`), so both can be tested side by side.
 */

export type Scheduler = 'crontab' | 'systemd-timer';

export const BEGIN_LINE = '# BEGIN GIT REPACK-TS SCHEDULE';
export const END_LINE = '# END GIT REPACK-TS SCHEDULE';
/** git's own block (gc.c), whose minute ours avoids. */
const GIT_BEGIN_LINE = '# BEGIN GIT MAINTENANCE SCHEDULE';
const UNIT = 'git-repack-ts';

export interface ScheduleContext {
  env: NodeJS.ProcessEnv;
  /** Directories that must be on PATH for git to find `git-repack-ts` and the launcher `node`. */
  path: string[];
  /** The `git` that runs `for-each-repo` (an absolute path). */
  git: string;
}

export interface ScheduleResult {
  action: 'start' | 'stop';
  /** Where the schedule now is (start), or every scheduler it was removed from (stop). */
  schedulers: Scheduler[];
  /** The crontab line or the timer's OnCalendar; none for stop. */
  schedule?: string | undefined;
  /** What runs, in each registered repository. */
  command?: string | undefined;
  /** The repository added to maintenance.repo, when start was run in one that was not. */
  registered?: string | undefined;
}

/** git's `get_schedule_cmd`: the command for `name`, and whether it is there, under GIT_TEST_MAINT_SCHEDULER. */
function scheduleCmd(
  name: string,
  env: NodeJS.ProcessEnv,
): { cmd: string[]; mocked: boolean | undefined } {
  const testing = env.GIT_TEST_MAINT_SCHEDULER;
  if (testing === undefined) return { cmd: [name], mocked: undefined };
  for (const item of testing.split(',')) {
    const at = item.indexOf(':');
    if (at > 0 && item.slice(0, at) === name)
      return {
        cmd: item
          .slice(at + 1)
          .split(' ')
          .filter((w) => w !== ''),
        mocked: true,
      };
  }
  return { cmd: [name], mocked: false };
}

function run(
  cmd: string[],
  args: string[],
  env: NodeJS.ProcessEnv,
  input?: string,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(cmd[0]!, [...cmd.slice(1), ...args], { env, encoding: 'utf8', input });
  return { status: r.error ? null : r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function available(s: Scheduler, env: NodeJS.ProcessEnv): boolean {
  const name = s === 'crontab' ? 'crontab' : 'systemctl';
  const { cmd, mocked } = scheduleCmd(name, env);
  if (mocked !== undefined) return mocked;
  // As git: `crontab -l` starts (an empty crontab exits 1), `systemctl --user list-timers` succeeds.
  const r = s === 'crontab' ? run(cmd, ['-l'], env) : run(cmd, ['--user', 'list-timers'], env);
  return s === 'crontab' ? r.status !== null : r.status === 0;
}

/** `--scheduler=auto` on Linux, as git's `resolve_auto_scheduler`: systemd timers, else cron. */
export function resolveScheduler(want: Scheduler | 'auto', env: NodeJS.ProcessEnv): Scheduler {
  if (want !== 'auto') {
    // git names the command it could not find: 'crontab' or 'systemctl'.
    if (!available(want, env))
      throw new GitError(
        'unsupported',
        `${want === 'crontab' ? 'crontab' : 'systemctl'} scheduler is not available`,
      );
    return want;
  }
  if (available('systemd-timer', env)) return 'systemd-timer';
  if (available('crontab', env)) return 'crontab';
  throw new GitError('unsupported', 'neither systemd timers nor crontab are available');
}

/** What the schedule runs: git's for-each-repo over maintenance.repo, with our command found on PATH. */
export function scheduledCommand(ctx: ScheduleContext): string {
  const path = [...ctx.path, '/usr/local/bin', '/usr/bin', '/bin'].filter(
    (p, i, a) => a.indexOf(p) === i,
  );
  return `PATH=${shellQuote(path.join(':'))} ${shellQuote(ctx.git)} for-each-repo --config=maintenance.repo repack-ts --auto --quiet`;
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The minute of git's own crontab block, if there is one: ours runs half an hour away from it. */
function minuteFor(crontab: string, env: NodeJS.ProcessEnv): number {
  const lines = crontab.split('\n');
  const at = lines.indexOf(GIT_BEGIN_LINE);
  const theirs =
    at < 0
      ? undefined
      : lines
          .slice(at + 1)
          .map((l) => /^(\d+) /.exec(l)?.[1])
          .find((m) => m !== undefined);
  if (theirs !== undefined) return (Number(theirs) + 30) % 60;
  // As git under its tests (get_random_minute): a fixed minute, here 43.
  return env.GIT_TEST_MAINT_SCHEDULER !== undefined ? 43 : Math.floor(Math.random() * 60);
}

/** The crontab without our block, and with a new one when `line` is given (git's `crontab_update_schedule`). */
export function editCrontab(crontab: string, line: string | undefined): string {
  const out: string[] = [];
  let inOld = false;
  const lines = crontab.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const l of lines) {
    if (!inOld && l === BEGIN_LINE) inOld = true;
    else if (inOld && l === END_LINE) inOld = false;
    else if (!inOld) out.push(l);
  }
  if (line !== undefined) {
    out.push(
      BEGIN_LINE,
      '# The following schedule was created by git repack-ts.',
      '# Any edits made in this region might be',
      '# replaced in the future by a git repack-ts command.',
      '',
      line,
      '',
      END_LINE,
    );
  }
  return out.length === 0 ? '' : out.join('\n') + '\n';
}

function updateCrontab(ctx: ScheduleContext, start: boolean): string | undefined {
  const { cmd } = scheduleCmd('crontab', ctx.env);
  const list = run(cmd, ['-l'], ctx.env);
  if (list.status === null)
    throw new GitError(
      'unsupported',
      "failed to run 'crontab -l'; your system might not support 'cron'",
    );
  // An empty crontab exits 1 with "no crontab for <user>": git ignores that exit code too.
  const old = list.status === 0 ? list.stdout : '';
  const line = start ? `${minuteFor(old, ctx.env)} * * * * ${scheduledCommand(ctx)}` : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'git-repack-ts-cron-'));
  try {
    const file = join(dir, 'crontab');
    writeFileSync(file, editCrontab(old, line));
    const r = run(cmd, [file], ctx.env);
    if (r.status === null)
      throw new GitError(
        'unsupported',
        "failed to run 'crontab'; your system might not support 'cron'",
      );
    if (r.status !== 0) throw new GitError('io', `'crontab' died: ${r.stderr.trim()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return line;
}

/** `$XDG_CONFIG_HOME/systemd/user` (or ~/.config), where git writes its units too. */
function systemdDir(env: NodeJS.ProcessEnv): string {
  const base =
    env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== ''
      ? env.XDG_CONFIG_HOME
      : join(env.HOME ?? homedir(), '.config');
  return join(base, 'systemd', 'user');
}

/**
 * The timer and its service. Unlike git's service, no MemoryDenyWriteExecute: node compiles
 * JavaScript to machine code, which that setting forbids.
 */
function systemdUnits(
  ctx: ScheduleContext,
  minute: number,
): { timer: string; service: string; calendar: string } {
  const calendar = `*-*-* *:${String(minute).padStart(2, '0')}:00`;
  const head =
    '# This file was created and is maintained by git repack-ts.\n# Any edits made in this file might be replaced in the future\n# by a git repack-ts command.\n\n';
  const timer = `${head}[Unit]\nDescription=Keep commits and trees of Git repositories stored for fast history walks\n\n[Timer]\nOnCalendar=${calendar}\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n`;
  const service = `${head}[Unit]\nDescription=Keep commits and trees of Git repositories stored for fast history walks\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c ${JSON.stringify(scheduledCommand(ctx))}\nNoNewPrivileges=yes\n`;
  return { timer, service, calendar };
}

function updateSystemd(ctx: ScheduleContext, start: boolean): string | undefined {
  const { cmd } = scheduleCmd('systemctl', ctx.env);
  const dir = systemdDir(ctx.env);
  const timerFile = join(dir, `${UNIT}.timer`);
  const serviceFile = join(dir, `${UNIT}.service`);
  const systemctl = (args: string[]): void => {
    const r = run(cmd, ['--user', ...args], ctx.env);
    if (r.status !== 0)
      throw new GitError(
        'io',
        `failed to run systemctl --user ${args.join(' ')}${r.stderr ? `: ${r.stderr.trim()}` : ''}`,
      );
  };
  if (!start) {
    // As git's stop: disable the timer (it may never have been enabled), then remove the files.
    run(cmd, ['--user', 'disable', '--now', `${UNIT}.timer`], ctx.env);
    for (const f of [timerFile, serviceFile]) unlinkQuiet(f);
    return undefined;
  }
  const units = systemdUnits(ctx, minuteFor('', ctx.env));
  mkdirSync(dirname(timerFile), { recursive: true });
  writeFileSync(timerFile, units.timer);
  writeFileSync(serviceFile, units.service);
  systemctl(['daemon-reload']);
  systemctl(['enable', '--now', `${UNIT}.timer`]);
  return units.calendar;
}

function unlinkQuiet(f: string): void {
  try {
    unlinkSync(f);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      throw systemError('io', 'failed to delete', e, f);
  }
}

/** Adds `repo` to the global maintenance.repo list unless some configuration lists it already. */
export function registerRepository(repo: string, env: NodeJS.ProcessEnv): boolean {
  const r = spawnSync('git', ['config', '--get-all', 'maintenance.repo'], {
    env,
    encoding: 'utf8',
  });
  if (r.stdout.split('\n').includes(repo)) return false;
  const add = spawnSync('git', ['config', '--global', '--add', 'maintenance.repo', repo], {
    env,
    encoding: 'utf8',
  });
  if (add.status !== 0)
    throw new GitError(
      'io',
      `could not add ${repo} to maintenance.repo: ${(add.stderr ?? '').trim()}`,
    );
  return true;
}

/**
 * Starts the schedule on `want` (removing it from the other scheduler first, as git's
 * `update_background_schedule`), or stops it: on `want`, or on every scheduler there is.
 */
export function updateSchedule(
  action: 'start' | 'stop',
  want: Scheduler | 'auto',
  ctx: ScheduleContext,
): ScheduleResult {
  const update = (s: Scheduler, start: boolean): string | undefined =>
    (s === 'crontab' ? updateCrontab : updateSystemd)(ctx, start);
  const all: Scheduler[] = ['crontab', 'systemd-timer'];
  if (action === 'stop') {
    const from =
      want === 'auto'
        ? all.filter((s) => available(s, ctx.env))
        : [resolveScheduler(want, ctx.env)];
    for (const s of from) update(s, false);
    return { action, schedulers: from };
  }
  const scheduler = resolveScheduler(want, ctx.env);
  for (const s of all) if (s !== scheduler && available(s, ctx.env)) update(s, false);
  const schedule = update(scheduler, true);
  return { action, schedulers: [scheduler], schedule, command: scheduledCommand(ctx) };
}
