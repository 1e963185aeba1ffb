/**
 * Issue 32: later runs cost what is new. A pack an earlier run proved at the levels is left as it
 * is (not even opened when nothing is new), what arrives (a fetched pack, loose objects) is
 * rewritten, small proven packs are merged geometrically, and the runs live alongside git's own
 * maintenance. Git is the oracle: object sets, fsck, verify-pack offsets and each entry's zlib
 * header; strace says which files a run opened.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { countObjects, fsckStrict, gitEnv, gitOk, objectSet, verifyPack } from './helpers/git.js';
import { entryZlibInfo } from './helpers/pack-bytes.js';
import { BIN, tool, toolOk } from './helpers/tool.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A repository with `commits` commits of a few files each, all in one pack as `git gc` leaves it. */
function makeRepo(commits: number, opts: { bare?: boolean } = {}): string {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'git-repack-ts-maint-'));
  dirs.push(top);
  const repo = path.join(top, 'repo');
  gitOk([
    '-c',
    'init.defaultBranch=main',
    'init',
    '-q',
    '--template=',
    ...(opts.bare ? ['--bare'] : []),
    repo,
  ]);
  gitOk(['config', 'gc.auto', '0'], { cwd: repo });
  gitOk(['config', 'maintenance.auto', 'false'], { cwd: repo });
  addCommits(repo, commits, 0);
  gitOk(['repack', '-a', '-d', '-q'], { cwd: repo });
  gitOk(['config', 'pack.graphCompression', '0'], { cwd: repo });
  return repo;
}

/**
 * `n` commits on main by git fast-import (one new pack, as a fetch brings, or loose), from tick
 * `from`: each changes three of twelve files, so trees and blobs delta against earlier ones.
 */
function addCommits(repo: string, n: number, from: number, where: 'pack' | 'loose' = 'pack'): void {
  const parent = spawnSync('git', ['rev-parse', '-q', '--verify', 'refs/heads/main'], {
    cwd: repo,
    env: gitEnv(),
    encoding: 'utf8',
  }).stdout.trim();
  const out: string[] = ['reset refs/heads/main', ...(parent ? [`from ${parent}`] : [])];
  for (let i = from; i < from + n; i++) {
    out.push(
      'commit refs/heads/main',
      `committer C <c@example.com> ${1_700_000_000 + i * 60} +0000`,
    );
    const msg = `commit ${i}\n`;
    out.push(`data ${Buffer.byteLength(msg)}`, msg.slice(0, -1));
    for (let f = 0; f < 3; f++) {
      const body = `file ${(i * 3 + f) % 12} at commit ${i}\n${'line of text that repeats\n'.repeat(20 + (i % 7))}`;
      out.push(
        `M 100644 inline dir${(i + f) % 4}/file${(i * 3 + f) % 12}.txt`,
        `data ${Buffer.byteLength(body)}`,
        body,
      );
    }
    out.push('');
  }
  // fastimport.unpackLimit: loose objects, as commits made one by one leave them, or always a pack.
  gitOk(
    ['-c', `fastimport.unpackLimit=${where === 'loose' ? 1 << 30 : 0}`, 'fast-import', '--quiet'],
    { cwd: repo, input: out.join('\n') + '\n' },
  );
}

/** Every pack git sees: each `*.pack` with its `*.idx` in objects/pack (prepare_packed_git_one), whatever its name. */
function allPacks(repo: string): string[] {
  const dir = path.join(
    gitOk(['rev-parse', '--absolute-git-dir'], { cwd: repo }).trim(),
    'objects',
    'pack',
  );
  const names = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  return names
    .filter((n) => n.endsWith('.pack') && names.includes(n.slice(0, -5) + '.idx'))
    .sort()
    .map((n) => path.join(dir, n));
}

/** Each pack file's inode and mtime: what a run that leaves a pack as it is must not change. */
function packStat(repo: string): Map<string, string> {
  return new Map(
    allPacks(repo).map((p) => [
      path.basename(p),
      `${fs.statSync(p).ino}:${fs.statSync(p).mtimeMs}`,
    ]),
  );
}

/** Every commit and tree entry of every pack is stored (level 0): git's offsets, zlib's header. */
function expectGraphStored(repo: string): void {
  for (const pack of allPacks(repo)) {
    const bytes = fs.readFileSync(pack);
    for (const e of verifyPack(repo, pack).entries) {
      if (e.type !== 'commit' && e.type !== 'tree') continue;
      expect({ id: e.oid, ...entryZlibInfo(bytes, e.offset, 20) }).toEqual({
        id: e.oid,
        flevel: 0,
        stored: true,
      });
    }
  }
}

function expectIntact(repo: string, before: string[]): void {
  expect(objectSet(repo)).toEqual(before);
  const f = fsckStrict(repo);
  expect(f.output).toBe('');
  expect(f.status).toBe(0);
}

/** The bytes a run of the CLI read from each file (strace: open, read, pread64, close), its exit status and stdout. */
function traced(
  args: string[],
  repo: string,
): { read: Map<string, number>; status: number; stdout: string } {
  const trace = path.join(path.dirname(repo), `strace-${Math.random().toString(16).slice(2)}.out`);
  const r = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=open,openat,read,pread64,close',
      '-o',
      trace,
      process.execPath,
      BIN,
      ...args,
    ],
    { cwd: repo, env: gitEnv(), encoding: 'utf8' },
  );
  if (r.error)
    throw new Error(`strace is needed for this test (apt-get install strace): ${r.error.message}`);
  const fds = new Map<number, string>();
  const read = new Map<string, number>();
  for (const line of fs.readFileSync(trace, 'utf8').split('\n')) {
    const call = line.replace(/^\d+\s+/, '');
    let m = /^open(?:at)?\((?:AT_FDCWD, )?"([^"]+)".*\) = (\d+)$/.exec(call);
    if (m) {
      fds.set(Number(m[2]), m[1]!);
      continue;
    }
    m = /^(?:read|pread64)\((\d+),.*\) = (\d+)$/.exec(call);
    if (m && fds.has(Number(m[1]))) {
      const f = fds.get(Number(m[1]))!;
      read.set(f, (read.get(f) ?? 0) + Number(m[2]));
      continue;
    }
    m = /^close\((\d+)\) = 0$/.exec(call);
    if (m) fds.delete(Number(m[1]));
  }
  fs.rmSync(trace);
  return { read, status: r.status ?? -1, stdout: r.stdout };
}

describe('a later run costs what is new', () => {
  it('with nothing new, no pack is opened and nothing changes', () => {
    const repo = makeRepo(40);
    const before = objectSet(repo);
    const first = JSON.parse(toolOk(['--json'], { cwd: repo }));
    expect(first.partitions).toHaveLength(1);
    const stat = packStat(repo);
    const t = traced(['--json'], repo);
    expect(t.status).toBe(0);
    const again = JSON.parse(t.stdout);
    expect(again.partitions).toEqual([]);
    expect(again.provenPacks).toEqual([...stat.keys()].map((n) => n.slice(0, -5)));
    // The ends of the .pack and .idx are read to recognise them (trailer, checksum, object
    // count), never their contents: no index parsed, no entry scanned.
    const packBytes = [...t.read].filter(([f]) => f.endsWith('.pack') || f.endsWith('.idx'));
    expect(packBytes.length).toBe(2 * stat.size);
    for (const [f, n] of packBytes)
      expect({ f, small: n <= 8 + 1024 + 32 }).toEqual({ f, small: true });
    expect(packStat(repo)).toEqual(stat);
    expectIntact(repo, before);
  });

  it('a fetched pack is rewritten on its own; the proven pack stays as it is', () => {
    const repo = makeRepo(60);
    toolOk(['-q'], { cwd: repo });
    const proven = packStat(repo);
    addCommits(repo, 30, 60);
    const before = objectSet(repo);
    const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
    expect(r.partitions).toHaveLength(1);
    expect(r.partitions[0].sourcePacks).toHaveLength(1);
    expect(r.provenPacks).toEqual([...proven.keys()].map((n) => n.slice(0, -5)));
    const after = packStat(repo);
    for (const [name, st] of proven) expect(after.get(name)).toBe(st);
    expect(after.size).toBe(2);
    expectGraphStored(repo);
    expectIntact(repo, before);
  });

  it('loose objects are packed at the levels and removed, as git repack -d does', () => {
    const repo = makeRepo(30);
    toolOk(['-q'], { cwd: repo });
    const proven = packStat(repo);
    addCommits(repo, 12, 30, 'loose');
    expect(packStat(repo)).toEqual(proven);
    const loose = countObjects(repo).count;
    expect(loose).toBeGreaterThan(40);
    const before = objectSet(repo);
    const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
    expect(r.partitions).toHaveLength(1);
    expect(r.partitions[0]).toMatchObject({ sourcePacks: [], looseObjects: loose });
    expect(countObjects(repo).count).toBe(0);
    const after = packStat(repo);
    for (const [name, st] of proven) expect(after.get(name)).toBe(st);
    expectGraphStored(repo);
    expectIntact(repo, before);
  });

  it('small proven packs are merged geometrically; -a makes one pack', () => {
    const repo = makeRepo(20);
    toolOk(['-q'], { cwd: repo });
    const before0 = objectSet(repo).length;
    let tick = 20;
    for (let round = 0; round < 8; round++) {
      addCommits(repo, 3, tick);
      tick += 3;
      toolOk(['-q'], { cwd: repo });
      // Sizes in objects, from git: each pack at least twice all the smaller ones together, bar the newest.
      const sizes = allPacks(repo)
        .map((p) => verifyPack(repo, p).entries.length)
        .sort((a, b) => a - b);
      expect(sizes.length).toBeLessThanOrEqual(Math.ceil(Math.log2(before0 + tick * 7)) + 1);
    }
    const before = objectSet(repo);
    const all = JSON.parse(toolOk(['--json', '-a'], { cwd: repo }));
    expect(all.provenPacks).toEqual([]);
    expect(allPacks(repo)).toHaveLength(1);
    expectGraphStored(repo);
    expectIntact(repo, before);
  });
});

describe('what the proven-packs file is trusted with', () => {
  const statePath = (repo: string): string =>
    path.join(repo, '.git', 'objects', 'info', 'repack-ts.proven');

  it('a damaged or foreign file is ignored: the packs are read again, nothing is lost', () => {
    const repo = makeRepo(30);
    toolOk(['-q'], { cwd: repo });
    const before = objectSet(repo);
    const good = fs.readFileSync(statePath(repo), 'utf8');
    const damaged = [
      'garbage\n',
      good.replace(/ c=0/, ' c=0 extra'),
      good.slice(0, good.length - 20),
      good.replace(/^# git-repack-ts proven packs v1/, '# another tool'),
      Buffer.from([0xff, 0xfe, 0x00, 0x01]).toString('latin1'),
    ];
    for (const text of damaged) {
      fs.writeFileSync(statePath(repo), text);
      const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
      // Read again: the pack is a partition of the run (found unchanged), not left unread.
      expect(r.provenPacks).toEqual([]);
      expect(r.partitions).toHaveLength(1);
      expect(r.partitions[0].unchanged).toBe(true);
      expect(fs.readFileSync(statePath(repo), 'utf8')).toBe(good);
      expectIntact(repo, before);
    }
  });

  it('a pack whose files differ from what was recorded, or other levels, are read again', () => {
    const repo = makeRepo(30);
    toolOk(['-q'], { cwd: repo });
    const before = objectSet(repo);
    const good = fs.readFileSync(statePath(repo), 'utf8');
    const [, line] = good.split('\n');
    const [pack, idx, size] = line!.split(' ');
    for (const bad of [
      good.replace(idx!, '0'.repeat(40)),
      good.replace(` ${size} `, ` ${Number(size) + 1} `),
      good.replace(
        pack!,
        pack!.replace(/^./, (c) => (c === '0' ? '1' : '0')),
      ),
    ]) {
      fs.writeFileSync(statePath(repo), bad);
      const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
      expect(r.provenPacks).toEqual([]);
      expect(r.partitions[0].unchanged).toBe(true);
    }
    // Other levels: the proven pack is rewritten, commits and trees now at level 9.
    const r9 = JSON.parse(toolOk(['--json', '--graph-compression=9'], { cwd: repo }));
    expect(r9.provenPacks).toEqual([]);
    expect(r9.partitions[0].stats.reencoded.commit).toBeGreaterThan(0);
    // Blobs were kept as they are: a pack proven with blob=keep is still proven for graph=9.
    const again = JSON.parse(toolOk(['--json', '--graph-compression=9'], { cwd: repo }));
    expect(again.partitions).toEqual([]);
    expectIntact(repo, before);
  });

  it('the file lives outside objects/pack: git counts no garbage', () => {
    const repo = makeRepo(10);
    toolOk(['-q'], { cwd: repo });
    expect(fs.existsSync(statePath(repo))).toBe(true);
    const c = countObjects(repo);
    expect({ garbage: c.garbage, sizeGarbage: c.sizeGarbage }).toEqual({
      garbage: 0,
      sizeGarbage: 0,
    });
    expect(gitOk(['count-objects', '-v'], { cwd: repo })).not.toMatch(/warning/);
  });
});

describe('--auto, as git gc --auto', () => {
  it('does nothing below repackTs.auto, runs above it; 0 turns it off; no level set, nothing', () => {
    const repo = makeRepo(20);
    const before = objectSet(repo);
    const objects = before.length;
    const stat = packStat(repo);
    gitOk(['config', 'repackTs.auto', String(objects + 1)], { cwd: repo });
    const quiet = tool(['--auto'], { cwd: repo });
    expect({ status: quiet.status, stdout: quiet.stdout, stderr: quiet.stderr }).toEqual({
      status: 0,
      stdout: '',
      stderr: '',
    });
    expect(packStat(repo)).toEqual(stat);
    const j = JSON.parse(toolOk(['--auto', '--json'], { cwd: repo }));
    expect(j.auto).toMatchObject({ run: false, pending: objects });
    gitOk(['config', 'repackTs.auto', '0'], { cwd: repo });
    expect(tool(['--auto'], { cwd: repo }).stdout).toBe('');
    expect(packStat(repo)).toEqual(stat);
    gitOk(['config', 'repackTs.auto', String(objects)], { cwd: repo });
    gitOk(['config', '--unset', 'pack.graphCompression'], { cwd: repo });
    expect(JSON.parse(toolOk(['--auto', '--json'], { cwd: repo })).auto).toMatchObject({
      run: false,
      reason: 'no zlib level is set',
    });
    gitOk(['config', 'pack.graphCompression', '0'], { cwd: repo });
    const ran = JSON.parse(toolOk(['--auto', '--json'], { cwd: repo }));
    expect(ran.auto).toMatchObject({ run: true, pending: objects });
    expect(ran.partitions).toHaveLength(1);
    expectGraphStored(repo);
    // Once proven, nothing is pending.
    expect(JSON.parse(toolOk(['--auto', '--json'], { cwd: repo })).auto).toMatchObject({
      run: false,
      pending: 0,
    });
    expectIntact(repo, before);
  });

  it('another process holding the repository: --auto says nothing, a plain run refuses', () => {
    const repo = makeRepo(10);
    gitOk(['config', 'repackTs.auto', '1'], { cwd: repo });
    // git maintenance's own lock is an empty file.
    const lock = path.join(repo, '.git', 'objects', 'maintenance.lock');
    fs.writeFileSync(lock, '');
    const stat = packStat(repo);
    expect(tool(['--auto'], { cwd: repo })).toMatchObject({ status: 0, stdout: '', stderr: '' });
    const plain = tool(['-q'], { cwd: repo });
    expect(plain.status).toBe(128);
    expect(plain.stderr).toMatch(/^fatal: unable to create '.*maintenance\.lock': File exists\./);
    expect(packStat(repo)).toEqual(stat);
    fs.rmSync(lock);
    expect(tool(['--auto'], { cwd: repo }).status).toBe(0);
    expect(packStat(repo)).not.toEqual(stat);
  });

  it('counts loose objects, as many as git count-objects says', () => {
    const repo = makeRepo(5);
    toolOk(['-q'], { cwd: repo });
    gitOk(['config', 'repackTs.auto', '5'], { cwd: repo });
    for (let n = 0; n < 5; n++) {
      const auto = JSON.parse(toolOk(['--auto', '--json'], { cwd: repo })).auto;
      expect(auto).toMatchObject({ run: false, pending: countObjects(repo).count });
      gitOk(['hash-object', '-w', '--stdin'], { cwd: repo, input: `blob ${n}\n` });
    }
    expect(countObjects(repo).count).toBe(5);
    expect(JSON.parse(toolOk(['--auto', '--json'], { cwd: repo })).auto).toMatchObject({
      run: true,
      pending: 5,
    });
    expect(countObjects(repo).count).toBe(0);
  });
});

/**
 * Commit and tree ids of the packs named with a copy that is not stored at level 0 (FLEVEL 0,
 * stored blocks), and those of them with no stored copy: a run must re-encode at least the
 * latter and at most the former (which copy of a duplicate it keeps is its choice).
 */
function unstoredGraphIds(repo: string, packs: string[]): { any: number; only: number } {
  const unstored = new Set<string>();
  const stored = new Set<string>();
  for (const pack of packs) {
    const bytes = fs.readFileSync(pack);
    for (const e of verifyPack(repo, pack).entries) {
      if (e.type !== 'commit' && e.type !== 'tree') continue;
      const z = entryZlibInfo(bytes, e.offset, 20);
      (z.flevel === 0 && z.stored ? stored : unstored).add(e.oid);
    }
  }
  return { any: unstored.size, only: [...unstored].filter((id) => !stored.has(id)).length };
}

describe("alongside git's own maintenance, the next run costs what git changed", () => {
  const cases: { name: string; setup: (repo: string) => void; run: string[][] }[] = [
    { name: 'git gc', setup: (r) => addCommits(r, 15, 100, 'loose'), run: [['gc', '-q']] },
    {
      name: 'git repack --geometric=2 -d',
      setup: (r) => [0, 1, 2].forEach((k) => addCommits(r, 4, 100 + 4 * k)),
      run: [['repack', '--geometric=2', '-d', '-q']],
    },
    {
      name: 'git maintenance run --task=incremental-repack',
      setup: (r) => [0, 1, 2].forEach((k) => addCommits(r, 4, 100 + 4 * k)),
      run: [
        ['multi-pack-index', 'write'],
        [
          '-c',
          'maintenance.incremental-repack.auto=1',
          'maintenance',
          'run',
          '--task=incremental-repack',
          '--quiet',
        ],
      ],
    },
    {
      name: 'git maintenance run --task=loose-objects',
      setup: (r) => addCommits(r, 15, 100, 'loose'),
      run: [['maintenance', 'run', '--task=loose-objects', '--quiet']],
    },
    {
      name: 'git repack -a -d -f',
      setup: (r) => addCommits(r, 5, 100),
      run: [['repack', '-a', '-d', '-f', '-q']],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      // Large enough that what arrives (counted twice where loose objects and git's new pack hold
      // the same) never makes the geometric rule merge the proven pack too.
      const repo = makeRepo(100);
      toolOk(['-q'], { cwd: repo });
      const ours = new Set(allPacks(repo));
      c.setup(repo);
      const before = objectSet(repo);
      for (const args of c.run) gitOk(args, { cwd: repo });
      expect(objectSet(repo)).toEqual(before);
      // What git left as it was, and what it wrote (or a fetch brought): the run must rewrite the
      // latter, re-encoding exactly their commit and tree entries that are not stored, and leave
      // the former alone.
      const stat = packStat(repo);
      const fresh = allPacks(repo).filter((p) => !ours.has(p));
      const unstored = unstoredGraphIds(repo, fresh);
      const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
      const sources = r.partitions.flatMap((p: { sourcePacks: string[] }) => p.sourcePacks).sort();
      expect(sources).toEqual(fresh.map((p) => path.basename(p, '.pack')).sort());
      const re = r.partitions.reduce(
        (a: number, p: { stats: { reencoded: { commit: number; tree: number } } }) =>
          a + p.stats.reencoded.commit + p.stats.reencoded.tree,
        0,
      );
      expect(re).toBeGreaterThanOrEqual(unstored.only);
      expect(re).toBeLessThanOrEqual(unstored.any);
      const after = packStat(repo);
      for (const p of allPacks(repo).filter((x) => ours.has(x)))
        expect({ p, st: after.get(path.basename(p)) }).toEqual({
          p,
          st: stat.get(path.basename(p)),
        });
      expect([...r.provenPacks].sort()).toEqual(
        [...ours]
          .filter((p) => fs.existsSync(p))
          .map((p) => path.basename(p, '.pack'))
          .sort(),
      );
      expectGraphStored(repo);
      expectIntact(repo, before);
      if (fs.existsSync(path.join(repo, '.git', 'objects', 'pack', 'multi-pack-index')))
        gitOk(['multi-pack-index', 'verify'], { cwd: repo });
      // Nothing left to do.
      expect(JSON.parse(toolOk(['--json'], { cwd: repo })).partitions).toEqual([]);
    });
  }
});

describe('a reachability bitmap and later runs', () => {
  it('the proven pack keeps its bitmap while what arrives is rewritten beside it; git checks it', () => {
    const repo = makeRepo(40);
    gitOk(['repack', '-a', '-d', '-b', '-q'], { cwd: repo });
    toolOk(['-q'], { cwd: repo });
    const bitmaps = () =>
      allPacks(repo).filter((p) => fs.existsSync(p.replace(/\.pack$/, '.bitmap')));
    expect(bitmaps()).toHaveLength(1);
    const proven = packStat(repo);
    addCommits(repo, 20, 40);
    const before = objectSet(repo);
    const r = JSON.parse(toolOk(['--json'], { cwd: repo }));
    expect(r.partitions).toHaveLength(1);
    expect(r.provenPacks).toEqual([...proven.keys()].map((n) => n.slice(0, -5)));
    expect(bitmaps().map((p) => path.basename(p))).toEqual([...proven.keys()]);
    gitOk(['rev-list', '--test-bitmap', 'HEAD~20'], { cwd: repo });
    expect(
      gitOk(['rev-list', '--use-bitmap-index', '--count', '--objects', '--all'], { cwd: repo }),
    ).toBe(gitOk(['rev-list', '--count', '--objects', '--all'], { cwd: repo }));
    expectGraphStored(repo);
    expectIntact(repo, before);
  });
});
