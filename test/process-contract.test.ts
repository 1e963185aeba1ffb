/**
 * git's process contract (issue 31), each case beside git in the same setup: a standard output
 * that fails, a working directory that is gone, file names that are not UTF-8, /proc files,
 * signals while a read waits, memory when the input never ends, signals while git fsck runs.
 */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { leftovers } from './helpers/faults.js';
import { gitEnv, listPacks, objectSet } from './helpers/git.js';
import { BIN } from './helpers/tool.js';

let root: string;

beforeAll(() => {
  root = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), 'repack-ts-process-'));
});

afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** `p`, or a rejection after `ms`: a process that ignores a signal fails the test instead of hanging it. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_res, rej) =>
      (timer = setTimeout(() => rej(new Error(`${what}: still running after ${ms} ms`)), ms)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Every command the tests run synchronously ends within this (killed otherwise: the test fails, no process is left). */
const SYNC_LIMIT = { timeout: 60_000, killSignal: 'SIGKILL' as const };

interface Outcome {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function outcome(r: ReturnType<typeof spawnSync>): Outcome {
  if (r.error) throw r.error;
  return {
    status: r.status,
    signal: r.signal,
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
  };
}

/** Ours (`git-repack-ts <args>`) and git (`git <gitArgs>`), each in the same setup. */
function both(
  args: (string | Buffer)[],
  gitArgs: (string | Buffer)[],
  opts: SpawnSyncOptions,
): { ours: Outcome; git: Outcome } {
  const o: SpawnSyncOptions = { env: gitEnv(), encoding: 'utf8', ...SYNC_LIMIT, ...opts };
  return {
    ours: outcome(spawnSync(process.execPath, [BIN, ...(args as string[])], o)),
    git: outcome(spawnSync('git', gitArgs as string[], o)),
  };
}

/** `f` with /dev/full open for writing. */
function withDevFull<T>(f: (fd: number) => T): T {
  const full = fs.openSync('/dev/full', 'w');
  try {
    return f(full);
  } finally {
    fs.closeSync(full);
  }
}

describe('a standard output that fails (>/dev/full), as git', () => {
  const packDir = (): string => path.join(fixturePath('basic'), '.git/objects/pack');
  const idx = (): string =>
    path.join(
      packDir(),
      fs.readdirSync(packDir()).find((n) => n.endsWith('.idx'))!,
    );
  const cases: [string, () => string[], () => string[]][] = [
    ['hash-object <file>', () => ['hash-object', 'README.md'], () => ['hash-object', 'README.md']],
    [
      'verify -v',
      () => ['verify', '-v', idx().replace(/\.idx$/, '.pack')],
      () => ['verify-pack', '-v', idx()],
    ],
    ['inspect (git count-objects -v)', () => ['inspect'], () => ['count-objects', '-v']],
    [
      "walk (its summary line; git count-objects -v for run_builtin's check)",
      () => ['walk'],
      () => ['count-objects', '-v'],
    ],
    ['--version', () => ['--version'], () => ['--version']],
    [
      '-n (git repack -n… prints nothing: git count-objects stands in)',
      () => ['-n', '--graph-compression=0', '-q'],
      () => ['count-objects'],
    ],
    [
      'hash-object -h: 129 and nothing said',
      () => ['hash-object', '-h'],
      () => ['hash-object', '-h'],
    ],
  ];
  it.each(cases)('%s: the same message and exit status', (_name, ours, theirs) => {
    const r = withDevFull((full) =>
      both(ours(), theirs(), { cwd: fixturePath('basic'), stdio: ['ignore', full, 'pipe'] }),
    );
    expect(r.git.stderr).toMatch(
      /^(fatal: write failure on (standard output|'hash to stdout'): No space left on device\n)?$/,
    );
    expect({ status: r.ours.status, stderr: r.ours.stderr }).toEqual({
      status: r.git.status,
      stderr: r.git.stderr,
    });
  });

  it('hash-object --stdin-paths: fatal at the first id, as git', () => {
    const r = withDevFull((full) =>
      both(['hash-object', '--stdin-paths'], ['hash-object', '--stdin-paths'], {
        cwd: fixturePath('basic'),
        stdio: ['pipe', full, 'pipe'],
        input: 'README.md\n',
      }),
    );
    expect(r.git.status).toBe(128);
    expect({ status: r.ours.status, stderr: r.ours.stderr }).toEqual({
      status: r.git.status,
      stderr: r.git.stderr,
    });
  });

  it('a standard error that fails is ignored, as git ignores it', () => {
    for (const file of ['README.md', 'no-such-file']) {
      const r = withDevFull((full) =>
        both(['hash-object', file], ['hash-object', file], {
          cwd: fixturePath('basic'),
          stdio: ['ignore', 'pipe', full],
        }),
      );
      expect({ status: r.ours.status, stdout: r.ours.stdout }).toEqual({
        status: r.git.status,
        stdout: r.git.stdout,
      });
    }
  });
});

describe('a working directory that is gone, as git', () => {
  /** Runs `argv` from a directory removed just before (sh cds into it, removes it, then execs). */
  function inRemovedDir(argv: string[]): Outcome {
    const dir = fs.mkdtempSync(path.join(root, 'gone-'));
    return outcome(
      spawnSync('sh', ['-c', 'cd "$1" && rmdir "$1" && shift && exec "$@"', 'sh', dir, ...argv], {
        env: gitEnv(),
        encoding: 'utf8',
        ...SYNC_LIMIT,
      }),
    );
  }
  it.each([
    [
      'hash-object <abs file>',
      (f: string) => ['hash-object', f],
      (f: string) => ['hash-object', f],
    ],
    ['inspect (git count-objects)', () => ['inspect'], () => ['count-objects']],
    ['walk (git count-objects)', () => ['walk'], () => ['count-objects']],
    [
      '-C <absolute dir>: works, as git -C',
      (f: string) => ['-C', path.dirname(f), 'hash-object', path.basename(f)],
      (f: string) => ['-C', path.dirname(f), 'hash-object', path.basename(f)],
    ],
    [
      '-C <relative dir>',
      () => ['-C', 'sub', 'hash-object', 'x'],
      () => ['-C', 'sub', 'hash-object', 'x'],
    ],
  ])('%s: the same message, exit status and output', (_name, ours, theirs) => {
    const file = path.join(root, 'a-file');
    fs.writeFileSync(file, 'some content\n');
    const o = inRemovedDir([process.execPath, BIN, ...ours(file)]);
    const g = inRemovedDir(['git', ...theirs(file)]);
    expect(g.stderr).not.toMatch(/^usage/);
    expect(o).toEqual(g);
  });
});

/** A process started now: its end (status or signal) and how long after `since()` it came. */
interface Started {
  pid: number;
  ended: Promise<{
    status: number | null;
    signal: NodeJS.Signals | null;
    stderr: string;
    at: number;
  }>;
  kill(sig: NodeJS.Signals): number;
}

function start(
  cmd: string,
  args: string[],
  cwd: string,
  stdin: 'pipe' | number,
): Started & { stdin: NodeJS.WritableStream | null } {
  const child = spawn(cmd, args, { cwd, env: gitEnv(), stdio: [stdin, 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{
    status: number | null;
    signal: NodeJS.Signals | null;
    stderr: string;
    at: number;
  }>((res) =>
    child.on('close', (status, signal) => res({ status, signal, stderr, at: Date.now() })),
  );
  return {
    pid: child.pid!,
    ended,
    stdin: child.stdin,
    kill: (sig) => {
      child.kill(sig);
      return Date.now();
    },
  };
}

/** Is `pid` asleep in a read or an open (its state in /proc/<pid>/stat: S)? */
async function waitUntilBlocked(pid: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  let seen = 0;
  while (Date.now() < deadline) {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Asleep several times in a row: the start-up (loading modules) is behind it.
    seen = st.slice(st.lastIndexOf(')') + 2)[0] === 'S' ? seen + 1 : 0;
    if (seen >= 10) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`process ${pid} never waited`);
}

describe('signals while a read waits (a FIFO without a writer, a stalled pipe), as git', () => {
  let repo: string;
  beforeAll(() => {
    repo = path.join(root, 'sig-repo');
    expect(spawnSync('git', ['init', '-q', repo], { env: gitEnv() }).status).toBe(0);
  });

  /** The files under objects/ but loose objects (a temporary object file of -w would be one). */
  function objectFiles(): string[] {
    const objects = path.join(repo, '.git/objects');
    const files = fs
      .readdirSync(objects, { recursive: true, encoding: 'utf8' })
      .filter((n) => !fs.statSync(path.join(objects, n)).isDirectory());
    return files.filter((n) => !/^[0-9a-f]{2}\/[0-9a-f]{38}$/.test(n)).sort();
  }

  /** Runs ours, then git, each until it waits, then sends `sig`: both die of it, ours within 2 s, nothing left. */
  async function interrupt(
    sig: NodeJS.Signals,
    args: string[],
    setup: () => {
      stdin: 'pipe' | number;
      feed?: (w: NodeJS.WritableStream) => void;
      done?: () => void;
    },
  ): Promise<void> {
    const before = objectFiles();
    const ends: {
      signal: NodeJS.Signals | null;
      status: number | null;
      stderr: string;
      ms: number;
    }[] = [];
    for (const [cmd, argv] of [
      [process.execPath, [BIN, ...args]],
      ['git', args],
    ] as const) {
      const s = setup();
      const p = start(cmd, [...argv], repo, s.stdin);
      if (p.stdin) s.feed?.(p.stdin);
      try {
        await waitUntilBlocked(p.pid);
        const at = p.kill(sig);
        const e = await within(p.ended, 5000, `${cmd} ${argv.join(' ')} after ${sig}`);
        ends.push({ signal: e.signal, status: e.status, stderr: e.stderr, ms: e.at - at });
      } finally {
        s.done?.();
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // ended
        }
      }
    }
    const [ours, theirs] = ends;
    expect(theirs!.signal).toBe(sig);
    expect({ signal: ours!.signal, status: ours!.status, stderr: ours!.stderr }).toEqual({
      signal: theirs!.signal,
      status: theirs!.status,
      stderr: theirs!.stderr,
    });
    expect(ours!.ms).toBeLessThan(2000);
    expect(objectFiles()).toEqual(before);
  }

  it('hash-object <fifo> without a writer: SIGINT', async () => {
    const fifo = path.join(root, 'fifo-1');
    spawnSync('mkfifo', [fifo]);
    await interrupt('SIGINT', ['hash-object', fifo], () => ({
      stdin: 'ignore' as unknown as number,
    }));
  }, 60_000);

  it('hash-object -w <fifo> whose writer stalls half-way: SIGTERM, no temporary object left', async () => {
    const fifo = path.join(root, 'fifo-2');
    spawnSync('mkfifo', [fifo]);
    let writer: ReturnType<typeof spawn> | undefined;
    await interrupt('SIGTERM', ['hash-object', '-w', fifo], () => {
      // A writer that sends some content and keeps the FIFO open.
      writer = spawn('sh', ['-c', 'printf "half of it" >&3; exec sleep 60', 'sh'], {
        stdio: ['ignore', 'ignore', 'ignore', fs.openSync(fifo, fs.constants.O_RDWR)],
      });
      return { stdin: 'ignore' as unknown as number, done: () => writer?.kill('SIGKILL') };
    });
  }, 60_000);

  it.each([
    ['hash-object --stdin, SIGTERM', ['hash-object', '--stdin'], 'SIGTERM'],
    ['hash-object -w --stdin, SIGINT', ['hash-object', '-w', '--stdin'], 'SIGINT'],
    [
      'hash-object --stdin-paths (a line answered, then nothing), SIGINT',
      ['hash-object', '--stdin-paths'],
      'SIGINT',
    ],
    ['hash-object -w --stdin-paths, SIGTERM', ['hash-object', '-w', '--stdin-paths'], 'SIGTERM'],
  ] as [string, string[], NodeJS.Signals][])(
    '%s, on a stalled pipe',
    async (_name, args, sig) => {
      fs.writeFileSync(path.join(repo, 'f'), 'content\n');
      await interrupt(sig, args, () => ({
        stdin: 'pipe',
        feed: (w) => w.write(args.includes('--stdin-paths') ? 'f\n' : 'partial content'),
      }));
    },
    60_000,
  );
  it('hash-object --stdin waiting on a terminal (a pty from script(1)): SIGTERM', async () => {
    const ends: { signal: string; ms: number }[] = [];
    for (const argv of [[process.execPath, BIN], ['git']]) {
      const pidFile = path.join(root, `tty-pid-${ends.length}`);
      // The command reads the pty script gives it; its pid is written first, for the signal.
      const inner = `echo $$ > '${pidFile}'; exec ${argv.map((a) => `'${a}'`).join(' ')} hash-object --stdin`;
      const p = spawn('script', ['-qec', inner, '/dev/null'], {
        cwd: repo,
        env: gitEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const ended = new Promise<string>((res) => p.on('close', (code) => res(String(code))));
      let pid = 0;
      try {
        while (!fs.existsSync(pidFile) || fs.readFileSync(pidFile, 'utf8').trim() === '')
          await new Promise((r) => setTimeout(r, 20));
        pid = Number(fs.readFileSync(pidFile, 'utf8'));
        await waitUntilBlocked(pid);
        const at = Date.now();
        process.kill(pid, 'SIGTERM');
        // script(1) exits with its child's status: 128 + 15 for a death by SIGTERM.
        ends.push({
          signal: await within(ended, 5000, 'hash-object on a terminal after SIGTERM'),
          ms: Date.now() - at,
        });
      } finally {
        p.kill('SIGKILL');
        if (pid > 0) spawnSync('kill', ['-KILL', String(pid)]);
      }
    }
    expect(ends[1]!.signal).toBe('143');
    expect(ends[0]!.signal).toBe(ends[1]!.signal);
    expect(ends[0]!.ms).toBeLessThan(2000);
  }, 60_000);
});

describe('an input that never ends (hash-object --stdin </dev/zero), as git', () => {
  it("under an address-space limit: git's 'Out of memory, realloc failed', 128, not a V8 crash", () => {
    const zero = fs.openSync('/dev/zero', 'r');
    try {
      const limit = ['--as=' + (1536 << 20)];
      const ours = outcome(
        spawnSync('prlimit', [...limit, process.execPath, BIN, 'hash-object', '--stdin'], {
          env: gitEnv(),
          encoding: 'utf8',
          stdio: [zero, 'pipe', 'pipe'],
          cwd: root,
          ...SYNC_LIMIT,
        }),
      );
      const theirs = outcome(
        spawnSync('prlimit', [...limit, 'git', 'hash-object', '--stdin'], {
          env: gitEnv(),
          encoding: 'utf8',
          stdio: [zero, 'pipe', 'pipe'],
          cwd: root,
        }),
      );
      expect(theirs).toEqual({
        status: 128,
        signal: null,
        stdout: '',
        stderr: 'fatal: Out of memory, realloc failed\n',
      });
      expect(ours).toEqual(theirs);
    } finally {
      fs.closeSync(zero);
    }
  }, 120_000);

  it('under timeout: SIGTERM ends it within 2 s (143, as git), its memory bounded meanwhile', async () => {
    const zero = fs.openSync('/dev/zero', 'r');
    try {
      for (const [cmd, argv] of [
        [process.execPath, [BIN, 'hash-object', '--stdin']],
        ['git', ['hash-object', '--stdin']],
      ] as const) {
        const p = start(cmd, [...argv], root, zero);
        await new Promise((r) => setTimeout(r, 1500));
        const rss =
          Number(
            /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${p.pid}/status`, 'latin1'))![1],
          ) * 1024;
        const at = p.kill('SIGTERM');
        let e: Awaited<typeof p.ended>;
        try {
          e = await within(p.ended, 5000, `${cmd} reading /dev/zero after SIGTERM`);
        } finally {
          p.kill('SIGKILL');
        }
        expect(e.signal).toBe('SIGTERM');
        expect(e.at - at).toBeLessThan(2000);
        expect(rss).toBeLessThan(6 * 2 ** 30);
      }
    } finally {
      fs.closeSync(zero);
    }
  }, 60_000);
});

describe('files under /proc (stat says size 0, a read gives more), as git', () => {
  it.each([
    [['hash-object', '/proc/version']],
    [['hash-object', '--literally', '/proc/version']],
    [['hash-object', '--literally', '-t', 'blob', '/proc/version', '/proc/cmdline']],
    [['hash-object', '-t', 'commit', '/proc/version']],
    [['hash-object', '--no-filters', '/proc/version', '/proc/self/status']],
  ])('%j: the same ids, message and exit status', (args) => {
    const r = both(args, args, { cwd: root });
    expect(r.ours).toEqual(r.git);
  });

  it('--stdin-paths and -w: the same ids, and git reads back the object written', () => {
    const repo = path.join(root, 'proc-repo');
    expect(spawnSync('git', ['init', '-q', repo], { env: gitEnv() }).status).toBe(0);
    const paths = both(['hash-object', '--stdin-paths'], ['hash-object', '--stdin-paths'], {
      cwd: repo,
      input: '/proc/version\n/proc/self/stat\n',
    });
    expect(paths.ours).toEqual(paths.git);
    const ours = outcome(
      spawnSync(process.execPath, [BIN, 'hash-object', '-w', '--literally', '/proc/version'], {
        cwd: repo,
        env: gitEnv(),
        encoding: 'utf8',
      }),
    );
    const id = ours.stdout.trim();
    expect(ours).toEqual(
      outcome(
        spawnSync('git', ['hash-object', '--literally', '/proc/version'], {
          cwd: repo,
          env: gitEnv(),
          encoding: 'utf8',
        }),
      ),
    );
    expect(
      spawnSync('git', ['cat-file', 'blob', id], { cwd: repo, env: gitEnv(), encoding: 'utf8' })
        .stdout,
    ).toBe(fs.readFileSync('/proc/version', 'utf8'));
  });
});

describe('a signal while git runs for us (git fsck, git index-pack): passed on, as git passes it to its children', () => {
  it.each([
    ['--fsck=full', 'fsck', 'SIGTERM'],
    ['--fsck=connectivity', 'fsck', 'SIGINT'],
    ['--fsck=changed', 'index-pack', 'SIGTERM'],
  ] as [string, string, NodeJS.Signals][])(
    '%s, %s running, %s: the child gets it, we die of it within 2 s, nothing left, nothing changed',
    async (mode, sub, sig) => {
      const repo = useFixtureCopy('multi-pack');
      const before = objectSet(repo);
      const packs = listPacks(repo).sort();
      const bin = fs.mkdtempSync(path.join(root, 'stub-'));
      const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
      // A git whose `sub` says it started, then waits; the signal it gets is written down.
      const got = path.join(bin, 'got');
      const started = path.join(bin, 'started');
      const stub = [
        '#!/bin/sh',
        `case " $* " in *" ${sub} "*)`,
        `  trap 'echo TERM > "${got}"; kill $w; exit 143' TERM; trap 'echo INT > "${got}"; kill $w; exit 130' INT`,
        `  : > "${started}"; sleep 60 & w=$!; wait $w; exit 0;;`,
        'esac',
        `exec '${realGit}' "$@"`,
      ].join('\n');
      fs.writeFileSync(path.join(bin, 'git'), stub + '\n', { mode: 0o755 });
      const child = spawn(process.execPath, [BIN, mode, '--graph-compression=0', '-q'], {
        cwd: repo,
        env: gitEnv({ PATH: `${bin}:${process.env.PATH}` }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const ended = new Promise<NodeJS.Signals | null>((res) =>
        child.on('close', (_c, s) => res(s)),
      );
      try {
        const deadline = Date.now() + 60_000;
        while (!fs.existsSync(started) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        expect(fs.existsSync(started)).toBe(true);
        const at = Date.now();
        child.kill(sig);
        expect(await within(ended, 5000, `the rewrite after ${sig}`)).toBe(sig);
        expect(Date.now() - at).toBeLessThan(2000);
        expect(stderr).toBe('');
        expect(fs.readFileSync(got, 'utf8')).toBe(`${sig.slice(3)}\n`);
      } finally {
        child.kill('SIGKILL');
      }
      expect(leftovers(repo)).toEqual([]);
      expect(listPacks(repo).sort()).toEqual(packs);
      expect(objectSet(repo)).toEqual(before);
    },
    90_000,
  );
});

describe('names that are not UTF-8 (git takes any bytes), as git', () => {
  /**
   * Runs `cmd` in sh, where `$d` is a directory named d\377 holding a repository r and `$f` a file
   * named f\376 in it (Node's strings cannot carry those bytes; sh builds them); `run` is ours or git.
   */
  function sh(
    cmd: string,
    run: 'ours' | 'git',
  ): { status: number | null; stdout: Buffer; stderr: Buffer } {
    const top = fs.mkdtempSync(path.join(root, 'bytes-'));
    const setup = `d=$(printf 'd\\377'); f=$(printf 'f\\376'); mkdir "$d" && git init -q "$d/r" && printf 'hello\\n' > "$d/r/$f" || exit 99`;
    const fn = run === 'ours' ? 'run() { "$NODE" "$BIN" "$@"; }' : 'run() { git "$@"; }';
    const r = spawnSync('sh', ['-c', `${setup}\n${fn}\n${cmd}`], {
      cwd: top,
      env: gitEnv({ NODE: process.execPath, BIN }),
      ...SYNC_LIMIT,
    });
    if (r.error) throw r.error;
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  it.each([
    ['hash-object <file named f\\376>', 'cd "$d/r" && run hash-object "$f"'],
    ['hash-object <dir d\\377>/r/<f\\376>', 'run hash-object "$d/r/$f" "$PWD/$d/r/$f"'],
    ['hash-object of a missing name: the bytes in the message', 'run hash-object "x$f"'],
    [
      '-C <d\\377/r> hash-object -w <f\\376>: written there',
      'run -C "$d/r" hash-object -w "$f" && git -C "$d/r" cat-file -p "$(git -C "$d/r" hash-object "$f")"',
    ],
    [
      '-C <d\\377> -C r (relative, in turn)',
      'run -C "$d" -C r hash-object -w "$f" && git -C "$d/r" count-objects',
    ],
    ['-C <missing name>: the bytes in the message', 'run -C "x$d" hash-object "$f"'],
    [
      'run from d\\377/r (git -C there): -w writes into that repository',
      'cd "$d/r" && run hash-object -w "$f" && git count-objects',
    ],
  ])('%s: the same output, message and exit status', (_name, cmd) => {
    const ours = sh(cmd, 'ours');
    const theirs = sh(cmd, 'git');
    expect(theirs.status).not.toBe(99);
    expect(ours).toEqual(theirs);
  });

  it('the rewrite runs in a repository under d\\377, as git repack does', () => {
    const cmd =
      'cd "$d/r" && git add . && git commit -qm one && git repack -adq && run --graph-compression=0 -q && git count-objects -v | grep -E "^(count|in-pack|packs):" && git fsck --strict --no-dangling';
    const ours = sh(
      cmd.replace(
        'run --graph-compression=0 -q',
        `'${process.execPath}' '${BIN}' --graph-compression=0 -q`,
      ),
      'git',
    );
    expect(ours.stderr.toString()).toBe('');
    expect(ours.status).toBe(0);
    expect(ours.stdout.toString()).toBe('count: 0\nin-pack: 3\npacks: 1\n');
  });
});
