/**
 * A hostile environment: a full disk (ENOSPC injected at every write, rename and fsync, and a
 * real small tmpfs filled up), a read-only objects/pack (a read-only bind mount, an immutable
 * directory, an unprivileged user), paths full of shell metacharacters, and a trace of every
 * file the run writes or removes (nothing outside the object directory). Each failure must be
 * clean: exit 128, a message naming what failed and in what state the repository is, every
 * object still there, no temporary file or lock left, and the next run must succeed.
 *
 * Mounts, chattr and another user need root: those cases are skipped (and say so) elsewhere.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { gitEnv, objectSet } from './helpers/git.js';
import {
  CLI_BIN,
  digestDiff,
  dropScratch,
  integrityProblems,
  isRoot,
  leftovers,
  LONG,
  objectsDirOf,
  packShape,
  record,
  scaled,
  scratchCopy,
  toolFault,
  tracePoints,
  treeDigest,
} from './helpers/faults.js';

const ARGS = ['-q', '--graph-compression=0'];
const SRC = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../src');

function run(cmd: string, args: string[]): { status: number; stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return { status: r.status ?? -1, stderr: r.stderr ?? String(r.error) };
}

/** Can this process mount a tmpfs here (root with CAP_SYS_ADMIN, no seccomp refusal)? */
function canMount(): boolean {
  if (!isRoot()) return false;
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-mnt-probe-'));
  const ok = run('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', d]).status === 0;
  if (ok) run('umount', [d]);
  fs.rmdirSync(d);
  return ok;
}

const MOUNT = canMount();
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts.reverse()) run('umount', ['-l', m]);
});

/**
 * Where a failed run may leave its journal: only after the new pack was installed, and then its
 * lock with it (the next run takes that lock over to act on the journal), as the message says.
 */
function allowedAfterFailure(stderr: string): string[] {
  return /finishes the removal/.test(stderr) &&
    /maintenance\.lock is left in place: the next git repack-ts takes it over/.test(stderr)
    ? ['maintenance.lock', 'repack-ts.journal']
    : [];
}

describe('ENOSPC (and EIO) injected at every write, rename and fsync', () => {
  const FIXTURES: FixtureName[] = LONG ? ['basic', 'promisor', 'midx-bitmap', 'keep'] : ['basic'];
  for (const name of FIXTURES) {
    it(
      name,
      () => {
        const before = objectSet(fixturePath(name));
        const ref = scratchCopy(fixturePath(name), name);
        const points = tracePoints(ARGS, ref);
        const shape = packShape(ref);
        dropScratch(ref);
        // Every point where the file system can refuse: creating, writing, fsyncing, renaming,
        // and the pack writer's writes (its progress is reported after each batch it wrote).
        const kinds = /^(create|write|fsync|fsync-dir|rename|progress:writing objects|phase:fsck)$/;
        let chosen = points.map((p, i) => ({ ...p, k: i + 1 })).filter((p) => kinds.test(p.point));
        if (!LONG) chosen = chosen.filter((_, i) => i % 3 === 0);
        const problems: string[] = [];
        let held = 0;
        chosen.forEach((p, i) => {
          const action = i % 4 === 3 ? 'eio' : 'enospc';
          const repo = scratchCopy(fixturePath(name), name);
          try {
            const r = toolFault(ARGS, repo, `*:${p.k}:${action}`);
            const say = (m: string) =>
              problems.push(`${name} ${action} at ${p.point} ${p.detail}: ${m}`);
            const n0 = problems.length;
            const code = action === 'eio' ? 'Input/output error' : 'No space left on device'; // strerror, as git says it
            if (/repack-ts\.proven|objects\/info$/.test(p.detail)) {
              // The record of proven packs is written last, a cache: its failure is a warning, the
              // run done; the next run reads the packs again (checked below, with everything else).
              if (r.status !== 0) say(`exit ${r.status}: ${r.stderr}`);
              if (
                !new RegExp(
                  `^warning: could not record the packs proven at these levels in .*: ${code}; the next run reads them again$`,
                  'm',
                ).test(r.stderr)
              )
                say(`unclear message: ${r.stderr}`);
            } else {
              if (r.status !== 128) say(`exit ${r.status}: ${r.stderr}`);
              if (
                !r.stderr.startsWith('fatal: ') ||
                !r.stderr.includes(code) ||
                !/nothing was changed|finishes the removal|left in place/.test(r.stderr)
              )
                say(`unclear message: ${r.stderr}`);
            }
            for (const x of integrityProblems(repo, before)) say(x);
            const left = leftovers(repo).filter((f) => !allowedAfterFailure(r.stderr).includes(f));
            if (left.length > 0) say(`left ${left.join(', ')}`);
            const next = toolFault(ARGS, repo, undefined);
            if (next.status !== 0) say(`the next run failed: ${next.stderr}`);
            if (leftovers(repo).length > 0) say(`the next run left ${leftovers(repo).join(', ')}`);
            if (packShape(repo).join('|') !== shape.join('|'))
              say(`shape ${packShape(repo).join('|')}`);
            for (const x of integrityProblems(repo, before)) say(`after the next run: ${x}`);
            if (problems.length === n0) held++;
          } finally {
            dropScratch(repo);
          }
        });
        record(`injected ENOSPC/EIO (${name})`, chosen.length, held);
        expect(problems).toEqual([]);
      },
      scaled(90_000, 1_800_000),
    );
  }
});

describe.skipIf(!MOUNT)('a real full disk: a small tmpfs, filled up', () => {
  // Without threads, and with the worker and the writing thread forced on (the fixture is below
  // the size that starts them): a full disk under the writing thread must fail as cleanly.
  it.each([
    ['', {}],
    [', threads', { GIT_REPACK_TS_THREADS: '1' }],
  ] as const)(
    'every amount of free space: success or a clean ENOSPC, then success once there is room%s',
    (label, env) => {
      const before = objectSet(fixturePath('basic'));
      const frees = LONG
        ? [0, 1, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024]
        : [0, 8, 32, 64, 256, 1024];
      const problems: string[] = [];
      const outcomes: string[] = [];
      for (const kib of frees) {
        const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-full-'));
        expect(run('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mnt]).status).toBe(0);
        mounts.push(mnt);
        try {
          fs.cpSync(path.dirname(fixturePath('basic')), path.join(mnt, 'fx'), {
            recursive: true,
            preserveTimestamps: true,
            verbatimSymlinks: true,
          });
          const repo = path.join(mnt, 'fx', 'repo');
          const st = fs.statfsSync(mnt);
          const avail = st.bavail * st.bsize;
          const filler = path.join(mnt, 'filler');
          fs.writeFileSync(filler, Buffer.alloc(Math.max(0, avail - kib * 1024)));
          const r = toolFault(ARGS, repo, undefined, env);
          outcomes.push(
            `${kib} KiB free: ${r.status === 0 ? 'done' : r.stderr.split('\n')[0]!.replace(mnt, '<mnt>').slice(0, 120)}`,
          );
          const say = (m: string) => problems.push(`${kib} KiB free: ${m}`);
          if (r.status !== 0) {
            if (
              r.status !== 128 ||
              !/^fatal: .*(ENOSPC|no space left on device|No space left on device)/.test(r.stderr)
            )
              say(`unclear failure ${r.status}: ${r.stderr}`);
            const left = leftovers(repo).filter((f) => !allowedAfterFailure(r.stderr).includes(f));
            if (left.length > 0) say(`left ${left.join(', ')}`);
          }
          for (const x of integrityProblems(repo, before)) say(x);
          fs.rmSync(filler);
          const next = toolFault(ARGS, repo, undefined);
          if (next.status !== 0) say(`with room again the run failed: ${next.stderr}`);
          if (leftovers(repo).length > 0)
            say(`with room again the run left ${leftovers(repo).join(', ')}`);
          for (const x of integrityProblems(repo, before)) say(`with room again: ${x}`);
        } finally {
          run('umount', [mnt]);
          mounts.pop();
          fs.rmdirSync(mnt);
        }
      }
      record(
        `a real full tmpfs${label}`,
        frees.length,
        frees.length - new Set(problems.map((p) => p.split(':')[0])).size,
        outcomes,
      );
      expect(problems).toEqual([]);
    },
    scaled(60_000, 600_000),
  );
});

/** Runs the tool on a repository whose objects/pack cannot be written; checks the failure is clean. */
function readOnlyCase(
  repo: string,
  runIt: () => { status: number; stderr: string },
  code: RegExp,
  setup = () => {},
  restore = () => {},
): void {
  const before = objectSet(repo);
  const digest = treeDigest(repo);
  setup();
  const r = runIt();
  restore();
  expect(r.status).toBe(128);
  expect(r.stderr).toMatch(/^fatal: /);
  expect(r.stderr).toMatch(code);
  expect(r.stderr).toMatch(/nothing was changed/);
  expect(digestDiff(digest, treeDigest(repo))).toEqual([]);
  expect(objectSet(repo)).toEqual(before);
}

describe('a read-only objects/pack', () => {
  it.skipIf(!MOUNT)(
    'a read-only bind mount (EROFS)',
    () => {
      const repo = scratchCopy(fixturePath('basic'), 'rofs');
      const pack = path.join(objectsDirOf(repo), 'pack');
      try {
        expect(run('mount', ['--bind', pack, pack]).status).toBe(0);
        mounts.push(pack);
        expect(run('mount', ['-o', 'remount,bind,ro', pack]).status).toBe(0);
        readOnlyCase(repo, () => toolFault(ARGS, repo, undefined), /Read-only file system/);
        expect(leftovers(repo)).toEqual([]);
        run('umount', [pack]);
        mounts.pop();
        expect(toolFault(ARGS, repo, undefined).status).toBe(0);
        record('read-only objects/pack (bind mount, EROFS)', 1, 1);
      } finally {
        run('umount', [pack]);
        dropScratch(repo);
      }
    },
    60_000,
  );

  const chattrOk = isRoot() && run('chattr', ['--help']).status !== 127;
  it.skipIf(!chattrOk)(
    'an immutable directory (chattr +i: EPERM even for root)',
    () => {
      // Not on tmpfs: chattr needs ext4, xfs or the like.
      const top = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-rel-immutable-'));
      const dest = path.join(top, 'fx');
      fs.cpSync(path.dirname(fixturePath('basic')), dest, {
        recursive: true,
        preserveTimestamps: true,
        verbatimSymlinks: true,
      });
      const repo = path.join(dest, 'repo');
      const pack = path.join(objectsDirOf(repo), 'pack');
      try {
        const c = run('chattr', ['+i', pack]);
        if (c.status !== 0) {
          record('immutable objects/pack', 0, 0, [`chattr refused here: ${c.stderr.trim()}`]);
          return;
        }
        readOnlyCase(repo, () => toolFault(ARGS, repo, undefined), /Operation not permitted/);
        expect(leftovers(repo)).toEqual([]);
        record('immutable objects/pack (chattr +i, EPERM)', 1, 1);
      } finally {
        run('chattr', ['-i', pack]);
        fs.rmSync(top, { recursive: true, force: true });
      }
    },
    60_000,
  );

  const setprivOk = isRoot() && run('setpriv', ['--version']).status === 0;
  it.skipIf(!setprivOk)(
    'an unprivileged user and a 0555 objects/pack (EACCES)',
    () => {
      const top = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-rel-user-'));
      const dest = path.join(top, 'fx');
      fs.cpSync(path.dirname(fixturePath('basic')), dest, {
        recursive: true,
        preserveTimestamps: true,
        verbatimSymlinks: true,
      });
      const repo = path.join(dest, 'repo');
      const pack = path.join(objectsDirOf(repo), 'pack');
      try {
        fs.chmodSync(top, 0o755);
        const asNobody = (args: string[]) => {
          const r = spawnSync(
            'setpriv',
            [
              '--reuid=65534',
              '--regid=65534',
              '--clear-groups',
              '--',
              process.execPath,
              CLI_BIN,
              ...args,
            ],
            { cwd: repo, env: gitEnv(), encoding: 'utf8' },
          );
          return { status: r.status ?? -1, stderr: r.stderr };
        };
        // The CLI must be readable by that user; if it is not (a private checkout), say so.
        const probe = asNobody(['--version']);
        if (probe.status !== 0) {
          record('unprivileged user, 0555 objects/pack', 0, 0, [
            `cannot run the CLI as nobody here: ${probe.stderr.trim().slice(0, 200)}`,
          ]);
          return;
        }
        // The checks run as root, before and after (git refuses a repository owned by another user).
        const give = () => {
          expect(run('chown', ['-R', '65534:65534', dest]).status).toBe(0);
          fs.chmodSync(pack, 0o555);
        };
        const takeBack = () => {
          fs.chmodSync(pack, 0o755);
          expect(run('chown', ['-R', '0:0', dest]).status).toBe(0);
        };
        readOnlyCase(repo, () => asNobody(ARGS), /Permission denied/, give, takeBack);
        expect(leftovers(repo)).toEqual([]);
        record('unprivileged user, 0555 objects/pack (EACCES)', 1, 1);
      } finally {
        fs.rmSync(top, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe('paths, names and what is written', () => {
  it('no shell anywhere in the sources', () => {
    const offenders: string[] = [];
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts')) {
          const text = fs.readFileSync(p, 'utf8');
          const childProcess = [
            ...text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'node:child_process'/g),
          ]
            .map((m) => m[1]!)
            .join(',');
          const shell =
            /\bshell\s*:\s*(true|['"])/.test(text) || // spawn(..., { shell: true })
            /\b(exec|execSync)\b/.test(childProcess) || // child_process.exec runs /bin/sh -c
            /\bspawn(Sync)?\(\s*['"](\/bin\/)?(ba)?sh['"]/.test(text);
          if (shell) offenders.push(path.relative(SRC, p));
        }
      }
    };
    walk(SRC);
    expect(offenders).toEqual([]);
  });

  it('a repository whose path is full of shell metacharacters', () => {
    const top = fs.mkdtempSync(
      path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'git-repack-ts-rel-meta-'),
    );
    const weird = path.join(top, `a b;$(touch PWNED1)\`touch PWNED2\`'"|&<>*?[x]{y}~!#%\\n`);
    try {
      fs.mkdirSync(weird);
      fs.cpSync(path.dirname(fixturePath('basic')), path.join(weird, 'fx'), {
        recursive: true,
        preserveTimestamps: true,
        verbatimSymlinks: true,
      });
      const repo = path.join(weird, 'fx', 'repo');
      const before = objectSet(repo);
      // A killed run first, so that its leftovers and their recovery use the path too.
      expect(toolFault(ARGS, repo, 'phase:loose:1:kill').killed).toBe(true);
      for (const args of [['verify'], ['inspect'], ARGS]) {
        const r = toolFault(args, repo, undefined);
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
      }
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      const found: string[] = [];
      const walk = (d: string): void => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
          if (/^PWNED\d$/.test(e.name)) found.push(path.join(d, e.name));
          if (e.isDirectory()) walk(path.join(d, e.name));
        }
      };
      walk(top);
      for (const d of [process.cwd(), os.tmpdir(), repo])
        for (const n of fs.readdirSync(d)) if (/^PWNED\d$/.test(n)) found.push(path.join(d, n));
      expect(found).toEqual([]);
      record('shell metacharacters in the repository path', 1, 1);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  });

  const straceOk = run('strace', ['-V']).status === 0;
  for (const name of ['midx-bitmap', 'promisor', 'keep'] as FixtureName[]) {
    it.skipIf(!straceOk)(
      `${name}: every file written, renamed or removed is inside the object directory (strace), and new files are read-only like git's`,
      () => {
        const repo = scratchCopy(fixturePath(name), `strace-${name}`);
        try {
          const objects = objectsDirOf(repo);
          // A killed run first, so that the trace covers the recovery as well.
          toolFault(ARGS, repo, 'phase:loose:1:kill');
          const modes = new Map<string, number>();
          const theirs = path.join(objectsDirOf(fixturePath(name)), 'pack');
          for (const f of fs.readdirSync(theirs))
            modes.set(f.split('.').pop()!, fs.statSync(path.join(theirs, f)).mode & 0o777);
          const trace = path.join(path.dirname(path.dirname(repo)), 'strace.out');
          const calls =
            'open,openat,creat,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,link,linkat,symlink,symlinkat,chmod,fchmodat,truncate,utimensat,chdir';
          const r = spawnSync(
            'strace',
            ['-f', '-qq', '-e', `trace=${calls}`, '-o', trace, process.execPath, CLI_BIN, ...ARGS],
            { cwd: repo, env: gitEnv(), encoding: 'utf8' },
          );
          expect(r.stderr).toBe('');
          expect(r.status).toBe(0);
          const outside: string[] = [];
          const relative: string[] = [];
          // Directories opened and then named through /proc/self/fd/<n> (the fsck view's removal).
          const fds = new Map<string, string>();
          for (const line of fs.readFileSync(trace, 'utf8').split('\n')) {
            const o =
              /^(\d+)\s+openat\(AT_FDCWD, "((?:[^"\\]|\\.)*)", [^)]*O_DIRECTORY[^)]*\) = (\d+)$/.exec(
                line,
              );
            if (o) fds.set(`${o[1]} ${o[3]}`, o[2]!);
            const m = /^(\d+)\s+(?:<\.\.\. )?(\w+)\(([^)]*)/.exec(line);
            if (!m) continue;
            const [, pid, call, rawArgs] = m as unknown as [string, string, string, string];
            const args = rawArgs.replace(/"\/proc\/self\/fd\/(\d+)/g, (all, fd: string) =>
              fds.has(`${pid} ${fd}`) ? `"${fds.get(`${pid} ${fd}`)}` : all,
            );
            if (call === 'chdir') continue;
            const writes =
              call.startsWith('open') || call === 'creat'
                ? /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(args)
                : true;
            if (!writes || / = -1 E/.test(line)) continue;
            for (const q of args.match(/"((?:[^"\\]|\\.)*)"/g) ?? []) {
              const p = q.slice(1, -1);
              if (p === '/dev/null' || p.startsWith('/dev/pts') || p === '/dev/tty') continue;
              if (!p.startsWith('/')) relative.push(`${call} ${p}`);
              else if (p !== objects && !p.startsWith(objects + '/')) outside.push(`${call} ${p}`);
            }
          }
          expect(outside).toEqual([]);
          expect(relative).toEqual([]);
          // .pack, .idx, .rev and .promisor are 0444 as git repack makes them (umask 022).
          for (const f of fs.readdirSync(path.join(objects, 'pack'))) {
            const ext = f.split('.').pop()!;
            const mode = fs.statSync(path.join(objects, 'pack', f)).mode & 0o777;
            if (['pack', 'idx', 'rev', 'promisor'].includes(ext))
              expect({ f, mode: mode.toString(8) }).toEqual({ f, mode: '444' });
            else if (modes.has(ext))
              expect({ f, mode: mode.toString(8) }).toEqual({
                f,
                mode: modes.get(ext)!.toString(8),
              });
          }
          record(`strace: writes only inside objects/ (${name})`, 1, 1);
        } finally {
          dropScratch(repo);
        }
      },
      60_000,
    );
  }
});

beforeAll(() => {
  if (!MOUNT) record('mount-based cases (tmpfs, bind mount)', 0, 0, ['skipped: cannot mount here']);
});
