/**
 * The install journal and the lock it is tied to (issue 30). A journal is acted on only by the run
 * that took over the stale lock of the run that wrote it; a forged, copied or restored one is
 * refused with nothing changed. A `.pack` without `.idx` is never deleted unless an index proves
 * it redundant. A failed run whose journal is down leaves its lock for the next run, and a stale
 * lock is taken over by exactly one of any number of runs started together. Every state is made
 * by git, a real interrupted run, or by hand; git judges what is left (`git fsck --strict`,
 * `git cat-file --batch-all-objects`, `git count-objects -v`, `git index-pack`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GitRepackError, repack } from '../src/index.js';
import { armFaults } from '../src/store/files.js';
import { acquireRepackLock } from '../src/store/lock.js';
import { guardLock, removeRegisteredPaths } from '../src/cleanup.js';
import { fixturePath } from './fixtures/index.js';
import { countObjects, fsckStrict, git, gitEnv, gitOk, objectSet } from './helpers/git.js';
import {
  CLI_BIN,
  digestDiff,
  dropScratch,
  integrityProblems,
  leftovers,
  objectsDirOf,
  procState,
  record,
  scaled,
  scratchCopy,
  toolFault,
  tracePoints,
  treeDigest,
  type Point,
} from './helpers/faults.js';
import { pinProcessEnv } from './helpers/hostile-run.js';

pinProcessEnv();

const ARGS = ['-q', '--graph-compression=0'];
const DEAD = 999_999_999;
const BARRIER = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'helpers',
  'lock-barrier.mjs',
);
/** git's refusal of a held lock, as ours words it (store/lock.ts `busy`). */
const LIVE_LOCK =
  /^fatal: unable to create '[^']*\/maintenance\.lock': File exists\.\n\nAnother git process seems to be running in this repository/;

const lockFile = (repo: string): string => path.join(objectsDirOf(repo), 'maintenance.lock');
const journalFile = (repo: string): string => path.join(objectsDirOf(repo), 'repack-ts.journal');
const packDir = (repo: string): string => path.join(objectsDirOf(repo), 'pack');
const packsOf = (repo: string): string[] =>
  fs
    .readdirSync(packDir(repo))
    .filter((n) => /^pack-[0-9a-f]+\.pack$/.test(n))
    .map((n) => n.slice(0, -5))
    .sort();
const sha1 = (file: string): string =>
  createHash('sha1').update(fs.readFileSync(file)).digest('hex');
const nonce = (): string => randomBytes(16).toString('hex');

/** A journal in our format, of a run `pid` with `nonce`. */
function journalText(pid: number, n: string, fields: Record<string, unknown>): string {
  return JSON.stringify({
    version: 2,
    pid,
    host: hostname(),
    uid: process.getuid?.() ?? -1,
    nonce: n,
    packs: [],
    installed: [],
    remove: [],
    midx: { rewrite: false, bitmap: false },
    ...fields,
  });
}

/**
 * A pack of nine blobs that exist nowhere else, whose `.idx` is then removed: git no longer sees
 * it (and never deletes it); `git index-pack` makes it readable again. Returns its name and blob ids.
 */
function idxlessPack(repo: string): { name: string; blobs: string[] } {
  const blobs = Array.from({ length: 9 }, (_, i) =>
    gitOk(['hash-object', '-w', '--stdin'], {
      cwd: repo,
      input: `only in the pack without an index: ${i}\n`,
    }).trim(),
  );
  const hash = gitOk(['pack-objects', '-q', path.join(packDir(repo), 'pack')], {
    cwd: repo,
    input: blobs.join('\n') + '\n',
  }).trim();
  gitOk(['prune-packed'], { cwd: repo });
  const name = `pack-${hash}`;
  fs.rmSync(path.join(packDir(repo), `${name}.idx`));
  for (const b of blobs) expect(git(['cat-file', '-e', b], { cwd: repo }).status).not.toBe(0);
  return { name, blobs };
}

/** After the run: the idx-less pack is byte for byte as it was, and `git index-pack` gives its nine blobs back. */
function expectIdxlessIntact(
  repo: string,
  p: { name: string; blobs: string[] },
  sum: string,
): void {
  const file = path.join(packDir(repo), `${p.name}.pack`);
  expect(fs.existsSync(file), `${file} deleted`).toBe(true);
  expect(sha1(file)).toBe(sum);
  gitOk(['index-pack', file], { cwd: repo });
  for (const b of p.blobs) expect(git(['cat-file', '-e', b], { cwd: repo }).status, b).toBe(0);
  expect(fsckStrict(repo).status).toBe(0);
}

/** The 1-based index of the first fault point `pred` picks (for `*:<k>`). */
function pointIndex(points: Point[], pred: (p: Point) => boolean): number {
  const i = points.findIndex(pred);
  expect(i, 'fault point not reached').toBeGreaterThanOrEqual(0);
  return i + 1;
}

/** The unlink of an old pack's `.pack` during the removal, in a clean run's trace of a copy of `repo`. */
function oldPackUnlink(repo: string): { k: number; base: string } {
  const ref = scratchCopy(fixturePath('multi-pack'), 'journal-trace');
  try {
    const old = packsOf(ref).map((n) => path.join(packDir(ref), n));
    const points = tracePoints(ARGS, ref);
    const k = pointIndex(
      points,
      (p) => p.point === 'unlink' && old.some((b) => p.detail === b + '.pack'),
    );
    const base = points[k - 1]!.detail.slice(0, -5);
    return { k, base: path.join(packDir(repo), path.basename(base)) };
  } finally {
    dropScratch(ref);
  }
}

describe('a journal is acted on only for the lock it is tied to (issue 30, item 4)', () => {
  it('forged by hand with no stale lock: refused, nothing changed, not even an idx-less pack it names', () => {
    const repo = scratchCopy(fixturePath('basic'), 'journal-forged');
    try {
      const p = idxlessPack(repo);
      const sum = sha1(path.join(packDir(repo), `${p.name}.pack`));
      const others = packsOf(repo).filter((n) => n !== p.name);
      fs.writeFileSync(
        journalFile(repo),
        journalText(DEAD, nonce(), { remove: [p.name, ...others] }),
      );
      const before = objectSet(repo);
      const tree = treeDigest(objectsDirOf(repo));
      const r = toolFault(ARGS, repo, undefined);
      expect(r.status, r.stderr).toBe(128);
      expect(r.stderr).toBe(
        `fatal: ${journalFile(repo)}: its run (pid ${DEAD}) left no lock for this run to take over (a copied or restored journal?); it is not the journal of an interrupted run of ours, so it was left alone and nothing was changed.\n` +
          'If no other git repack-ts runs here, check the packs it names and remove it: the next run then repacks them again.\n',
      );
      expect(digestDiff(tree, treeDigest(objectsDirOf(repo)))).toEqual([]);
      expect(objectSet(repo)).toEqual(before);
      expect(fsckStrict(repo).status).toBe(0);
      // A lock left by another dead run does not tie it either.
      fs.writeFileSync(lockFile(repo), `git-repack-ts ${DEAD} ${hostname()} ${nonce()}\n`);
      const t = toolFault(ARGS, repo, undefined);
      expect(t.status, t.stderr).toBe(128);
      expect(t.stderr).toMatch(
        /^fatal: .*repack-ts\.journal: the lock this run took over was another run's \(pid 999999999\), not the lock of the run that wrote it \(pid 999999999\); .*nothing was changed/,
      );
      // Taken over from a dead run, then let go: the journal and everything else as they were.
      expect(digestDiff(tree, treeDigest(objectsDirOf(repo)))).toEqual([]);
      fs.rmSync(journalFile(repo));
      expectIdxlessIntact(repo, p, sum);
      record('forged journal, no stale lock', 1, 1);
    } finally {
      dropScratch(repo);
    }
  }, 60_000);

  it('a real journal copied where its lock is not (a backup restored without lock files): refused, nothing changed', () => {
    const repo = scratchCopy(fixturePath('multi-pack'), 'journal-restored');
    try {
      const before = objectSet(repo);
      const k = toolFault(ARGS, repo, 'phase:remove');
      expect(k.killed).toBe(true);
      const saved = fs.readFileSync(journalFile(repo));
      // The backup: everything but the lock.
      fs.rmSync(lockFile(repo));
      const tree = treeDigest(objectsDirOf(repo));
      const r = toolFault(ARGS, repo, undefined);
      expect(r.status, r.stderr).toBe(128);
      expect(r.stderr).toMatch(
        /^fatal: .*repack-ts\.journal: its run \(pid \d+\) left no lock for this run to take over \(a copied or restored journal\?\); .*left alone and nothing was changed\.\n/,
      );
      expect(digestDiff(tree, treeDigest(objectsDirOf(repo)))).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      // The user removes it, as the message says: the next run repacks everything again.
      fs.rmSync(journalFile(repo));
      const n = toolFault(ARGS, repo, undefined);
      expect([n.status, n.stderr]).toEqual([0, '']);
      expect(leftovers(repo)).toEqual([]);
      // An old journal restored later, over a repository that moved on: refused the same way.
      fs.writeFileSync(journalFile(repo), saved);
      const tree2 = treeDigest(objectsDirOf(repo));
      const o = toolFault(ARGS, repo, undefined);
      expect(o.status, o.stderr).toBe(128);
      expect(o.stderr).toMatch(/left no lock for this run to take over/);
      expect(digestDiff(tree2, treeDigest(objectsDirOf(repo)))).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      record('restored journal, no lock', 2, 2);
    } finally {
      dropScratch(repo);
    }
  }, 90_000);

  it('tied to the stale lock it names, listing a pack whose .idx was removed: that pack is never deleted', () => {
    const repo = scratchCopy(fixturePath('basic'), 'journal-idxless');
    try {
      const p = idxlessPack(repo);
      const sum = sha1(path.join(packDir(repo), `${p.name}.pack`));
      const before = objectSet(repo);
      const n = nonce();
      fs.writeFileSync(lockFile(repo), `git-repack-ts ${DEAD} ${hostname()} ${n}\n`);
      fs.writeFileSync(journalFile(repo), journalText(DEAD, n, { remove: [p.name] }));
      const r = toolFault(ARGS, repo, undefined);
      expect(r.status, r.stderr).toBe(0);
      const b = path.join(packDir(repo), p.name);
      expect(r.stderr).toBe(
        `warning: ${b}.pack has no .idx, so git does not see it (git count-objects -v counts it as garbage), and nothing proves its objects are in another pack: left alone. 'git index-pack ${b}.pack' makes it a pack git reads again.\n`,
      );
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      expectIdxlessIntact(repo, p, sum);
      record('tied journal naming an idx-less pack', 1, 1);
    } finally {
      dropScratch(repo);
    }
  }, 60_000);

  it('our removal killed between an old .idx and its .pack: the next run proves that .pack by the index renamed aside', () => {
    const repo = scratchCopy(fixturePath('multi-pack'), 'journal-aside');
    try {
      const before = objectSet(repo);
      const { k, base } = oldPackUnlink(repo);
      const killed = toolFault(ARGS, repo, `*:${k}`);
      expect(killed.killed).toBe(true);
      expect([
        fs.existsSync(base + '.pack'),
        fs.existsSync(base + '.idx'),
        fs.existsSync(base + '.idx.removing'),
      ]).toEqual([true, false, true]);
      expect(integrityProblems(repo, before)).toEqual([]);
      const next = toolFault(ARGS, repo, undefined);
      expect([next.status, next.stderr]).toEqual([0, '']);
      expect(fs.existsSync(base + '.pack')).toBe(false);
      expect(countObjects(repo).garbage).toBe(0);
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      // The same kill with the index aside lost (nothing proves the .pack): it stays, with a warning.
      const again = scratchCopy(fixturePath('multi-pack'), 'journal-aside-lost');
      try {
        expect(toolFault(ARGS, again, `*:${k}`).killed).toBe(true);
        const lost = path.join(packDir(again), path.basename(base));
        const sum = sha1(lost + '.pack');
        fs.rmSync(lost + '.idx.removing');
        const t = toolFault(ARGS, again, undefined);
        expect(t.status, t.stderr).toBe(0);
        expect(t.stderr).toContain(`warning: ${lost}.pack has no .idx, so git does not see it`);
        expect(sha1(lost + '.pack')).toBe(sum);
        expect(integrityProblems(again, before)).toEqual([]);
      } finally {
        dropScratch(again);
      }
      record('kill between an old .idx and its .pack', 2, 2);
    } finally {
      dropScratch(repo);
    }
  }, 120_000);

  it('a run that fails once its journal is down leaves its lock, says so, and the next run takes it over and finishes', () => {
    const repo = scratchCopy(fixturePath('multi-pack'), 'journal-failed');
    try {
      const before = objectSet(repo);
      const { k } = oldPackUnlink(repo);
      const r = toolFault(ARGS, repo, `*:${k}:eio`);
      expect(r.status).toBe(128);
      expect(r.stderr).toMatch(
        /^fatal: removing the old packs: unlink '.*\.pack': Input\/output error; the new pack is installed and holds every object; the next run finishes the removal\n/,
      );
      expect(r.stderr.split('\n')[1]).toBe(
        `${lockFile(repo)} is left in place: the next git repack-ts takes it over and finishes this run (until then git maintenance skips this repository).`,
      );
      const j = JSON.parse(fs.readFileSync(journalFile(repo), 'utf8')) as {
        pid: number;
        nonce: string;
      };
      expect(fs.readFileSync(lockFile(repo), 'utf8')).toBe(
        `git-repack-ts ${j.pid} ${hostname()} ${j.nonce}\n`,
      );
      expect(integrityProblems(repo, before)).toEqual([]);
      const m = git(['maintenance', 'run', '--no-quiet', '--task=incremental-repack'], {
        cwd: repo,
      });
      expect(m.stderr).toMatch(/maintenance(\.lock)?' exists, skipping maintenance/);
      const next = toolFault(ARGS, repo, undefined);
      expect([next.status, next.stderr]).toEqual([0, '']);
      expect(leftovers(repo)).toEqual([]);
      expect(countObjects(repo).garbage).toBe(0);
      expect(integrityProblems(repo, before)).toEqual([]);
      record('failure after the journal: the lock stays', 1, 1);
    } finally {
      dropScratch(repo);
    }
  }, 90_000);
  it('a recovering run killed after it took the lock over, before it adopted the journal: the next run still finishes', () => {
    const repo = scratchCopy(fixturePath('multi-pack'), 'journal-adopt');
    try {
      const before = objectSet(repo);
      expect(toolFault(ARGS, repo, 'phase:remove').killed).toBe(true);
      const j = JSON.parse(fs.readFileSync(journalFile(repo), 'utf8')) as { nonce: string };
      expect(toolFault(ARGS, repo, 'phase:locked').killed).toBe(true);
      // The second run's lock names the journal it took over with the first run's lock.
      expect(fs.readFileSync(lockFile(repo), 'utf8')).toMatch(
        new RegExp(`^git-repack-ts \\d+ ${hostname()} [0-9a-f]{32} ${j.nonce}\n$`),
      );
      expect(JSON.parse(fs.readFileSync(journalFile(repo), 'utf8'))).toMatchObject({
        nonce: j.nonce,
      });
      const next = toolFault(ARGS, repo, undefined);
      expect([next.status, next.stderr]).toEqual([0, '']);
      expect(leftovers(repo)).toEqual([]);
      expect(countObjects(repo).garbage).toBe(0);
      expect(integrityProblems(repo, before)).toEqual([]);
      record('recovery killed before it adopted the journal', 1, 1);
    } finally {
      dropScratch(repo);
    }
  }, 90_000);
});

describe('the lock in one long-lived process (library use)', () => {
  it('a second repack() while the first runs is refused; one that follows a failed run takes its lock over', async () => {
    const repo = scratchCopy(fixturePath('multi-pack'), 'journal-library');
    try {
      const before = objectSet(repo);
      // Two at once in one process: the lock names this pid for both, and the first holds it.
      const first = repack(repo, { graphCompression: 0 });
      const second = await repack(repo, { graphCompression: 0 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(second).toBeInstanceOf(GitRepackError);
      expect((second as GitRepackError).code).toBe('locked');
      expect((second as GitRepackError).message).toMatch(/maintenance\.lock': File exists/);
      await first;
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
      // A failure once the journal is down (the next removal), then the same process again.
      fs.writeFileSync(path.join(repo, 'more.txt'), 'more\n');
      gitOk(['add', 'more.txt'], { cwd: repo });
      gitOk(['commit', '-qm', 'more'], { cwd: repo });
      gitOk(['repack', '-q', '-d'], { cwd: repo });
      const after = objectSet(repo);
      const { k } = tracedUnlink(repo);
      armFaults(`unlink:${k}:eio`, undefined);
      let failed: unknown;
      try {
        failed = await repack(repo, { graphCompression: 0 }).then(
          () => undefined,
          (e: unknown) => e,
        );
      } finally {
        armFaults(undefined, undefined);
      }
      expect((failed as GitRepackError).code).toBe('io');
      expect((failed as GitRepackError).message).toContain(
        'is left in place: the next git repack-ts takes it over',
      );
      expect(fs.readFileSync(lockFile(repo), 'utf8')).toMatch(
        new RegExp(`^git-repack-ts ${process.pid} `),
      );
      await repack(repo, { graphCompression: 0 });
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, after)).toEqual([]);
    } finally {
      dropScratch(repo);
    }
  }, 120_000);

  it('a signal lets the lock go unless a journal needs it; a run that took the lock over and did not adopt the journal keeps it too', async () => {
    const repo = scratchCopy(fixturePath('basic'), 'journal-signal');
    try {
      const before = objectSet(repo);
      const objects = objectsDirOf(repo);
      const lock = guardLock(acquireRepackLock(path.join(repo, '.git'), objects));
      const line = fs.readFileSync(lockFile(repo), 'utf8');
      fs.writeFileSync(journalFile(repo), journalText(process.pid, lock.owner.nonce, {}));
      removeRegisteredPaths();
      expect(fs.readFileSync(lockFile(repo), 'utf8')).toBe(line);
      // This process again (its earlier run is over): taken over, and let go without recovering
      // the journal (as zstd-import does), the lock stays, naming the journal it took over.
      const other = acquireRepackLock(path.join(repo, '.git'), objects);
      expect(other.previous).toEqual({ ...lock.owner, pending: undefined });
      expect(other.release()).toBe(true);
      expect(fs.readFileSync(lockFile(repo), 'utf8')).toBe(
        `git-repack-ts ${process.pid} ${hostname()} ${other.owner.nonce} ${lock.owner.nonce}\n`,
      );
      // A repack then takes it over and acts on the journal (nothing to do in it), and lets it go.
      await repack(repo, { graphCompression: 0 });
      expect(leftovers(repo)).toEqual([]);
      // Without a journal, a signal removes the lock.
      guardLock(acquireRepackLock(path.join(repo, '.git'), objects));
      removeRegisteredPaths();
      expect(fs.existsSync(lockFile(repo))).toBe(false);
      expect(leftovers(repo)).toEqual([]);
      expect(integrityProblems(repo, before)).toEqual([]);
    } finally {
      dropScratch(repo);
    }
  });
});

/** The n-th `unlink` point (for `unlink:<n>`) that removes an old pack's `.pack`, in a traced CLI run of a copy of `repo`. */
function tracedUnlink(repo: string): { k: number } {
  const top = fs.mkdtempSync(path.join(path.dirname(path.dirname(repo)), 'trace-'));
  try {
    const copy = path.join(top, 'r');
    fs.cpSync(repo, copy, { recursive: true, preserveTimestamps: true });
    const old = packsOf(copy).map((n) => path.join(packDir(copy), n + '.pack'));
    const points = tracePoints(ARGS, copy).filter((p) => p.point === 'unlink');
    return { k: pointIndex(points, (p) => old.includes(p.detail)) };
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
}

interface Contender {
  child: ChildProcess;
  status: number | undefined;
  signal: NodeJS.Signals | null;
  stderr: string;
}

async function until(what: string, ok: () => boolean, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * `n` runs started against the stale lock in `repo`, each stopped by the barrier once it has read
 * the lock, then all released together (the first with `firstFault` added to its fault plan); a
 * run that takes the lock stops again at `phase:locked` (holding it), one that refuses exits.
 */
async function contend(
  repo: string,
  n: number,
  released: string,
  firstFault = '',
): Promise<{ first: Contender; holders: Contender[]; ended: Contender[]; early: Contender[] }> {
  const all: Contender[] = [];
  for (let i = 0; i < n; i++) {
    const child = spawn(process.execPath, ['--import', BARRIER, CLI_BIN, ...ARGS], {
      cwd: repo,
      env: gitEnv({
        GIT_REPACK_TS_FAULT: `phase:locked:stop${i === 0 ? firstFault : ''}`,
        LOCK_BARRIER_DIR: released,
      }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const c: Contender = { child, status: undefined, signal: null, stderr: '' };
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (c.stderr += d));
    child.on('close', (code, signal) => Object.assign(c, { status: code ?? -1, signal }));
    all.push(c);
  }
  let early: Contender[] = [];
  try {
    // Two dozen node start-ups on a loaded two-core machine can take minutes: the wait is long.
    await until(
      'every run to read the lock and stop',
      () => all.every((c) => c.status !== undefined || procState(c.child.pid!) === 'T'),
      900_000,
    );
    early = all.filter((c) => c.status !== undefined);
    for (const c of all) if (c.status === undefined) process.kill(c.child.pid!, 'SIGCONT');
    const resumed = (c: Contender): boolean =>
      fs.existsSync(path.join(released, String(c.child.pid)));
    await until(
      'every run to take the lock or end',
      () =>
        all.every((c) => c.status !== undefined || (resumed(c) && procState(c.child.pid!) === 'T')),
      900_000,
    );
  } catch (e) {
    for (const c of all) if (c.status === undefined) c.child.kill('SIGKILL');
    throw e;
  }
  return {
    first: all[0]!,
    holders: all.filter((c) => c.status === undefined),
    ended: all.filter((c) => c.status !== undefined && !early.includes(c)),
    early,
  };
}

/** The stale lock of each round: a dead run of ours, one of an older build (no nonce), a killed run with its journal. */
const STALE_KINDS = ['dead pid', 'no nonce', 'killed run with journal'] as const;

function makeStale(repo: string, kind: (typeof STALE_KINDS)[number]): void {
  if (kind === 'killed run with journal') {
    expect(toolFault(ARGS, repo, 'phase:remove').killed).toBe(true);
    expect(fs.existsSync(journalFile(repo))).toBe(true);
  } else
    fs.writeFileSync(
      lockFile(repo),
      `git-repack-ts ${DEAD} ${hostname()}${kind === 'dead pid' ? ` ${nonce()}` : ''}\n`,
    );
}

/**
 * One round: `n` runs against a fresh stale lock of `kind`. Without a kill exactly one takes it;
 * with the first run killed as it replaces the lock or a marker (`rename:1`, holding the marker),
 * at most one does, and a run started afterwards takes over whatever it left. Either way the
 * repository keeps every object and nothing of ours is left. Returns the problems and what happened.
 */
async function takeoverRound(
  kind: (typeof STALE_KINDS)[number],
  n: number,
  kill: boolean,
): Promise<{ problems: string[]; outcome: string }> {
  const repo = scratchCopy(fixturePath('basic'), 'takeover');
  const released = fs.mkdtempSync(path.join(path.dirname(path.dirname(repo)), 'released-'));
  const problems: string[] = [];
  let outcome = 'one run took the lock';
  try {
    const before = objectSet(repo);
    makeStale(repo, kind);
    const { first, holders, ended, early } = await contend(
      repo,
      n,
      released,
      kill ? ',rename:1:kill' : '',
    );
    for (const c of early)
      problems.push(
        `a run ended before it read the lock: ${c.status} ${c.signal ?? ''} ${c.stderr}`,
      );
    if (holders.length > 1 || (holders.length === 0 && !kill))
      problems.push(`${holders.length} runs held the lock at once`);
    for (const c of ended) {
      if (kill && c === first && c.signal === 'SIGKILL') continue;
      if (c.status !== 128 || !LIVE_LOCK.test(c.stderr))
        problems.push(
          `a run that did not take the lock: ${c.status} ${c.signal ?? ''} ${c.stderr}`,
        );
    }
    if (kill)
      outcome =
        first.signal !== 'SIGKILL'
          ? 'the first lost the race'
          : holders.length === 1
            ? 'the first was killed, another took the lock over from it'
            : 'the first was killed, the lock was left to the next run';
    for (const c of holders) process.kill(c.child.pid!, 'SIGCONT');
    await until(
      'the holders to finish',
      () => holders.every((c) => c.status !== undefined),
      900_000,
    );
    for (const c of holders)
      if (c.status !== 0 || c.stderr !== '')
        problems.push(`a holder ended with ${c.status}: ${c.stderr}`);
    const after = toolFault(ARGS, repo, undefined);
    if (after.status !== 0 || after.stderr !== '')
      problems.push(`the run after them ended with ${after.status}: ${after.stderr}`);
    problems.push(...integrityProblems(repo, before));
    const left = leftovers(repo);
    if (left.length > 0) problems.push(`left ${left.join(', ')}`);
  } finally {
    dropScratch(repo);
    fs.rmSync(released, { recursive: true, force: true });
  }
  return { problems, outcome };
}

describe('a stale lock is taken over by one run only (issue 30, item 5)', () => {
  const n = scaled(12, 24);
  for (const [kill, rounds] of [
    [false, scaled(3, 30)],
    [true, scaled(1, 12)],
  ] as const) {
    const what = kill
      ? 'the first killed as it takes it over: at most one takes it, a later run takes over what it left'
      : 'one takes it, the others refuse as if it were live';
    it(
      `${n} runs released together against a stale lock, ${rounds} times; ${what}`,
      async () => {
        const problems: string[] = [];
        const outcomes = new Map<string, number>();
        let held = 0;
        for (let round = 0; round < rounds; round++) {
          const kind = STALE_KINDS[round % STALE_KINDS.length]!;
          const r = await takeoverRound(kind, n, kill);
          if (r.problems.length === 0) held++;
          outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
          problems.push(...r.problems.map((x) => `round ${round} (${kind}): ${x}`));
        }
        const notes = [
          `stale locks: ${STALE_KINDS.join(', ')} in turn`,
          ...[...outcomes].map(([o, k]) => `${k}: ${o}`),
        ];
        record(
          `lock takeover: ${n} runs released together${kill ? ', the first killed in the act' : ''}`,
          rounds,
          held,
          notes,
        );
        expect(problems).toEqual([]);
      },
      scaled(600_000, 3_600_000),
    );
  }

  it('a takeover marker: one naming a dead contender is taken over and swept, a live one or a foreign one refuses', () => {
    const repo = scratchCopy(fixturePath('basic'), 'takeover-marker');
    try {
      const before = objectSet(repo);
      const n = nonce();
      const stale = `git-repack-ts ${DEAD} ${hostname()} ${n}\n`;
      const marker = `${lockFile(repo)}.${n}`;
      // A contender killed holding the marker: its pid is dead too.
      fs.writeFileSync(lockFile(repo), stale);
      fs.writeFileSync(marker, `git-repack-ts ${DEAD - 1} ${hostname()} ${nonce()}\n`);
      const swept = `${lockFile(repo)}.${nonce()}`;
      fs.writeFileSync(swept, `git-repack-ts ${DEAD - 2} ${hostname()} ${nonce()}\n`);
      const r = toolFault(ARGS, repo, undefined);
      expect([r.status, r.stderr]).toEqual([0, '']);
      expect(leftovers(repo)).toEqual([]);
      // A contender alive (this test) holding the marker, or a marker that is not ours: refused, both files untouched.
      for (const held of [`git-repack-ts ${process.pid} ${hostname()} ${nonce()}\n`, '']) {
        fs.writeFileSync(lockFile(repo), stale);
        fs.writeFileSync(marker, held);
        const t = toolFault(ARGS, repo, undefined);
        expect(t.status, t.stderr).toBe(128);
        expect(t.stderr).toMatch(LIVE_LOCK);
        expect([fs.readFileSync(lockFile(repo), 'utf8'), fs.readFileSync(marker, 'utf8')]).toEqual([
          stale,
          held,
        ]);
      }
      // An older build's lock (no nonce) is keyed by its bytes.
      const old = `git-repack-ts ${DEAD} ${hostname()}\n`;
      const oldMarker = `${lockFile(repo)}.${createHash('sha256').update(old).digest('hex').slice(0, 32)}`;
      fs.rmSync(marker);
      fs.writeFileSync(lockFile(repo), old);
      fs.writeFileSync(oldMarker, `git-repack-ts ${process.pid} ${hostname()} ${nonce()}\n`);
      expect(toolFault(ARGS, repo, undefined).stderr).toMatch(LIVE_LOCK);
      fs.rmSync(oldMarker);
      fs.rmSync(lockFile(repo));
      expect(integrityProblems(repo, before)).toEqual([]);
      record('takeover markers: dead taken over, live and foreign refused', 4, 4);
    } finally {
      dropScratch(repo);
    }
  }, 90_000);
});
