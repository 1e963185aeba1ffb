/**
 * Hostile and unusual repositories (test/hostile.test.ts, "hostile repositories"): small
 * repositories made by git, a hostile state added with git and the file system, the tool run
 * beside stock git on a twin copy, and what both did compared.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLI_BIN, digestDiff, integrityProblems, treeDigest } from './faults.js';
import { gitEnv, objectSet } from './git.js';
import { RepoBuilder } from './repo.js';

/** The arguments every run uses: every type recompressed, so the rewrite really writes. */
export const HOSTILE_ARGS = ['-q', '--graph-compression=0'];

export interface Sandbox {
  /** Holds the repository, its twin and `outside`. */
  top: string;
  repo: string;
  /** A directory beside the repository that nothing may read into the repository or change. */
  outside: string;
  /** The secret file in `outside`. */
  secret: string;
  drop(): void;
}

export const SECRET = 'outside-secret-7f3a9c\n';

/**
 * A small repository: three commits with blobs and trees, two packs (one per `git repack -d`)
 * and a few loose objects; beside it `outside/secret`.
 */
export function sandbox(name: string, opts: { bare?: boolean; shared?: string } = {}): Sandbox {
  const top = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), `rts-hostile-${name}-`));
  const repo = path.join(top, 'repo');
  const r = RepoBuilder.init(repo);
  if (opts.shared !== undefined) r.config('core.sharedRepository', opts.shared);
  for (let i = 0; i < 3; i++) {
    r.write(`f${i}.txt`, `content ${i}\n`.repeat(50 + i));
    r.write(`dir/g${i}.txt`, `other ${i}\n`.repeat(20));
    r.commit(`c${i}`);
    if (i < 2) r.git(['repack', '-q', '-d']);
  }
  const outside = path.join(top, 'outside');
  fs.mkdirSync(outside);
  const secret = path.join(outside, 'secret');
  fs.writeFileSync(secret, SECRET);
  return {
    top,
    repo,
    outside,
    secret,
    drop: () => fs.rmSync(top, { recursive: true, force: true }),
  };
}

export function objectsOf(repo: string): string {
  return path.join(repo, '.git', 'objects');
}

export function packsOf(repo: string): string[] {
  const dir = path.join(objectsOf(repo), 'pack');
  return fs
    .readdirSync(dir)
    .filter((n) => /^pack-[0-9a-f]+\.pack$/.test(n))
    .map((n) => n.slice(0, -5))
    .sort();
}

/** A copy of the repository (stock git runs there, on the same input). */
export function twin(sb: Sandbox, name = 'twin'): string {
  const dest = path.join(sb.top, name);
  fs.cpSync(sb.repo, dest, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  return dest;
}

export interface Ran {
  status: number;
  stdout: string;
  stderr: string;
  ms: number;
  signal: NodeJS.Signals | null;
}

/** Runs argv under `umask` (sh's builtin, then exec), killed after 30 s: a hang is a failure, not a stuck suite. */
function underUmask(
  argv: string[],
  cwd: string,
  umask: string,
  env: Record<string, string | undefined>,
): Ran {
  const t0 = Date.now();
  const r = spawnSync('/bin/sh', ['-c', `umask ${umask} && exec "$@"`, 'sh', ...argv], {
    cwd,
    env: gitEnv(env),
    encoding: 'utf8',
    timeout: 30_000,
    killSignal: 'SIGKILL',
    maxBuffer: 1 << 26,
  });
  return {
    status: r.status ?? -1,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? '',
    ms: Date.now() - t0,
    signal: r.signal,
  };
}

export function runTool(
  repo: string,
  args: string[] = HOSTILE_ARGS,
  opts: { umask?: string; env?: Record<string, string | undefined> } = {},
): Ran {
  return underUmask(
    [process.execPath, CLI_BIN, ...args],
    repo,
    opts.umask ?? '022',
    opts.env ?? {},
  );
}

export function runGit(
  repo: string,
  args: string[],
  opts: { umask?: string; env?: Record<string, string | undefined> } = {},
): Ran {
  return underUmask(['git', ...args], repo, opts.umask ?? '022', opts.env ?? {});
}

/** Permission bits (octal) of each kind of file in objects/pack, and of the directory: `.pack 440`, `dir 2770`. */
export function packModes(repo: string): string[] {
  const dir = path.join(objectsOf(repo), 'pack');
  const out = new Set<string>([`dir ${(fs.statSync(dir).mode & 0o7777).toString(8)}`]);
  for (const n of fs.readdirSync(dir)) {
    const m = /^pack-[0-9a-f]+(\.\w+)$/.exec(n);
    if (m) out.add(`${m[1]} ${(fs.lstatSync(path.join(dir, n)).mode & 0o7777).toString(8)}`);
  }
  return [...out].sort();
}

/**
 * What must hold after any run: no object lost (object set and `git fsck --strict`), `outside`
 * unchanged, and the secret's text in no file of the repository.
 */
export function soundAfter(
  sb: Sandbox,
  before: string[],
  outsideBefore: Map<string, string>,
): string[] {
  const problems = integrityProblems(sb.repo, before);
  problems.push(
    ...digestDiff(outsideBefore, treeDigest(sb.outside)).map((d) => `outside changed: ${d}`),
  );
  const leaked: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.readFileSync(p).includes(SECRET)) leaked.push(p);
    }
  };
  walk(sb.repo);
  problems.push(...leaked.map((p) => `the secret was copied into ${p}`));
  return problems;
}

/** The state before a run: objects and the outside directory. */
export function snapshot(sb: Sandbox): { before: string[]; outside: Map<string, string> } {
  return { before: objectSet(sb.repo), outside: treeDigest(sb.outside) };
}

/**
 * A zombie: a child of `sleep` (which never reaps it) that has exited. Returns its pid and a
 * function that ends the sleeping parent (the zombie goes with it).
 */
export function makeZombie(): { pid: number; end: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zombie-'));
  const out = path.join(dir, 'pid');
  const child = spawnSync(
    '/bin/sh',
    ['-c', `(true & echo $! > "${out}"; exec sleep 60) > /dev/null 2>&1 & echo $!`],
    { encoding: 'utf8' },
  );
  const parent = Number(child.stdout.trim());
  const deadline = Date.now() + 5000;
  let pid = NaN;
  while (Date.now() < deadline) {
    if (fs.existsSync(out) && fs.readFileSync(out, 'utf8').trim() !== '') {
      pid = Number(fs.readFileSync(out, 'utf8').trim());
      const stat = fs.existsSync(`/proc/${pid}/stat`)
        ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
        : '';
      if (/\) Z /.test(stat)) break;
    }
    spawnSync('sleep', ['0.05']);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    pid,
    end: () => {
      try {
        process.kill(parent, 'SIGKILL');
      } catch {
        // gone
      }
    },
  };
}
