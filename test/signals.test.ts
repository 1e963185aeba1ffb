/**
 * git's sigchain: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove the lock and the temporary files,
 * then the process dies of the signal. A real rewrite is stopped at several phases (the fault
 * harness's `stop`), signalled, resumed; afterwards no lock, no temporary file, the same objects.
 * A closed stdout is git's SIGPIPE: silent, 141, compared with git verify-pack on the same pack.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { PINNED_EPOCH, countObjects, fsckStrict, gitEnv, objectSet } from './helpers/git.js';
import { Prng } from './helpers/prng.js';
import { leftovers, runUntil } from './helpers/faults.js';
import { BIN } from './helpers/tool.js';

const CASES: [string, NodeJS.Signals][] = [
  ['phase:locked', 'SIGINT'],
  ['progress:writing*', 'SIGHUP'], // the new pack being written
  ['phase:written', 'SIGTERM'], // written, not yet proved
  ['progress:validating', 'SIGHUP'],
  ['phase:proved', 'SIGPIPE'],
  ['phase:fsck', 'SIGINT'], // git index-pack is reading what is written anew
];

/**
 * A `git fast-import` stream: `commits` commits on main, each changing `files` text files of
 * 0.5-3 KiB (seeded words) in as many of 40 directories: about 6 objects per commit at `files` = 2.
 */
function historyStream(commits: number, files: number): Buffer {
  const rng = new Prng(24_000);
  const parts: string[] = [];
  for (let c = 1; c <= commits; c++) {
    const msg = `change ${c}\n`;
    parts.push(
      `commit refs/heads/main\ncommitter T <t@example.com> ${PINNED_EPOCH + c} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}`,
    );
    for (let f = 0; f < files; f++) {
      const body = `${rng.words(rng.range(80, 480))}\n`;
      parts.push(
        `M 100644 inline d${rng.int(40)}/f${rng.int(8)}.txt\ndata ${Buffer.byteLength(body)}\n${body}`,
      );
    }
    parts.push('\n');
  }
  return Buffer.from(parts.join(''));
}

/** A bare repository of some 24k objects (jq's size) in `top`, from `historyStream`. */
function repo24k(top: string): string {
  const repo = path.join(top, 'r.git');
  expect(spawnSync('git', ['init', '-q', '--bare', repo], { env: gitEnv() }).status).toBe(0);
  // fast-import grows and shrinks its heap by `brk` some 40,000 times for this stream, and a
  // `brk` can cost 170 us on a VM (10 s here): glibc keeps 64 MiB at the top instead (1 s).
  const fi = spawnSync('git', ['fast-import', '--quiet'], {
    cwd: repo,
    env: gitEnv({ MALLOC_TOP_PAD_: String(64 << 20), MALLOC_TRIM_THRESHOLD_: String(128 << 20) }),
    input: historyStream(4000, 2),
  });
  expect(fi.status, fi.stderr?.toString()).toBe(0);
  expect(countObjects(repo).inPack).toBeGreaterThan(20_000);
  return repo;
}

/** The packs `packs` as they were, nothing of ours left in objects/, the objects `before`. */
function expectUntouched(
  repo: string,
  packs: string[],
  before: ReturnType<typeof objectSet>,
): void {
  expect(fs.readdirSync(path.join(repo, 'objects/pack')).sort()).toEqual(packs);
  expect(
    fs.readdirSync(path.join(repo, 'objects')).filter((n) => /^tmp_|lock$|journal/.test(n)),
  ).toEqual([]);
  expect(objectSet(repo)).toEqual(before);
}

describe('signals during a rewrite (git’s sigchain)', () => {
  it.each(CASES)(
    'stopped at %s, then %s: no lock, no temporary file, the same objects',
    async (point, sig) => {
      const repo = useFixtureCopy('multi-pack');
      const before = objectSet(repo);
      const run = await runUntil(
        ['--graph-compression=0', '--blob-compression=1', '-q'],
        repo,
        point,
      );
      try {
        expect(run.stopped).toBe(true);
        // What a signal must clean up is there at this moment.
        if (point !== 'phase:locked') expect(leftovers(repo).length).toBeGreaterThan(1);
        expect(leftovers(repo)).toContain('maintenance.lock');
        process.kill(run.pid, sig);
        run.resume();
        const r = await run.done;
        // Dies of the signal, like git. A small repository's run has no idle turn of the event loop
        // before its end, so it may finish first: either way nothing of it is left behind.
        expect(r.signal).toBe(sig);
        expect(r.stderr).toBe('');
      } finally {
        run.kill();
      }
      expect(leftovers(repo)).toEqual([]);
      expect(objectSet(repo)).toEqual(before);
      expect(fsckStrict(repo).status).toBe(0);
      expect(countObjects(repo).garbage).toBe(0);
    },
  );

  // A rewrite big enough to be interrupted for real (the handler runs at the event loop's next idle
  // turn): a 24k-object repository (jq's size), SIGINT while the new pack is being written.
  it('SIGINT in the middle of writing a 24k-object pack: the old pack stays, nothing else', async () => {
    const top = fs.mkdtempSync(
      path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'sig-24k-'),
    );
    try {
      const repo = repo24k(top);
      const before = objectSet(repo);
      const packDir = path.join(repo, 'objects/pack');
      const packs = fs.readdirSync(packDir).sort();
      const child = spawn(
        process.execPath,
        [BIN, '--graph-compression=0', '--blob-compression=1', '-q'],
        { cwd: repo, env: gitEnv(), stdio: 'ignore' },
      );
      const done = new Promise<NodeJS.Signals | null>((res) =>
        child.on('close', (_c, s) => res(s)),
      );
      while (!fs.readdirSync(packDir).some((n) => n.startsWith('tmp_pack_')))
        await new Promise((r) => setTimeout(r, 2));
      child.kill('SIGINT');
      expect(await done).toBe('SIGINT');
      expectUntouched(repo, packs, before);
      expect(fsckStrict(repo).status).toBe(0);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  }, 60_000);

  // git index-pack reads the entries written anew while they are written: when it stops reading
  // (it found a problem), our next write into its pipe raises SIGPIPE, which is its pipe's and
  // not ours (git ignores SIGPIPE while it feeds a child). A git on PATH whose index-pack reads
  // 64 KiB of the ~2 MiB sent, then fails.
  it('git index-pack stops reading half-way: fatal 128 with what git said, not a death by SIGPIPE; nothing changed', () => {
    const top = fs.mkdtempSync(
      path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'sig-pipe-'),
    );
    try {
      const repo = repo24k(top);
      const before = objectSet(repo);
      const packs = fs.readdirSync(path.join(repo, 'objects/pack')).sort();
      const bin = path.join(top, 'bin');
      fs.mkdirSync(bin);
      const realGit = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
      const stub = `case " $* " in *" index-pack "*) head -c 65536 >/dev/null; echo 'fatal: stopped reading' >&2; exit 1;; esac\nexec '${realGit}' "$@"`;
      fs.writeFileSync(path.join(bin, 'git'), `#!/bin/sh\n${stub}\n`, { mode: 0o755 });
      const r = spawnSync(process.execPath, [BIN, '--graph-compression=0', '-q'], {
        cwd: repo,
        env: gitEnv({ PATH: `${bin}:${process.env.PATH}` }),
        encoding: 'utf8',
      });
      expect(r.signal).toBe(null);
      expect(r.status).toBe(128);
      expect(r.stderr).toMatch(
        /^fatal: git could not read back the rewritten entries; nothing was changed\.\n/,
      );
      expect(r.stderr).toContain('git index-pack said:\nfatal: stopped reading');
      expectUntouched(repo, packs, before);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  }, 60_000);

  it('a closed stdout: exit 141 and nothing on stderr, as git verify-pack -v | true', () => {
    const pack = fs
      .readdirSync(path.join(fixturePath('basic'), '.git/objects/pack'))
      .find((n) => n.endsWith('.pack'))!;
    const file = path.join(fixturePath('basic'), '.git/objects/pack', pack);
    const sh = (cmd: string) =>
      spawnSync('bash', ['-c', `${cmd} | true; echo "\${PIPESTATUS[0]}"`], {
        env: gitEnv(),
        encoding: 'utf8',
      });
    const git = sh(`git verify-pack -v '${file}'`);
    const ours = sh(`'${process.execPath}' '${BIN}' verify -v '${file}'`);
    expect(git.stdout).toBe('141\n');
    expect({ status: ours.stdout, stderr: ours.stderr }).toEqual({
      status: git.stdout,
      stderr: git.stderr,
    });
  });
});
