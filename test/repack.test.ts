import { deflateSync } from 'node:zlib';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, type FixtureName } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import {
  countObjects,
  fsckStrict,
  git,
  gitOk,
  listPacks,
  objectSet,
  packDirOf,
  verifyPack,
} from './helpers/git.js';
import { entryZlibInfo } from './helpers/pack-bytes.js';
import { expectGitIndexes } from './helpers/git-indexes.js';
import { tool, toolOk } from './helpers/tool.js';
import { toolFault } from './helpers/faults.js';
import { forge, OBJ, objectId } from './helpers/forge.js';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { emptyJob, transferList } from '../src/repack/batch.js';

type TypeName = 'commit' | 'tree' | 'blob' | 'tag';

interface Scenario {
  name: string;
  args: string[];
  /** The zlib level each type must end up at. */
  levels: Record<TypeName, number>;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'all default',
    args: ['--compression=-1'],
    levels: { commit: -1, tree: -1, blob: -1, tag: -1 },
  },
  {
    name: 'commits 0',
    args: ['--commit-compression=0'],
    levels: { commit: 0, tree: -1, blob: -1, tag: -1 },
  },
  {
    name: 'trees 0',
    args: ['--tree-compression=0'],
    levels: { commit: -1, tree: 0, blob: -1, tag: -1 },
  },
  {
    name: 'both 0',
    args: ['--graph-compression=0'],
    levels: { commit: 0, tree: 0, blob: -1, tag: -1 },
  },
  {
    name: 'mixed',
    args: [
      '--commit-compression=0',
      '--tree-compression=9',
      '--blob-compression=1',
      '--tag-compression=0',
    ],
    levels: { commit: 0, tree: 9, blob: 1, tag: 0 },
  },
];

/** zlib's FLEVEL for a level: what zlib itself writes in the header at that level. */
function flevel(level: number): number {
  return deflateSync(Buffer.from('flevel'), { level }).readUInt8(1) >> 6;
}

function packFiles(repo: string): string[] {
  const dir = packDirOf(repo);
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

/** Everything git can say about a rewritten repository. */
function checkRewritten(
  repo: string,
  before: string[],
  sc: Scenario,
  hashLen: number,
  promisor: boolean,
): void {
  expect(objectSet(repo)).toEqual(before);
  const f = fsckStrict(repo);
  expect(f.output).toBe('');
  expect(f.status).toBe(0);
  expect(countObjects(repo).count).toBe(0);
  for (const pack of listPacks(repo)) {
    const base = pack.slice(0, -5);
    if (fs.existsSync(base + '.keep')) continue;
    expectGitIndexes(repo, pack);
    // Levels: each entry's zlib header says what was stored at which level.
    const bytes = fs.readFileSync(pack);
    const v = verifyPack(repo, pack);
    expect(v.entries.length).toBeGreaterThan(0);
    for (const e of v.entries) {
      const z = entryZlibInfo(bytes, e.offset, hashLen);
      const level = sc.levels[e.type as TypeName];
      // Level 0 is stored blocks; any other level is recorded in FLEVEL (zlib may still store
      // a block it cannot shrink, so `stored` says nothing there).
      if (level === 0) expect({ id: e.oid, ...z }).toEqual({ id: e.oid, flevel: 0, stored: true });
      else expect({ id: e.oid, flevel: z.flevel }).toEqual({ id: e.oid, flevel: flevel(level) });
    }
    expect(fs.existsSync(base + '.promisor')).toBe(promisor);
  }
}

const MATRIX: FixtureName[] = ['basic', 'multi-pack', 'sha256'];
const ONE_SCENARIO: FixtureName[] = [
  'ref-delta',
  'large-offset',
  'idx-v1',
  'bare',
  'alternates',
  'promisor',
  'keep',
  'midx-bitmap',
  'big-blob',
  'pack-v3',
];

describe('repack rewrites every pack, losing nothing', () => {
  for (const name of MATRIX) {
    for (const sc of SCENARIOS) {
      it(`${name}: ${sc.name}`, () => {
        const repo = useFixtureCopy(name);
        const before = objectSet(repo);
        const out = JSON.parse(toolOk(['--json', ...sc.args], { cwd: repo }));
        expect(out.partitions.length).toBeGreaterThan(0);
        checkRewritten(repo, before, sc, FIXTURES[name].objectFormat === 'sha256' ? 32 : 20, false);
        // A second run with the same settings leaves the proven packs unread and changes nothing;
        // one with -a reads them all again, re-encodes nothing and changes nothing.
        const files = packFiles(repo);
        const again = JSON.parse(toolOk(['--json', ...sc.args], { cwd: repo }));
        expect(again.partitions).toEqual([]);
        expect(again.provenPacks.sort()).toEqual(
          files.filter((f) => f.endsWith('.pack')).map((f) => f.slice(0, -5)),
        );
        const all = JSON.parse(toolOk(['--json', '-a', ...sc.args], { cwd: repo }));
        expect(all.partitions.length).toBeGreaterThan(0);
        for (const p of all.partitions) {
          expect(p.stats.reencoded).toEqual({ commit: 0, tree: 0, blob: 0, tag: 0 });
          expect(p.unchanged).toBe(true);
        }
        expect(packFiles(repo)).toEqual(files);
      });
    }
  }
  for (const name of ONE_SCENARIO) {
    it(`${name}: both 0`, () => {
      const repo = useFixtureCopy(name);
      const before = objectSet(repo);
      toolOk(['-q', '--graph-compression=0'], { cwd: repo });
      checkRewritten(repo, before, SCENARIOS[3]!, 20, FIXTURES[name].promisor);
    });
  }
});

describe('what stays and what goes', () => {
  it('a .keep pack and its objects are left alone', () => {
    const repo = useFixtureCopy('keep');
    const keep = listPacks(repo).filter((p) => fs.existsSync(p.replace(/\.pack$/, '.keep')));
    expect(keep.length).toBe(1);
    const kept = fs.readFileSync(keep[0]!);
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(fs.readFileSync(keep[0]!).equals(kept)).toBe(true);
    expect(out.keptPacks).toEqual([path.basename(keep[0]!, '.pack')]);
    expect(out.partitions[0].stats.excluded).toBe(0);
    expect(listPacks(repo).length).toBe(2);
  });

  it('--keep-pack leaves the named pack alone', () => {
    const repo = useFixtureCopy('multi-pack');
    const first = listPacks(repo)[0]!;
    const name = path.basename(first);
    const before = objectSet(repo);
    toolOk(['-q', '--graph-compression=0', `--keep-pack=${name}`], { cwd: repo });
    expect(fs.existsSync(first)).toBe(true);
    expect(listPacks(repo).length).toBe(2);
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('a multi-pack-index naming removed packs is rewritten, with its bitmap', () => {
    const repo = useFixtureCopy('midx-bitmap');
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(out.midx).toBe('rewritten');
    gitOk(['multi-pack-index', 'verify'], { cwd: repo });
    const dir = packDirOf(repo);
    expect(fs.readdirSync(dir).some((f) => /^multi-pack-index-[0-9a-f]+\.bitmap$/.test(f))).toBe(
      true,
    );
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('promisor packs become one promisor pack carrying the old .promisor contents', () => {
    const repo = useFixtureCopy('promisor');
    const olds = listPacks(repo).map((p) =>
      fs.readFileSync(p.replace(/\.pack$/, '.promisor'), 'utf8'),
    );
    expect(olds.length).toBe(2);
    toolOk(['-q', '--graph-compression=0'], { cwd: repo });
    const packs = listPacks(repo);
    expect(packs.length).toBe(1);
    const content = fs.readFileSync(packs[0]!.replace(/\.pack$/, '.promisor'), 'utf8');
    const want = [...new Set(olds.join('').split('\n').filter(Boolean))].sort();
    expect(content.split('\n').filter(Boolean).sort()).toEqual(want);
    expect(git(['rev-list', '--objects', '--all', '--missing=print'], { cwd: repo }).status).toBe(
      0,
    );
  });

  it('a commit-graph stays valid', () => {
    const repo = useFixtureCopy('basic');
    gitOk(['commit-graph', 'write', '--reachable'], { cwd: repo });
    toolOk(['-q', '--graph-compression=0'], { cwd: repo });
    gitOk(['commit-graph', 'verify'], { cwd: repo });
  });

  it('--dry-run touches nothing and predicts the level-0 size exactly', () => {
    const repo = useFixtureCopy('basic');
    const files = packFiles(repo).map((f) => [
      f,
      fs.readFileSync(path.join(packDirOf(repo), f)).toString('hex'),
    ]);
    const loose = countObjects(repo).count;
    const dry = JSON.parse(toolOk(['--json', '--dry-run', '--graph-compression=0'], { cwd: repo }));
    expect(
      packFiles(repo).map((f) => [
        f,
        fs.readFileSync(path.join(packDirOf(repo), f)).toString('hex'),
      ]),
    ).toEqual(files);
    expect(countObjects(repo).count).toBe(loose);
    expect(dry.dryRun).toBe(true);
    const predicted = dry.partitions[0].stats.bytesOut;
    const real = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(real.partitions[0].stats.bytesOut).toBe(predicted);
    expect(fs.statSync(listPacks(repo)[0]!).size).toBe(predicted);
  });

  it('a type no flag or key sets is kept at whatever level it has; setting it re-encodes', () => {
    const repo = useFixtureCopy('basic');
    // Every entry at level 1 (FLEVEL 0, not stored), as a pack written with pack.compression=1.
    gitOk(['-c', 'pack.compression=1', 'repack', '-a', '-d', '-F', '-q'], { cwd: repo });
    const before = objectSet(repo);
    const levelsOf = (): Record<string, Set<string>> => {
      const pack = listPacks(repo)[0]!;
      const bytes = fs.readFileSync(pack);
      const seen: Record<string, Set<string>> = {};
      for (const e of verifyPack(repo, pack).entries) {
        const z = entryZlibInfo(bytes, e.offset, 20);
        (seen[e.type] ??= new Set()).add(`${z.flevel}${z.stored ? ' stored' : ''}`);
      }
      return seen;
    };
    const blobsAt1 = levelsOf().blob!;
    expect([...blobsAt1].every((l) => l.startsWith('0'))).toBe(true);
    const r = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(r.levels.blob).toBe('keep');
    expect(r.partitions[0].stats.reencoded.blob).toBe(0);
    const after = levelsOf();
    expect(after.commit).toEqual(new Set(['0 stored']));
    expect(after.tree).toEqual(new Set(['0 stored']));
    expect(after.blob).toEqual(blobsAt1);
    // Asked for, the blobs move to the default level.
    const again = JSON.parse(
      toolOk(['--json', '--graph-compression=0', '--blob-compression=-1'], { cwd: repo }),
    );
    expect(again.partitions[0].stats.reencoded.blob).toBeGreaterThan(0);
    // (zlib at level 6 may still store a block it cannot shrink: FLEVEL is what counts.)
    expect(new Set([...levelsOf().blob!].map((l) => l[0]))).toEqual(new Set(['2']));
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('levels come from config with git precedence', () => {
    const repo = useFixtureCopy('basic');
    gitOk(['config', 'pack.graphCompression', '0'], { cwd: repo });
    gitOk(['config', 'pack.treeCompression', '6'], { cwd: repo });
    const out = JSON.parse(toolOk(['--json', '--dry-run'], { cwd: repo }));
    expect(out.levels).toEqual({ commit: 0, tree: 6, blob: 'keep', tag: 'keep' });
    const flag = JSON.parse(toolOk(['--json', '--dry-run', '--tree-compression=2'], { cwd: repo }));
    expect(flag.levels.tree).toBe(2);
    const viaC = JSON.parse(
      toolOk(['--json', '--dry-run'], {
        cwd: repo,
        env: { GIT_CONFIG_PARAMETERS: "'pack.blobcompression'='3'" },
      }),
    );
    expect(viaC.levels.blob).toBe(3);
  });

  it('config files we read without git say what git reads in them, and those we cannot are left to git', () => {
    const repo = useFixtureCopy('basic');
    const dotgit = path.join(repo, '.git');
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-home-'));
    try {
      const global = path.join(home, 'gitconfig');
      // Plain files (read by us): the global file, then the repository's, in git's order.
      fs.writeFileSync(global, '[pack]\n\tgraphCompression = 1\n\ttreeCompression = 2\n');
      gitOk(['config', 'pack.treeCompression', '7'], { cwd: repo });
      const env = { GIT_CONFIG_GLOBAL: global };
      const levels = () => JSON.parse(toolOk(['--json', '--dry-run'], { cwd: repo, env })).levels;
      const gitSays = (key: string) => Number(gitOk(['config', key], { cwd: repo, env }).trim());
      expect(levels()).toMatchObject({
        commit: gitSays('pack.graphCompression'),
        tree: gitSays('pack.treeCompression'),
      });
      expect(levels()).toMatchObject({ commit: 1, tree: 7 });
      // An include, a quoted value with a comment: only git reads those.
      fs.writeFileSync(path.join(dotgit, 'more'), '[pack]\n\ttreeCompression = "3" ; a comment\n');
      fs.appendFileSync(path.join(dotgit, 'config'), '[include]\n\tpath = more\n');
      expect(gitSays('pack.treeCompression')).toBe(3);
      expect(levels()).toMatchObject({ commit: 1, tree: 3 });
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('bad levels and options', () => {
  for (const bad of ['10', '-2', 'x', '1.5', '']) {
    it(`--graph-compression=${bad} is a usage error`, () => {
      const r = tool(['--graph-compression=' + bad], { cwd: useFixtureCopy('basic') });
      expect(r.status).toBe(129);
      expect(r.stderr).toMatch(/^error: --graph-compression expects a zlib level from -1 to 9/);
    });
  }
  it('names a bad flag as written on the command line (issue 34)', () => {
    const repo = useFixtureCopy('basic');
    const files = packFiles(repo);
    for (const [args, message] of [
      [
        ['--graph-compression=11'],
        "error: --graph-compression expects a zlib level from -1 to 9 (or auto, or keep), not '11'",
      ],
      [
        ['--compression=auto'],
        'error: auto is a level for one type or for --graph-compression, not for every type (--compression)',
      ],
      [['--fsck=some'], "error: --fsck expects 'changed', 'full' or 'connectivity', not 'some'"],
      [
        ['zstd-import', '--fsck=changes', 'x.zpack'],
        "error: --fsck expects 'full' or 'connectivity', not 'changes'",
      ],
    ] as const) {
      const r = tool([...args], { cwd: repo });
      expect(r.status).toBe(129);
      expect(r.stderr.split('\n')[0]).toBe(message);
    }
    expect(packFiles(repo)).toEqual(files);
  });
  it('a bad level in config is fatal, exit 128, nothing changed', () => {
    const repo = useFixtureCopy('basic');
    gitOk(['config', 'pack.graphCompression', '12'], { cwd: repo });
    const files = packFiles(repo);
    const r = tool([], { cwd: repo });
    expect(r.status).toBe(128);
    expect(r.stderr).toBe('fatal: bad pack.graphCompression level 12\n');
    expect(packFiles(repo)).toEqual(files);
  });
  it('--fsck=maybe is a usage error', () => {
    expect(tool(['--fsck=maybe'], { cwd: useFixtureCopy('basic') }).status).toBe(129);
  });
  it('an unknown option is a usage error', () => {
    const r = tool(['--frobnicate'], { cwd: useFixtureCopy('basic') });
    expect(r.status).toBe(129);
    expect(r.stderr).toMatch(/^error: unknown option `frobnicate'/);
  });
  it('outside a repository: fatal, exit 128', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-norepo-'));
    const r = tool([], { cwd: dir, env: { GIT_CEILING_DIRECTORIES: path.dirname(dir) } });
    fs.rmSync(dir, { recursive: true });
    expect(r.status).toBe(128);
    expect(r.stderr).toBe('fatal: not a git repository (or any of the parent directories): .git\n');
  });
  it('an empty repository has nothing to do', () => {
    const r = toolOk(['--graph-compression=0'], { cwd: useFixtureCopy('empty-repo') });
    expect(r).toMatch(/nothing to repack/);
  });
});

describe('worker threads change nothing but the speed', () => {
  for (const name of ['basic', 'multi-pack'] as const) {
    it(`${name}: the same pack with and without worker threads`, () => {
      const a = useFixtureCopy(name);
      const b = useFixtureCopy(name);
      const ra = JSON.parse(
        toolOk(['--json', '--graph-compression=0'], {
          cwd: a,
          env: { GIT_REPACK_TS_THREADS: '0' },
        }),
      );
      const rb = JSON.parse(
        toolOk(['--json', '--graph-compression=0'], {
          cwd: b,
          env: { GIT_REPACK_TS_THREADS: '2' },
        }),
      );
      expect(rb.partitions.map((p: { newPack: string }) => p.newPack)).toEqual(
        ra.partitions.map((p: { newPack: string }) => p.newPack),
      );
      expect(fsckStrict(b).status).toBe(0);
      // The writing thread's .idx (its CRC32s) and .rev are the ones git writes for that pack.
      for (const pack of listPacks(b)) expectGitIndexes(b, pack);
    });
  }
});

describe('what goes to a worker thread is moved, not copied', () => {
  it("a job's and a result's own buffers are transferred; a view into Node's pool never is", () => {
    const job = emptyJob(3, new ArrayBuffer(64), new ArrayBuffer(32), {
      hashLen: 20,
      files: [{ path: 'p', fd: 0 }],
      zstdIn: true,
      zstdOut: false,
      maxLen: true,
    });
    const list = transferList(job);
    // Every typed array of the job and both buffers, each once; nothing shared with anything else.
    const own = Object.values(job).flatMap((v) =>
      v instanceof ArrayBuffer ? [v] : ArrayBuffer.isView(v) ? [v.buffer] : [],
    );
    expect(new Set(list)).toEqual(new Set(own));
    expect(list.length).toBe(new Set(list).size);
    // A small Buffer is a slice of Node's shared pool: moving it would empty every other one.
    const pooled = Buffer.from('abc');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.length);
    const result = {
      buf: new ArrayBuffer(8),
      out: new ArrayBuffer(8),
      outStart: new Uint32Array(1),
      outLen: new Uint32Array(1),
      size: new Float64Array(1),
      kept: pooled,
    };
    expect(transferList(result)).not.toContain(pooled.buffer);
    expect(transferList(result)).toHaveLength(5);
    // And postMessage takes the list: the job arrives whole on the other side, the buffers detached here.
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(job, list);
    const got = receiveMessageOnPort(port2)!.message as typeof job;
    port1.close();
    expect(got.rawStart.length).toBe(3);
    expect(job.rawStart.length).toBe(0);
  });
});

describe('every delta is kept, on the base it had', () => {
  // bare: one pack and nothing loose (the selection without a table of ids); ref-delta: REF_DELTA
  // chains and a loose commit (the table); promisor: a promisor pack beside loose objects.
  for (const name of ['bare', 'ref-delta', 'promisor'] as const) {
    it(`${name}: git verify-pack -v names the same base for every object before and after`, () => {
      const repo = useFixtureCopy(name);
      const bases = (): Map<string, string> =>
        new Map(
          listPacks(repo).flatMap((p) =>
            verifyPack(repo, p).entries.map((e) => [e.oid, e.base ?? ''] as [string, string]),
          ),
        );
      const before = bases();
      expect([...before.values()].filter((b) => b !== '').length).toBeGreaterThan(10);
      toolOk(['--graph-compression=0'], { cwd: repo });
      const after = bases();
      // (Loose objects are packed whole: only what was packed before is compared.)
      expect(new Map([...before.keys()].map((id) => [id, after.get(id)]))).toEqual(before);
    });
  }
});

describe('a multi-pack-index.lock left by a killed run', () => {
  const lock = (repo: string) => path.join(packDirOf(repo), 'multi-pack-index.lock');
  const hasMidx = (repo: string) =>
    fs.existsSync(path.join(packDirOf(repo), 'multi-pack-index')) &&
    fs.readdirSync(packDirOf(repo)).some((f) => /^multi-pack-index-.*\.bitmap$/.test(f));
  it('is removed by the recovery when the run made it (no older than its journal), and the midx and bitmap come back', () => {
    const repo = useFixtureCopy('midx-bitmap');
    const before = objectSet(repo);
    expect(toolFault(['-q', '--graph-compression=0'], repo, 'phase:midx:kill').killed).toBe(true);
    // What git leaves when it is SIGKILLed with our process group while writing the midx.
    fs.writeFileSync(lock(repo), '');
    const r = tool(['--graph-compression=0'], { cwd: repo });
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(
      `warning: removed ${lock(repo)}, left by git multi-pack-index write in an interrupted run`,
    );
    expect(fs.existsSync(lock(repo))).toBe(false);
    expect(hasMidx(repo)).toBe(true);
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });
  it("is left alone when it is older than the run (someone else's), and the midx write reports it", () => {
    const repo = useFixtureCopy('midx-bitmap');
    fs.writeFileSync(lock(repo), '');
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(lock(repo), old, old);
    expect(toolFault(['-q', '--graph-compression=0'], repo, 'phase:midx:kill').killed).toBe(true);
    const r = tool(['--graph-compression=0'], { cwd: repo });
    expect(fs.existsSync(lock(repo))).toBe(true);
    expect(r.stderr).toMatch(/could not rewrite the multi-pack-index: .*multi-pack-index\.lock/s);
    expect(r.stderr).not.toContain('left by git multi-pack-index write');
  });
});

describe('hundreds of packs', () => {
  it('260 packs (pack numbers past 8 bits, the many-source merge) and loose objects become one pack, nothing lost', () => {
    for (const threads of ['0', '1']) {
      const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-manypacks-'));
      try {
        gitOk(['init', '-q', '--bare', repo]);
        // Each pack holds a blob of its own and the next one's (a duplicate across packs); the
        // last 11 blobs stay loose as well (duplicates of packed objects).
        const ids: string[] = [];
        for (let i = 0; i <= 260; i++)
          ids.push(
            gitOk(['hash-object', '-w', '--stdin'], {
              cwd: repo,
              input: `blob ${i}\n${'x'.repeat(i)}\n`,
            }).trim(),
          );
        for (let i = 0; i < 260; i++)
          gitOk(['pack-objects', '-q', 'objects/pack/pack'], {
            cwd: repo,
            input: `${ids[i]}\n${ids[i + 1]}\n`,
          });
        for (let i = 0; i < 250; i++)
          fs.rmSync(path.join(repo, 'objects', ids[i]!.slice(0, 2), ids[i]!.slice(2)));
        expect(listPacks(repo).length).toBe(260);
        const before = objectSet(repo);
        expect(before.length).toBe(261);
        const r = JSON.parse(
          toolOk(['--json', '--graph-compression=0'], {
            cwd: repo,
            env: { GIT_REPACK_TS_THREADS: threads },
          }),
        );
        expect(r.partitions[0].stats.duplicatesDropped).toBe(259 + 11);
        expect(objectSet(repo)).toEqual(before);
        expect(listPacks(repo).length).toBe(1);
        expect(countObjects(repo).count).toBe(0);
        expect(fsckStrict(repo).status).toBe(0);
        expectGitIndexes(repo, listPacks(repo)[0]!);
      } finally {
        fs.rmSync(repo, { recursive: true, force: true });
      }
    }
  }, 180_000); // 520 git processes make the packs: a minute and more on a loaded machine
});

describe('a damaged source pack stops the rewrite: fatal, exit 128, nothing changed', () => {
  for (const threads of ['0', '1']) {
    it(`a copied entry whose CRC32 does not match the idx (threads=${threads})`, () => {
      const repo = useFixtureCopy('basic');
      const pack = listPacks(repo)[0]!;
      const v = verifyPack(repo, pack);
      const blob = v.entries.find((e) => e.type === 'blob' && e.depth === 0 && e.sizeInPack > 8)!;
      const bytes = fs.readFileSync(pack);
      bytes[blob.offset + blob.sizeInPack - 2]! ^= 0x55;
      fs.chmodSync(pack, 0o644);
      fs.writeFileSync(pack, bytes);
      const snapshot = () =>
        packFiles(repo).map((f) => [
          f,
          fs.readFileSync(path.join(packDirOf(repo), f)).toString('hex'),
        ]);
      const before = snapshot();
      const loose = countObjects(repo).count;
      const r = tool(['--graph-compression=0'], {
        cwd: repo,
        env: { GIT_REPACK_TS_THREADS: threads },
      });
      expect(r.status).toBe(128);
      // Named as git names a corrupt packed object, with the entry's type (as git verify-pack gives it).
      expect(r.stderr).toBe(
        `fatal: packed object ${blob.oid} (stored in ${pack}) is corrupt: entry does not match its CRC32 in the index at offset ${blob.offset} (${blob.type} entry)\n`,
      );
      expect(snapshot()).toEqual(before);
      expect(countObjects(repo).count).toBe(loose);
    });
  }
});

describe('what only the git check sees', () => {
  // A commit whose bytes are another commit's under its id, CRC32 and trailer consistent: our
  // own checks (CRC, inflate-compare of the re-encoding) pass; only git, hashing it, sees it.
  const data = Buffer.from(
    'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nthe real one\n',
  );
  const other = Buffer.from(data.toString().replace('the real one', 'an other one'));
  const forged = forge(
    [{ type: OBJ.commit, data: other }],
    [objectId(OBJ.commit, data, 'sha1')],
    'sha1',
  );
  const install = (repo: string): string => {
    const base = path.join(packDirOf(repo), forged.name);
    fs.writeFileSync(base + '.pack', forged.pack);
    fs.writeFileSync(base + '.idx', forged.idx);
    return base + '.pack';
  };

  it('a re-encoded commit that hashes to another id: refused by default, nothing changed', () => {
    const repo = useFixtureCopy('basic');
    const pack = install(repo);
    const before = packFiles(repo).map((f) => [
      f,
      fs.readFileSync(path.join(packDirOf(repo), f)).toString('hex'),
    ]);
    const r = tool(['--graph-compression=0'], { cwd: repo });
    expect(r.status).toBe(128);
    expect(r.stderr).toContain(
      `fatal: git could not read back the rewritten entries; nothing was changed.`,
    );
    expect(r.stderr).toContain(
      `${pack}: object ${objectId(OBJ.commit, data, 'sha1').toString('hex')} at offset ${forged.offsets[0]}`,
    );
    expect(
      packFiles(repo).map((f) => [
        f,
        fs.readFileSync(path.join(packDirOf(repo), f)).toString('hex'),
      ]),
    ).toEqual(before);
  });

  it('without the git check (--no-fsck) the same rewrite goes through', () => {
    const repo = useFixtureCopy('basic');
    install(repo);
    expect(tool(['--graph-compression=0', '--no-fsck'], { cwd: repo }).status).toBe(0);
  });
});

describe('cruft packs', () => {
  it('a cruft pack (.mtimes) is left alone, and so are its objects', () => {
    const repo = useFixtureCopy('multi-pack');
    const before = objectSet(repo);
    gitOk(['repack', '--cruft', '-d', '-q'], { cwd: repo });
    const cruft = listPacks(repo).filter((p) => fs.existsSync(p.replace(/\.pack$/, '.mtimes')));
    expect(cruft.length).toBe(1);
    const bytes = fs.readFileSync(cruft[0]!);
    const mtimes = fs.readFileSync(cruft[0]!.replace(/\.pack$/, '.mtimes'));
    const out = JSON.parse(toolOk(['--json', '--graph-compression=0'], { cwd: repo }));
    expect(out.keptPacks).toEqual([path.basename(cruft[0]!, '.pack')]);
    expect(fs.readFileSync(cruft[0]!).equals(bytes)).toBe(true);
    expect(fs.readFileSync(cruft[0]!.replace(/\.pack$/, '.mtimes')).equals(mtimes)).toBe(true);
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });
});
