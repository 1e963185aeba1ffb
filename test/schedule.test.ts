/**
 * `git repack-ts maintenance start|stop`: the schedule on the mechanism `git maintenance start`
 * uses, side by side with git's own. Git's GIT_TEST_MAINT_SCHEDULER puts a stand-in in place of
 * `crontab` and `systemctl` for both (builtin/gc.c `get_schedule_cmd`), so git's own blocks and
 * units are the reference; the scheduled command line is then run as cron would run it, and git
 * checks what it did.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fsckStrict, gitOk, objectSet, verifyPack, listPacks } from './helpers/git.js';
import { entryZlibInfo } from './helpers/pack-bytes.js';
import { toolOk } from './helpers/tool.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A HOME of its own (global config, crontab file, systemd units) and the stand-in schedulers. */
function sandbox(): {
  top: string;
  env: {
    HOME: string;
    XDG_CONFIG_HOME: string;
    GIT_CONFIG_GLOBAL: string;
    GIT_TEST_MAINT_SCHEDULER: string;
  };
  cron: string;
  systemctlLog: string;
} {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-sched-'));
  dirs.push(top);
  const home = path.join(top, 'home');
  fs.mkdirSync(home);
  const cron = path.join(top, 'cron.txt');
  const systemctlLog = path.join(top, 'systemctl.log');
  // `crontab -l` prints the file (exit 1 when there is none, as cron says "no crontab"); `crontab f` installs f.
  fs.writeFileSync(
    path.join(top, 'crontab.sh'),
    `if [ "$2" = -l ]; then cat "$1" 2>/dev/null || exit 1; else cp "$2" "$1"; fi\n`,
  );
  fs.writeFileSync(path.join(top, 'systemctl.sh'), `log=$1; shift; echo "$@" >> "$log"\n`);
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    GIT_CONFIG_GLOBAL: path.join(home, '.gitconfig'),
    GIT_TEST_MAINT_SCHEDULER: `crontab:sh ${path.join(top, 'crontab.sh')} ${cron},systemctl:sh ${path.join(top, 'systemctl.sh')} ${systemctlLog}`,
  };
  return { top, env, cron, systemctlLog };
}

function makeRepo(top: string, name: string, commits: number): string {
  const repo = path.join(top, name);
  gitOk(['-c', 'init.defaultBranch=main', 'init', '-q', '--template=', repo]);
  for (let i = 0; i < commits; i++) {
    fs.writeFileSync(path.join(repo, `f${i % 5}.txt`), `content ${i}\n`.repeat(10 + i));
    gitOk(['add', '-A'], { cwd: repo });
    gitOk(['commit', '-q', '-m', `c${i}`], { cwd: repo });
  }
  gitOk(['config', 'pack.graphCompression', '0'], { cwd: repo });
  gitOk(['config', 'repackTs.auto', '1'], { cwd: repo });
  return repo;
}

function blockOf(crontab: string, begin: string, end: string): string[] {
  const lines = crontab.split('\n');
  const a = lines.indexOf(begin);
  const b = lines.indexOf(end);
  return a < 0 || b < a ? [] : lines.slice(a, b + 1);
}

describe('maintenance start and stop, beside git maintenance', () => {
  it("crontab: our block beside git's, each left alone by the other, and the line does the work", () => {
    const { top, env, cron } = sandbox();
    fs.writeFileSync(cron, '# a line of the user\n5 4 * * * echo hello\n');
    const a = makeRepo(top, 'a', 6);
    const b = makeRepo(top, 'b', 4);
    gitOk(['maintenance', 'start', '--scheduler=crontab'], { cwd: a, env });
    const gitBlock = blockOf(
      fs.readFileSync(cron, 'utf8'),
      '# BEGIN GIT MAINTENANCE SCHEDULE',
      '# END GIT MAINTENANCE SCHEDULE',
    );
    expect(gitBlock.length).toBeGreaterThan(2);
    const out = toolOk(['maintenance', 'start', '--scheduler=crontab'], { cwd: b, env });
    expect(out).toContain(`registered ${b} in maintenance.repo`);
    let text = fs.readFileSync(cron, 'utf8');
    expect(text.startsWith('# a line of the user\n5 4 * * * echo hello\n')).toBe(true);
    expect(
      blockOf(text, '# BEGIN GIT MAINTENANCE SCHEDULE', '# END GIT MAINTENANCE SCHEDULE'),
    ).toEqual(gitBlock);
    const ours = blockOf(text, '# BEGIN GIT REPACK-TS SCHEDULE', '# END GIT REPACK-TS SCHEDULE');
    const line = ours.find((l) => /^\d/.test(l))!;
    // Every hour, half an hour from the minute of git's own lines.
    const gitMinute = Number(/^(\d+) /.exec(gitBlock.find((l) => /^\d/.test(l))!)![1]);
    expect(line).toMatch(
      new RegExp(
        `^${(gitMinute + 30) % 60} \\* \\* \\* \\* PATH=.* for-each-repo --config=maintenance\\.repo repack-ts --auto --quiet$`,
      ),
    );
    // Both repositories are registered (git registered a, we registered b): git's list.
    expect(
      gitOk(['config', '--global', '--get-all', 'maintenance.repo'], { env })
        .trim()
        .split('\n')
        .sort(),
    ).toEqual([a, b].sort());
    // Starting again replaces the block, never doubles it.
    toolOk(['maintenance', 'start', '--scheduler=crontab'], { cwd: b, env });
    expect(
      blockOf(
        fs.readFileSync(cron, 'utf8'),
        '# BEGIN GIT REPACK-TS SCHEDULE',
        '# END GIT REPACK-TS SCHEDULE',
      ),
    ).toEqual(ours);
    // The line as cron runs it (sh, no PATH of ours, HOME set): both repositories rewritten.
    const before = { a: objectSet(a), b: objectSet(b) };
    const cronLine = line.replace(/^(\S+ ){5}/, '');
    const r = spawnSync('/bin/sh', ['-c', cronLine], {
      env: {
        HOME: env.HOME,
        GIT_CONFIG_GLOBAL: env.GIT_CONFIG_GLOBAL,
        GIT_CONFIG_NOSYSTEM: '1',
        LANG: 'C',
      },
      encoding: 'utf8',
      cwd: '/',
    });
    expect({ status: r.status, stderr: r.stderr, stdout: r.stdout }).toEqual({
      status: 0,
      stderr: '',
      stdout: '',
    });
    for (const repo of [a, b]) {
      expect(objectSet(repo)).toEqual(before[repo === a ? 'a' : 'b']);
      expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
      expect(gitOk(['count-objects', '-v'], { cwd: repo })).toMatch(/^count: 0$/m);
      for (const pack of listPacks(repo)) {
        const bytes = fs.readFileSync(pack);
        for (const e of verifyPack(repo, pack).entries)
          if (e.type === 'commit' || e.type === 'tree')
            expect(entryZlibInfo(bytes, e.offset, 20)).toEqual({ flevel: 0, stored: true });
      }
    }
    // git's stop leaves ours; ours leaves the user's lines.
    gitOk(['maintenance', 'stop'], { cwd: a, env });
    text = fs.readFileSync(cron, 'utf8');
    expect(
      blockOf(text, '# BEGIN GIT MAINTENANCE SCHEDULE', '# END GIT MAINTENANCE SCHEDULE'),
    ).toEqual([]);
    expect(blockOf(text, '# BEGIN GIT REPACK-TS SCHEDULE', '# END GIT REPACK-TS SCHEDULE')).toEqual(
      ours,
    );
    expect(toolOk(['maintenance', 'stop'], { cwd: a, env })).toContain('removed from crontab');
    expect(fs.readFileSync(cron, 'utf8')).toBe('# a line of the user\n5 4 * * * echo hello\n');
  });

  it("systemd-timer: units of our own beside git's, enabled and removed through systemctl --user", () => {
    const { top, env, systemctlLog } = sandbox();
    const a = makeRepo(top, 'a', 2);
    const unitDir = path.join(env.XDG_CONFIG_HOME, 'systemd', 'user');
    gitOk(['maintenance', 'start', '--scheduler=systemd-timer'], { cwd: a, env });
    const gitUnits = fs.readdirSync(unitDir).sort();
    expect(gitUnits).toContain('git-maintenance@.service');
    fs.writeFileSync(systemctlLog, '');
    toolOk(['maintenance', 'start', '--scheduler=systemd-timer'], { cwd: a, env });
    expect(fs.readdirSync(unitDir).sort()).toEqual(
      [...gitUnits, 'git-repack-ts.service', 'git-repack-ts.timer'].sort(),
    );
    expect(fs.readFileSync(systemctlLog, 'utf8')).toBe(
      '--user daemon-reload\n--user enable --now git-repack-ts.timer\n',
    );
    const timer = fs.readFileSync(path.join(unitDir, 'git-repack-ts.timer'), 'utf8');
    expect(timer).toMatch(/^OnCalendar=\*-\*-\* \*:\d\d:00$/m);
    expect(timer).toMatch(/^Persistent=true$/m);
    const service = fs.readFileSync(path.join(unitDir, 'git-repack-ts.service'), 'utf8');
    const exec = /^ExecStart=\/bin\/sh -c (".*")$/m.exec(service)![1]!;
    expect(JSON.parse(exec)).toMatch(
      /for-each-repo --config=maintenance\.repo repack-ts --auto --quiet$/,
    );
    // node compiles to machine code: the setting git's own service has would kill it.
    expect(service).not.toMatch(/MemoryDenyWriteExecute/);
    // What the service runs works as it is written.
    const r = spawnSync('/bin/sh', ['-c', JSON.parse(exec)], {
      env: { HOME: env.HOME, GIT_CONFIG_GLOBAL: env.GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM: '1' },
      encoding: 'utf8',
      cwd: '/',
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(fs.existsSync(path.join(a, '.git', 'objects', 'info', 'repack-ts.proven'))).toBe(true);
    fs.writeFileSync(systemctlLog, '');
    toolOk(['maintenance', 'stop', '--scheduler=systemd-timer'], { cwd: a, env });
    expect(fs.readFileSync(systemctlLog, 'utf8')).toBe(
      '--user disable --now git-repack-ts.timer\n',
    );
    expect(fs.readdirSync(unitDir).sort()).toEqual(gitUnits);
  });

  it('a scheduler that is not there, and bad arguments, as git says them', () => {
    const { top, env } = sandbox();
    const a = makeRepo(top, 'a', 1);
    const only = { ...env, GIT_TEST_MAINT_SCHEDULER: 'crontab:false' };
    const r = spawnSync(
      process.execPath,
      [path.resolve('bin/git-repack-ts.js'), 'maintenance', 'start', '--scheduler=systemd-timer'],
      { env: { ...process.env, ...only }, encoding: 'utf8', cwd: a },
    );
    const g = spawnSync('git', ['maintenance', 'start', '--scheduler=systemd-timer'], {
      env: { ...process.env, ...only },
      encoding: 'utf8',
      cwd: a,
    });
    expect(g.stderr).toBe('fatal: systemctl scheduler is not available\n');
    expect(r.stderr).toBe(g.stderr);
    expect(r.status).toBe(g.status);
    expect(r.status).toBe(128);
    const bad = spawnSync(
      process.execPath,
      [path.resolve('bin/git-repack-ts.js'), 'maintenance', 'start', '--scheduler=cron-ish'],
      { env: { ...process.env, ...only }, encoding: 'utf8', cwd: a },
    );
    const gbad = spawnSync('git', ['maintenance', 'start', '--scheduler=cron-ish'], {
      env: { ...process.env, ...only },
      encoding: 'utf8',
      cwd: a,
    });
    expect(bad.status).toBe(gbad.status);
    expect(gbad.stderr).toMatch(/^error: unrecognized --scheduler argument 'cron-ish'$/m);
    expect(bad.stderr).toMatch(/^error: unrecognized --scheduler argument 'cron-ish'$/m);
  });
});
