/**
 * The reliability harness on `zstd-import` (issue 30): SIGKILL at each of its fault points, and
 * damaged or forged zstd packs. After a kill the repository must pass `git fsck --strict` with
 * every object still there and every ref as it was or as the zpack has it; the next import must
 * succeed, clean up, and end as an uninterrupted one. A damaged zpack must be refused with
 * `fatal:` (128) and the repository unchanged, or imported with every object hashing to its id
 * (git verify-pack) and nothing lost. The suite runs a subset; `npm run reliability` all of it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import {
  dropScratch,
  integrityProblems,
  leftovers,
  LONG,
  packShape,
  record,
  scaled,
  scratchCopy,
  toolFault,
  type Point,
} from './helpers/faults.js';
import { git, gitOk, listPacks, objectSet } from './helpers/git.js';
import { OBJ, copyOp, delta, insertOp, objectId } from './helpers/forge.js';
import { repoState } from './helpers/repo-state.js';
import { forgeZpack, refixZpack, zpackLayout } from './helpers/zpack-forge.js';

const refsOf = (repo: string): Map<string, string> =>
  new Map(
    gitOk(['for-each-ref', '--format=%(refname) %(objectname)'], { cwd: repo })
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );

let dir = '';
let zpack = '';
let zrefs = new Map<string, string>();

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-rel-zstd-'));
  zpack = path.join(dir, 'basic.zpack');
  const r = toolFault(
    ['-q', '--zstd=3', '--dict-trainer=js', '-o', zpack],
    fixturePath('basic'),
    undefined,
  );
  if (r.status !== 0) throw new Error(r.stderr);
  zrefs = refsOf(fixturePath('basic'));
});

afterAll(() => {
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

/** Targets: an empty repository (everything new), and multi-pack (refs of the same names that differ: exit 1). */
const TARGETS = [
  { name: 'empty-repo', args: ['zstd-import', '-q'] },
  { name: 'multi-pack', args: ['zstd-import', '-q', '--fsck=connectivity'] },
] as const;

interface Reference {
  status: number;
  objects: string[];
  refs: string;
  shape: string[];
  points: Point[];
}

/** An uninterrupted import on a copy: its exit, end state and every fault point it passes. */
function reference(t: (typeof TARGETS)[number]): Reference {
  const repo = scratchCopy(fixturePath(t.name), `zstd-ref-${t.name}`);
  try {
    const trace = path.join(path.dirname(repo), 'points');
    fs.writeFileSync(trace, '');
    const r = toolFault([...t.args, zpack], repo, undefined, { GIT_REPACK_TS_FAULT_TRACE: trace });
    if (r.status !== 0 && r.status !== 1)
      throw new Error(`${t.name}: the import failed (${r.status}): ${r.stderr}`);
    const points = fs
      .readFileSync(trace, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => ({ point: l.slice(0, l.indexOf(' ')), detail: l.slice(l.indexOf(' ') + 1) }));
    return { ...endState(repo), status: r.status, points };
  } finally {
    dropScratch(repo);
  }
}

function endState(repo: string): { objects: string[]; refs: string; shape: string[] } {
  const s = repoState(repo);
  return { objects: s.objects, refs: s.refs, shape: packShape(repo) };
}

/** What a killed import may leave: every ref as before or as the zpack has it, nothing lost, fsck clean. */
function afterKill(
  repo: string,
  before: { objects: string[]; refs: Map<string, string> },
): string[] {
  const problems = integrityProblems(repo, before.objects);
  for (const [ref, id] of refsOf(repo))
    if (before.refs.get(ref) !== id && zrefs.get(ref) !== id)
      problems.push(`${ref} is ${id}, neither as before nor as in the zpack`);
  return problems;
}

describe('zstd-import: SIGKILL at its fault points', () => {
  for (const t of TARGETS) {
    it(
      t.name,
      () => {
        const ref = reference(t);
        const chosen = LONG
          ? ref.points.map((_, i) => i + 1)
          : ref.points.flatMap((p, i) =>
              p.point.startsWith('phase:') || p.point === 'rename' ? [i + 1] : [],
            );
        const problems: string[] = [];
        let held = 0;
        for (const k of chosen) {
          const repo = scratchCopy(fixturePath(t.name), `zstd-kill-${t.name}`);
          const what = `kill at point ${k} (${ref.points[k - 1]!.point})`;
          try {
            const before = { objects: objectSet(repo), refs: refsOf(repo) };
            const r = toolFault([...t.args, zpack], repo, `*:${k}:kill`);
            const p = r.killed ? afterKill(repo, before) : [`not killed: ${r.status} ${r.stderr}`];
            const next = toolFault([...t.args, zpack], repo, undefined);
            if (next.status !== ref.status)
              p.push(`the next import exited ${next.status}: ${next.stderr}`);
            const end = endState(repo);
            if (end.refs !== ref.refs)
              p.push(`refs after the next import:\n${end.refs}instead of\n${ref.refs}`);
            if (end.objects.join('\n') !== ref.objects.join('\n'))
              p.push('objects differ from an uninterrupted import');
            if (end.shape.join(' | ') !== ref.shape.join(' | '))
              p.push(`shape ${end.shape.join(' | ')} instead of ${ref.shape.join(' | ')}`);
            const left = leftovers(repo);
            if (left.length > 0) p.push(`left ${left.join(', ')}`);
            if (p.length === 0) held++;
            problems.push(...p.map((m) => `${t.name} ${what}: ${m}`));
          } finally {
            dropScratch(repo);
          }
        }
        record(`kills at fault points (zstd-import into ${t.name})`, chosen.length, held);
        expect(problems).toEqual([]);
      },
      scaled(180_000, 1_800_000),
    );
  }
});

interface Damaged {
  name: string;
  bytes: () => Buffer;
}

/** Byte damage at each part of a real zpack, as it is and with every checksum made right again; and forged ones. */
function corpus(): Damaged[] {
  const good = fs.readFileSync(zpack);
  const L = zpackLayout(good, 'sha1');
  const flip = (at: number, fix: boolean) => (): Buffer => {
    const b = Buffer.from(good);
    b[at]! ^= 0x5a;
    return fix ? refixZpack(b, 'sha1') : b;
  };
  const mid = (i: number): number =>
    Math.floor((L.offsets[i]! + (L.offsets[i + 1] ?? L.index)) / 2);
  const largest = L.offsets
    .map((o, i) => [(L.offsets[i + 1] ?? L.index) - o, i] as const)
    .sort((a, b) => b[0] - a[0])[0]![1];
  const spots: [string, number][] = [
    ['signature', 1],
    ['version', 7],
    ['object count', 11],
    ['hash id', 12],
    ['flags', 13],
    ['dictionary kind', L.dictTable],
    ['dictionary length', L.dictTable + 7],
    ['dictionary bytes', L.dicts + 40],
    ['refs length', L.refsLen + 3],
    ['refs: an id', L.refs + 3],
    ['refs: a name', L.refs + 50],
    ['first entry header', L.entries],
    ['first entry data', L.entries + 4],
    ['largest entry, middle', mid(largest)],
    ['an entry a third in', mid(Math.floor(L.count / 3))],
    ['last entry, middle', mid(L.count - 1)],
    ['index fanout', L.index + 8 + 400],
    ['index ids', L.index + 8 + 1024 + 5],
    ['footer', L.footer + 7],
    ['trailer', L.trailer + 2],
  ];
  const out: Damaged[] = [];
  for (const [what, at] of spots) {
    out.push({ name: `${what}: byte ${at} flipped`, bytes: flip(at, false) });
    if (at >= L.refsLen && at < L.index)
      out.push({ name: `${what}: byte ${at} flipped, checksums fixed`, bytes: flip(at, true) });
  }
  for (const cut of [
    10,
    L.dicts + 5,
    L.entries + 3,
    Math.floor((L.entries + L.index) / 2),
    L.index + 100,
    good.length - 1,
  ]) {
    out.push({ name: `truncated at ${cut}`, bytes: () => good.subarray(0, cut) });
  }
  out.push({
    name: 'garbage after the trailer',
    bytes: () => Buffer.concat([good, Buffer.from('garbage')]),
  });
  out.push({ name: 'control: refixed without damage', bytes: () => refixZpack(good, 'sha1') });
  // Forged: consistent files whose content lies.
  const readme = gitOk(['rev-parse', 'HEAD:README.md'], { cwd: fixturePath('basic') }).trim();
  const base = Buffer.from('a base long enough to be copied from, and then some more\n');
  const forged =
    (entries: Parameters<typeof forgeZpack>[0], refs = '') =>
    (): Buffer =>
      forgeZpack(entries, 'sha1', { refs });
  out.push({
    name: 'forged: a blob under an existing id',
    bytes: forged([{ type: OBJ.blob, data: Buffer.from('lie\n'), id: Buffer.from(readme, 'hex') }]),
  });
  out.push({
    name: 'forged: a delta whose result is not its id',
    bytes: forged([
      { type: OBJ.blob, data: base },
      {
        type: OBJ.ofs,
        data: delta(base.length, 30, [copyOp(0, 30)]),
        ofsBase: 0,
        id: Buffer.from(readme, 'hex'),
      },
    ]),
  });
  out.push({
    name: 'forged: a delta copying past its base',
    bytes: forged([
      { type: OBJ.blob, data: base },
      {
        type: OBJ.ofs,
        data: delta(base.length, 90, [copyOp(0, 90)]),
        ofsBase: 0,
        id: objectId(OBJ.blob, Buffer.alloc(90), 'sha1'),
      },
    ]),
  });
  out.push({
    name: 'forged: refs to objects it does not hold',
    bytes: forged(
      [{ type: OBJ.blob, data: base }],
      `${'1'.repeat(40)} refs/heads/main\n${objectId(OBJ.blob, base, 'sha1').toString('hex')} refs/heads/../../x\n`,
    ),
  });
  out.push({
    name: 'control: a sound zpack with a tag ref',
    bytes: forged(
      [{ type: OBJ.blob, data: base }],
      `${objectId(OBJ.blob, base, 'sha1').toString('hex')} refs/tags/base\n`,
    ),
  });
  return out;
}

/** What one damaged zpack did to a copy of basic: refused or imported, and what went wrong (nothing: handled cleanly). */
function judge(v: Damaged, fsck: string): { problems: string[]; refused: boolean } {
  const problems = judged(v, fsck);
  return { problems: problems.filter((p) => p !== REFUSED), refused: problems.includes(REFUSED) };
}

const REFUSED = 'refused';

function judged(v: Damaged, fsck: string): string[] {
  const repo = scratchCopy(fixturePath('basic'), 'zstd-damage');
  try {
    const file = path.join(path.dirname(repo), 'damaged.zpack');
    fs.writeFileSync(file, v.bytes());
    const before = repoState(repo);
    const r = toolFault(['zstd-import', '-q', fsck, file], repo, undefined);
    const say = (m: string): string => `${v.name} (${fsck}): ${m}`;
    if (r.signal !== null || r.stderr.includes('internal error') || / at [\w.]+ \(/.test(r.stderr))
      return [say(`crashed: ${r.status} ${r.signal} ${r.stderr.slice(0, 500)}`)];
    if (r.status === 128 || r.status === 129) {
      const problems = /^(fatal|error): /.test(r.stderr)
        ? []
        : [say(`exit ${r.status} without a message: ${r.stderr}`)];
      const after = repoState(repo);
      if (JSON.stringify(after) !== JSON.stringify(before))
        problems.push(say('refused, but the repository changed'));
      return [REFUSED, ...problems];
    }
    if (r.status !== 0 && r.status !== 1) return [say(`exit ${r.status}: ${r.stderr}`)];
    // Imported: every object of every pack hashes to its id (git verify-pack), nothing lost.
    const problems = integrityProblems(repo, before.objects).filter(
      (p) => fsck !== '--no-fsck' || !p.startsWith('git fsck'),
    );
    for (const p of listPacks(repo))
      if (git(['verify-pack', p], { cwd: repo }).status !== 0)
        problems.push(`git verify-pack ${path.basename(p)} failed`);
    return problems.map(say);
  } finally {
    dropScratch(repo);
  }
}

describe('zstd-import: damaged and forged zstd packs', () => {
  it(
    'refused cleanly with the repository unchanged, or imported with every object hashing to its id',
    () => {
      const all = corpus();
      const chosen = LONG
        ? all
        : all.filter(
            (v, i) =>
              v.name.startsWith('forged') ||
              v.name.startsWith('control') ||
              v.name.includes('checksums fixed') ||
              i % 4 === 0,
          );
      const problems: string[] = [];
      const outcomes = { refused: 0, imported: 0 };
      let tried = 0;
      let held = 0;
      for (const fsck of ['--no-fsck', '--fsck=full']) {
        for (const v of chosen) {
          const { problems: p, refused } = judge(v, fsck);
          tried++;
          outcomes[refused ? 'refused' : 'imported']++;
          if (p.length === 0) held++;
          problems.push(...p);
        }
      }
      record('damaged inputs (zstd-import, CLI)', tried, held, [
        `${chosen.length} of ${all.length} variants (byte damage to each part of a zpack, as is and with every checksum fixed; truncations; forged content and refs), each with --no-fsck and --fsck=full`,
        `${outcomes.refused} refused (repository unchanged), ${outcomes.imported} imported (every object hashing to its id, nothing lost)`,
      ]);
      expect(problems).toEqual([]);
    },
    scaled(300_000, 1_800_000),
  );
});
