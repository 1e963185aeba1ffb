/**
 * Hostile input: every damaged pack, idx or rev of the corpus (test/helpers/hostile.ts) is put
 * into a copy of its fixture, then `verify`, `inspect` and the repack run on it. verify must say
 * `error: <file>: … at offset N` and exit 1; inspect and the repack must stop with
 * `fatal: <file>: … at offset N`, exit 128 (inspect may also succeed when the damage is in bytes
 * it does not read), leave the repository byte for byte as it was, and never crash. A repack that
 * succeeds must have lost nothing (a damaged idx checksum, say, is repaired by the rewrite).
 * Memory and time are bounded: the CLI runs are measured (peak RSS, wall time).
 *
 * The suite runs every variant through the commands in-process and a sample through the CLI;
 * `npm run reliability` runs every variant through the CLI as well.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { digestDiff, LONG, record, scaled, treeDigest } from './helpers/faults.js';
import { fsckStrict, git, objectSet } from './helpers/git.js';
import { hostileCorpus, type Variant } from './helpers/hostile.js';
import { inProcess, pinProcessEnv, tryVariant, viaCli, type Run } from './helpers/hostile-run.js';
import {
  HOSTILE_ARGS,
  makeZombie,
  objectsOf,
  packModes,
  packsOf,
  runGit,
  runTool,
  sandbox,
  snapshot,
  soundAfter,
  twin,
} from './helpers/hostile-repo.js';

pinProcessEnv();

let corpus: Variant[] = [];
const pristineSet = new Map<FixtureName, string[]>();

beforeAll(() => {
  corpus = hostileCorpus();
  for (const v of corpus)
    if (!pristineSet.has(v.fixture)) pristineSet.set(v.fixture, objectSet(fixturePath(v.fixture)));
});

/** The suite's in-process sample: every forged variant, each region of each fixture once, basic's every third. */
function sample(all: Variant[]): Variant[] {
  const seen = new Map<string, number>();
  return all.filter((v) => {
    const k = `${v.fixture} ${v.region}`;
    const i = seen.get(k) ?? 0;
    seen.set(k, i + 1);
    return v.name.startsWith('forged') || i === 0 || (v.fixture === 'basic' && i % 3 === 0);
  });
}

/** The suite's CLI sample: one variant of each kind that stresses memory or time the most. */
const CLI_SAMPLE = [
  /forged delta chain: an OFS_DELTA chain 4100 deep/,
  /forged delta base: REF_DELTA cycle of three/,
  /forged declared size: a blob declaring 3 GB/,
  /forged delta: OFS_DELTA: result size 3 GB/,
  /^sha256 idx fanout: non-monotonic/,
  /^large-offset truncation: pack cut/,
  /^basic zlib data: the largest whole entry .*middle byte/,
];

async function runCorpus(
  label: string,
  vs: Variant[],
  run: (args: string[], cwd: string) => Run | Promise<Run>,
): Promise<void> {
  const problems: string[] = [];
  const outcomes = { detected: 0, fsck: 0, repaired: 0, accepted: 0 };
  let handled = 0;
  const slow: [number, string][] = [];
  let rss: [number, string] = [0, ''];
  for (const v of vs) {
    const j = await tryVariant(v, run, pristineSet);
    if (j.maxRssKiB > rss[0]) rss = [j.maxRssKiB, v.name];
    outcomes[j.outcome]++;
    if (j.problems.length === 0) handled++;
    problems.push(...j.problems.map((p) => p.msg));
    slow.push([j.ms, v.name]);
  }
  slow.sort((a, b) => b[0] - a[0]);
  record(`damaged inputs (${label})`, vs.length, handled, [
    `${outcomes.detected} refused by our checks, ${outcomes.fsck} refused by the git fsck safety net, ${outcomes.repaired} repaired by the rewrite with nothing lost, ${outcomes.accepted} sound controls accepted`,
    `slowest: ${slow
      .slice(0, 3)
      .map(([ms, n]) => `${n} ${ms} ms`)
      .join('; ')}`,
    ...(rss[0] > 0 ? [`largest peak RSS ${(rss[0] / 1024).toFixed(0)} MiB (${rss[1]})`] : []),
  ]);
  if (process.env.REPACK_TS_HOSTILE_LOG)
    fs.writeFileSync(
      process.env.REPACK_TS_HOSTILE_LOG,
      problems.join('\n') + '\n' + slow.map(([ms, n]) => `${ms} ${n}`).join('\n'),
    );
  expect(problems).toEqual([]);
}

describe('hostile packs, indexes and reverse indexes', () => {
  it('the corpus covers every region', () => {
    const regions = new Set(corpus.map((v) => v.region));
    for (const r of [
      'pack header',
      'entry header',
      'zlib data',
      'delta data',
      'trailer',
      'truncation',
      'idx header',
      'idx fanout',
      'idx ids',
      'idx crc',
      'idx offsets',
      'idx 64-bit offsets',
      'idx trailer',
      'rev',
      'declared size',
      'delta',
      'delta base',
      'delta chain',
    ]) {
      expect(regions.has(r), r).toBe(true);
    }
    expect(corpus.length).toBeGreaterThan(250);
  });

  it(
    'every variant, in-process: clean errors, repository untouched',
    async () => {
      await runCorpus('in-process', LONG ? corpus : sample(corpus), inProcess);
    },
    scaled(240_000, 3_600_000),
  );

  it(
    'through the CLI: exit codes, messages, bounded memory and time',
    async () => {
      await runCorpus(
        'CLI, peak RSS < 200 MiB, < 30 s',
        LONG ? corpus : CLI_SAMPLE.map((re) => corpus.find((v) => re.test(v.name))!),
        viaCli,
      );
    },
    scaled(240_000, 7_200_000),
  );
});

/**
 * Hostile and unusual repositories (issue 21): each builds the state with git and the file
 * system, runs the tool (and, where git has the behaviour, stock git on a twin), and checks that
 * no object was lost, nothing outside the repository was read into it or changed, and the
 * permissions are git's.
 */
describe('hostile repositories', () => {
  const uid = process.getuid?.() ?? 0;
  const journalFile = (repo: string): string => path.join(objectsOf(repo), 'repack-ts.journal');
  const ours = (pid: number, fields: Record<string, unknown>): string =>
    JSON.stringify({
      version: 2,
      pid,
      host: hostname(),
      uid,
      nonce: 'ab'.repeat(16),
      packs: [],
      installed: [],
      remove: [],
      midx: { rewrite: false, bitmap: false },
      ...fields,
    });

  it('1. a stale or foreign journal: reported and left alone, nothing deleted', () => {
    const sb = sandbox('journal');
    onTestFinished(sb.drop);
    const [a, b] = packsOf(sb.repo);
    fs.writeFileSync(path.join(objectsOf(sb.repo), 'pack', `${b}.keep`), '');
    const s = snapshot(sb);
    // The report's journal: no run of ours wrote it.
    fs.writeFileSync(journalFile(sb.repo), JSON.stringify({ installed: [], remove: [a, b] }));
    const r = runTool(sb.repo);
    expect(r.status).toBe(128);
    expect(r.stderr).toMatch(
      /^fatal: .*repack-ts\.journal: not a journal of this version .*left alone and nothing was changed/m,
    );
    expect(packsOf(sb.repo)).toEqual([a, b].sort());
    expect(fs.existsSync(journalFile(sb.repo))).toBe(true);
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
    // Forged as ours from another host, another uid, or with no lock of its run left: refused.
    for (const [fields, why] of [
      [{ host: 'elsewhere' }, /written on host 'elsewhere'/],
      [{ uid: uid + 1 }, /written by uid/],
      [{ pid: process.pid }, /its run \(pid \d+\) left no lock for this run to take over/],
    ] as const) {
      fs.writeFileSync(journalFile(sb.repo), ours(999_999_999, { remove: [a, b], ...fields }));
      const f = runTool(sb.repo);
      expect(f.status, f.stderr).toBe(128);
      expect(f.stderr).toMatch(why);
      expect(packsOf(sb.repo)).toEqual([a, b].sort());
    }
    // Tied to a dead run of ours (its lock is there to take over), but the packs it would remove
    // are in no installed or kept pack: each is left alone with a warning (the .keep one never
    // removed), and the run goes on.
    fs.writeFileSync(journalFile(sb.repo), ours(999_999_999, { remove: [a, b] }));
    fs.writeFileSync(
      path.join(objectsOf(sb.repo), 'maintenance.lock'),
      `git-repack-ts 999999999 ${hostname()} ${'ab'.repeat(16)}\n`,
    );
    const t = runTool(sb.repo);
    expect(t.status, t.stderr).toBe(0);
    expect(t.stderr).toContain(`${a}.pack: `);
    expect(t.stderr).toMatch(/objects are in no installed or kept pack; left alone/);
    expect(t.stderr).toContain(`${b}.pack has a .keep file: left alone`);
    expect(packsOf(sb.repo)).toContain(b);
    expect(fs.existsSync(journalFile(sb.repo))).toBe(false);
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 60_000);

  it('1. the journal of a killed run is tied to it and finishes the removal; a pack whose checksums changed is not trusted', () => {
    const sb = sandbox('journal-kill');
    onTestFinished(sb.drop);
    const s = snapshot(sb);
    const old = packsOf(sb.repo);
    const k = runTool(sb.repo, HOSTILE_ARGS, { env: { GIT_REPACK_TS_FAULT: 'phase:remove' } });
    expect(k.signal).toBe('SIGKILL');
    const j = JSON.parse(fs.readFileSync(journalFile(sb.repo), 'utf8')) as {
      pid: number;
      host: string;
      uid: number;
      nonce: string;
      packs: { name: string; idx: string }[];
      installed: string[];
      remove: string[];
    };
    expect(j.host).toBe(hostname());
    expect(j.uid).toBe(uid);
    expect(j.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(fs.readFileSync(path.join(objectsOf(sb.repo), 'maintenance.lock'), 'utf8')).toBe(
      `git-repack-ts ${j.pid} ${hostname()} ${j.nonce}\n`,
    );
    expect(j.remove.sort()).toEqual(old);
    // The idx checksum the journal recorded is the installed .idx's own trailer (git's, read here).
    const idx = fs.readFileSync(path.join(objectsOf(sb.repo), 'pack', `${j.installed[0]}.idx`));
    expect(j.packs.find((p) => p.name === j.installed[0])?.idx).toBe(
      idx.subarray(idx.length - 20).toString('hex'),
    );
    // A copy whose installed .idx no longer has the recorded checksum: the old packs stay.
    const tw = twin(sb);
    const tj = JSON.parse(fs.readFileSync(journalFile(tw), 'utf8')) as typeof j;
    tj.packs = tj.packs.map((p) => ({ ...p, idx: '0'.repeat(40) }));
    fs.writeFileSync(journalFile(tw), JSON.stringify(tj));
    const u = runTool(tw);
    expect(u.status, u.stderr).toBe(0);
    expect(u.stderr).toMatch(
      /no longer has the checksums .* recorded; the old packs it lists are left alone/,
    );
    // The real one: the next run takes the lock over (same nonce) and finishes.
    const r = runTool(sb.repo);
    expect(r.status, r.stderr).toBe(0);
    for (const p of old) expect(packsOf(sb.repo)).not.toContain(p);
    expect(fs.existsSync(journalFile(sb.repo))).toBe(false);
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 60_000);

  for (const [shared, umask] of [
    ['group', '077'],
    ['0600', '022'],
    ['all', '027'],
    ['umask', '077'],
  ] as const) {
    it(`2. core.sharedRepository=${shared} under umask ${umask}: the modes git repack -a -d gives`, () => {
      const sb = sandbox(`shared-${shared}`, { shared });
      onTestFinished(sb.drop);
      // A repository whose pack directory is still to be made (only loose objects) as well.
      const s = snapshot(sb);
      const g = twin(sb);
      expect(runGit(g, ['repack', '-a', '-d', '-q'], { umask }).status).toBe(0);
      const r = runTool(sb.repo, HOSTILE_ARGS, { umask });
      expect(r.status, r.stderr).toBe(0);
      expect(packModes(sb.repo)).toEqual(packModes(g));
      expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
      // The journal (left by a kill) as git makes the files it writes with 0666: a ref.
      runGit(g, ['update-ref', 'refs/heads/probe', 'HEAD'], { umask });
      const want = (fs.statSync(path.join(g, '.git/refs/heads/probe')).mode & 0o777).toString(8);
      fs.writeFileSync(path.join(sb.repo, 'f0.txt'), 'changed\n');
      runGit(sb.repo, ['commit', '-qam', 'more'], { umask });
      const k = runTool(sb.repo, HOSTILE_ARGS, {
        umask,
        env: { GIT_REPACK_TS_FAULT: 'phase:remove' },
      });
      expect(k.signal).toBe('SIGKILL');
      expect((fs.statSync(journalFile(sb.repo)).mode & 0o777).toString(8)).toBe(want);
      expect(packModes(sb.repo)).toEqual(packModes(g));
      expect(runTool(sb.repo, HOSTILE_ARGS, { umask }).status).toBe(0);
    }, 60_000);
  }

  it('2. (issue 19) a repository without objects/pack: created as git creates it', () => {
    const sb = sandbox('no-pack-dir', { shared: 'group' });
    onTestFinished(sb.drop);
    // Only loose objects, as libgit2 writes them.
    const pd = path.join(objectsOf(sb.repo), 'pack');
    for (const p of packsOf(sb.repo)) {
      const data = fs.readFileSync(path.join(pd, `${p}.pack`));
      for (const n of fs.readdirSync(pd)) if (n.startsWith(p)) fs.rmSync(path.join(pd, n));
      expect(git(['unpack-objects', '-q'], { cwd: sb.repo, input: data }).status).toBe(0);
    }
    fs.rmdirSync(pd);
    const s = snapshot(sb);
    const g = twin(sb);
    expect(runGit(g, ['repack', '-a', '-d', '-q'], { umask: '077' }).status).toBe(0);
    const r = runTool(sb.repo, HOSTILE_ARGS, { umask: '077' });
    expect(r.status, r.stderr).toBe(0);
    expect(packModes(sb.repo)).toEqual(packModes(g));
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 60_000);

  it('3. FIFOs and a sparse 3 GiB file where locks and packs go: no hang, no big read', () => {
    const sb = sandbox('fifo');
    onTestFinished(sb.drop);
    const s = snapshot(sb);
    const objects = objectsOf(sb.repo);
    const lock = path.join(objects, 'maintenance.lock');
    // A FIFO lock is someone's lock (git's O_EXCL create fails on it too): refused at once.
    spawnSync('mkfifo', [lock]);
    let r = runTool(sb.repo);
    expect(r.status).toBe(128);
    expect(r.stderr).toMatch(/maintenance\.lock': File exists/);
    fs.rmSync(lock);
    // A 3 GiB sparse lock: refused after reading 4 KiB, not 3 GiB.
    fs.writeFileSync(lock, '');
    fs.truncateSync(lock, 3 << 30);
    const t = viaCli(HOSTILE_ARGS, sb.repo);
    expect(t.status).toBe(128);
    if (t.maxRssKiB !== undefined) expect(t.maxRssKiB).toBeLessThan(200 * 1024);
    fs.rmSync(lock);
    // gc.pid a FIFO: no gc holds the repository (git's fscanf finds nothing there either).
    spawnSync('mkfifo', [path.join(sb.repo, '.git', 'gc.pid')]);
    // A FIFO .idx beside a .pack, and a FIFO .pack beside a copied .idx: not packs (git skips them).
    const pd = path.join(objects, 'pack');
    const [a] = packsOf(sb.repo);
    spawnSync('mkfifo', [path.join(pd, `pack-${'1'.repeat(40)}.idx`)]);
    fs.writeFileSync(path.join(pd, `pack-${'1'.repeat(40)}.pack`), 'PACK');
    spawnSync('mkfifo', [path.join(pd, `pack-${'2'.repeat(40)}.pack`)]);
    fs.copyFileSync(path.join(pd, `${a}.idx`), path.join(pd, `pack-${'2'.repeat(40)}.idx`));
    r = runTool(sb.repo);
    expect(r.status, r.stderr).toBe(0);
    expect(r.ms).toBeLessThan(25_000);
    expect(fs.lstatSync(path.join(pd, `pack-${'1'.repeat(40)}.idx`)).isFIFO()).toBe(true);
    for (const d of ['1', '2'])
      for (const ext of ['.pack', '.idx']) fs.rmSync(path.join(pd, `pack-${d.repeat(40)}${ext}`));
    fs.rmSync(path.join(sb.repo, '.git', 'gc.pid'));
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 90_000);

  it('4. a .promisor linked to a file outside: not followed, nothing copied', () => {
    const sb = sandbox('promisor');
    onTestFinished(sb.drop);
    const [a, b] = packsOf(sb.repo);
    const pd = path.join(objectsOf(sb.repo), 'pack');
    gitOkIn(sb.repo, ['config', 'remote.origin.url', sb.outside]);
    gitOkIn(sb.repo, ['config', 'remote.origin.promisor', 'true']);
    gitOkIn(sb.repo, ['config', 'extensions.partialClone', 'origin']);
    fs.symlinkSync(sb.secret, path.join(pd, `${a}.promisor`));
    fs.writeFileSync(path.join(pd, `${b}.promisor`), `${'0'.repeat(40)} refs/heads/main\n`);
    const s = snapshot(sb);
    const r = runTool(sb.repo);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`${a}.promisor: a symbolic link; its content is not carried over`);
    const promisors = fs.readdirSync(pd).filter((n) => n.endsWith('.promisor'));
    expect(promisors).toHaveLength(1);
    expect(fs.lstatSync(path.join(pd, promisors[0]!)).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(pd, promisors[0]!), 'utf8')).toBe(
      `${'0'.repeat(40)} refs/heads/main\n`,
    );
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 60_000);

  it('5. zstd-import: an object above core.bigFileThreshold is streamed, never held', () => {
    const sb = sandbox('zstd');
    onTestFinished(sb.drop);
    // 24 MiB of zeros: a zstd frame of a few KiB declares it.
    fs.writeFileSync(path.join(sb.repo, 'zeros.bin'), Buffer.alloc(24 << 20));
    gitOkIn(sb.repo, ['add', 'zeros.bin']);
    gitOkIn(sb.repo, ['commit', '-qm', 'zeros']);
    gitOkIn(sb.repo, ['repack', '-a', '-d', '-q']);
    const file = path.join(sb.outside, 'all.zpack');
    expect(runTool(sb.repo, ['--zstd', '-q', '-o', file]).status).toBe(0);
    expect(fs.statSync(file).size).toBeLessThan(1 << 20);
    const target = path.join(sb.top, 'target');
    gitOkIn(sb.top, ['init', '-q', target]);
    gitOkIn(target, ['config', 'core.bigFileThreshold', '8m']);
    const s = snapshot(sb);
    const r = viaCli(['zstd-import', '-q', file], target);
    expect(r.status, r.stderr).toBe(0);
    // Held, it took 3 copies and more (a 256 MiB blob: 847 MB; issue 21).
    if (r.maxRssKiB !== undefined) expect(r.maxRssKiB).toBeLessThan(150 * 1024);
    expect(objectSet(target)).toEqual(objectSet(sb.repo));
    expect(fsckStrict(target).status).toBe(0);
    expect(digestDiff(s.outside, treeDigest(sb.outside))).toEqual([]);
  }, 90_000);

  it('6. GIT_OBJECT_DIRECTORY with a multi-pack-index: rewritten where it was', () => {
    const sb = sandbox('objdir');
    onTestFinished(sb.drop);
    const alt = path.join(sb.top, 'objects-elsewhere');
    fs.cpSync(objectsOf(sb.repo), alt, { recursive: true });
    // The repository's own objects/ keeps nothing but what git needs to call it a repository.
    fs.rmSync(objectsOf(sb.repo), { recursive: true });
    fs.mkdirSync(objectsOf(sb.repo));
    const env = { GIT_OBJECT_DIRECTORY: alt };
    expect(runGit(sb.repo, ['multi-pack-index', 'write'], { env }).status).toBe(0);
    const before = spawnObjects(sb.repo, env);
    const r = runTool(sb.repo, HOSTILE_ARGS, { env });
    expect(r.status, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(alt, 'pack', 'multi-pack-index'))).toBe(true);
    expect(fs.readdirSync(objectsOf(sb.repo))).toEqual([]);
    expect(runGit(sb.repo, ['multi-pack-index', 'verify'], { env }).status).toBe(0);
    expect(runGit(sb.repo, ['fsck', '--strict', '--no-dangling'], { env }).status).toBe(0);
    expect(spawnObjects(sb.repo, env)).toEqual(before);
  }, 60_000);

  it('7. leftovers: only our own, never through a link; (issue 19) a zombie holds no lock', () => {
    const sb = sandbox('leftovers');
    onTestFinished(sb.drop);
    const zombie = makeZombie();
    onTestFinished(zombie.end);
    fs.writeFileSync(path.join(sb.outside, 'keep-me'), 'x');
    const s = snapshot(sb);
    const objects = objectsOf(sb.repo);
    const pd = path.join(objects, 'pack');
    // A view name that is a link to the outside, and a view directory holding one.
    fs.symlinkSync(sb.outside, path.join(objects, 'tmp_view_rts999999999_AbC123'));
    fs.mkdirSync(path.join(objects, 'tmp_view_rts999999998_XyZ789'));
    fs.symlinkSync(sb.outside, path.join(objects, 'tmp_view_rts999999998_XyZ789', 'pack'));
    // Another user's leftovers are theirs.
    const foreign = path.join(pd, 'tmp_pack_rts999999997_0123abcd');
    fs.writeFileSync(foreign, 'not ours');
    const other = uid === 0 ? 65534 : undefined;
    if (other !== undefined) fs.chownSync(foreign, other, other);
    // A lock left by a run of ours that is now a zombie: taken over.
    expect(zombie.pid).toBeGreaterThan(0);
    fs.writeFileSync(
      path.join(objects, 'maintenance.lock'),
      `git-repack-ts ${zombie.pid} ${hostname()} ${'cd'.repeat(16)}\n`,
    );
    const r = runTool(sb.repo);
    expect(r.status, r.stderr).toBe(0);
    expect(fs.readdirSync(objects).filter((n) => n.startsWith('tmp_'))).toEqual([]);
    expect(fs.existsSync(foreign)).toBe(other !== undefined);
    expect(fs.existsSync(path.join(objects, 'maintenance.lock'))).toBe(false);
    fs.rmSync(foreign, { force: true });
    expect(soundAfter(sb, s.before, s.outside)).toEqual([]);
  }, 60_000);
});

function gitOkIn(repo: string, args: string[]): string {
  const r = runGit(repo, args);
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** The object set seen with an environment (GIT_OBJECT_DIRECTORY). */
function spawnObjects(repo: string, env: Record<string, string>): string[] {
  return runGit(repo, ['cat-file', '--batch-all-objects', '--batch-check'], { env })
    .stdout.split('\n')
    .filter(Boolean)
    .sort();
}
