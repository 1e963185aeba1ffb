/**
 * Issue 14: levels mean what they say. Whatever ran before (A), the same command (S) gives the
 * same per-entry encodings — `X → A → S` and `X → S` agree for every A and S in
 * {0, 1, 6, 9, auto, keep}, from a pack git wrote at its default level and from one git wrote at
 * level 0 — and what each entry ends up as is what zlib itself does to its bytes at that level.
 * The dry run predicts the size of the pack the real run writes, to the byte.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsckStrict, gitOk, listPacks, objectSet } from './helpers/git.js';
import { repack } from '../src/commands/repack.js';
import { discoverRepository } from '../src/store/repo.js';
import { entryDataStart } from './helpers/pack-bytes.js';
import { Prng } from './helpers/prng.js';
import { RepoBuilder } from './helpers/repo.js';
import { tool } from './helpers/tool.js';

const TARGETS = ['0', '1', '6', '9', 'auto', 'keep'] as const;
type Target = (typeof TARGETS)[number];

/** The auto rule's thresholds, as the man page states them (DEFAULT_AUTO_RULE). */
const AUTO_SMALL = 1024;
const AUTO_RATIO = 0.8;

interface Encoding {
  flevel: number;
  stored: boolean;
}

let root: string;
const starts: Record<'git' | 'zero', string> = { git: '', zero: '' };

/**
 * Commits, trees and blobs of every kind the rule must tell apart: small and large, text,
 * hex, base64 (which deflate shrinks to about 0.76 of its size: next to the 0.8 line), random
 * bytes (incompressible), and a blob whose first 64 KiB are random and the rest text.
 */
function buildRepo(dir: string): void {
  const r = RepoBuilder.init(dir, { tick: 90_000 });
  const rng = new Prng(0x1e7e15);
  const bytes = (n: number): Buffer =>
    Buffer.from(Array.from({ length: n }, () => rng.u32() & 0xff));
  const text = (n: number): string => {
    const words = [
      'tree',
      'parent',
      'author',
      'commit',
      'pack',
      'delta',
      'level',
      'zlib',
      'stored',
      'object',
    ];
    let s = '';
    while (s.length < n)
      s += `${rng.pick(words)} ${rng.pick(words)}${rng.int(7) === 0 ? '\n' : ' '}`;
    return s.slice(0, n);
  };
  const bodies = [
    () => 'short message',
    () => `long text\n\n${text(1500 + rng.int(2000))}`,
    () => `hex\n\n${bytes(700 + rng.int(900)).toString('hex')}`,
    () => `base64\n\n${bytes(1200 + rng.int(1500)).toString('base64')}`,
    () => `latin1\n\n${Buffer.from(bytes(1500).map((b) => 33 + (b % 222))).toString('latin1')}`,
  ];
  for (let k = 0; k < 30; k++) {
    // A wide directory of random names: trees over 1 KiB that deflate barely shrinks.
    for (let f = 0; f < 3; f++)
      r.write(`wide/${bytes(12).toString('hex')}-${k}-${f}`, `${k} ${f}\n`);
    r.write('notes.txt', `${text(3000)}\n`);
    if (k % 5 === 0) r.write(`random-${k}.bin`, bytes(3000 + rng.int(3000)));
    if (k % 10 === 0)
      r.write(`mixed-${k}.bin`, Buffer.concat([bytes(70_000), Buffer.from(text(70_000))]));
    r.commit(bodies[k % bodies.length]!());
  }
  r.tagAnnotated('v1', 'HEAD', `a tag\n\n${text(1500)}`);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-levels-'));
  const base = path.join(root, 'base');
  buildRepo(base);
  for (const [name, level] of [
    ['git', '-1'],
    ['zero', '0'],
  ] as const) {
    const dir = path.join(root, name);
    fs.cpSync(base, dir, { recursive: true });
    // git's own rewrite at that level (-F: every entry compressed anew by git).
    gitOk(['-c', `pack.compression=${level}`, 'repack', '-a', '-d', '-F', '-q'], { cwd: dir });
    starts[name] = dir;
  }
}, 120_000);

afterAll(() => {
  if (root !== undefined) fs.rmSync(root, { recursive: true, force: true });
});

function copyOf(repo: string, name: string): string {
  const dir = fs.mkdtempSync(path.join(root, `${name}-`));
  fs.cpSync(repo, dir, { recursive: true });
  return dir;
}

function levelArgs(t: Target): string[] {
  return ['commit', 'tree', 'blob', 'tag'].map((k) => `--${k}-compression=${t}`);
}

function run(
  repo: string,
  t: Target,
  extra: string[] = [],
): { bytesOut: number; reencoded: number; unchanged: boolean; partitions: number } {
  const r = tool(['--json', '--no-fsck', ...levelArgs(t), ...extra], { cwd: repo });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const out = JSON.parse(r.stdout) as {
    partitions: {
      unchanged: boolean;
      stats: { bytesOut: number; reencoded: Record<string, number> };
    }[];
  };
  let bytesOut = 0;
  let reencoded = 0;
  for (const p of out.partitions) {
    bytesOut += p.stats.bytesOut;
    reencoded += Object.values(p.stats.reencoded).reduce((a, b) => a + b, 0);
  }
  return {
    bytesOut,
    reencoded,
    unchanged: out.partitions.every((p) => p.unchanged),
    partitions: out.partitions.length,
  };
}

/** The same rewrite in this process (the A → S paths: sixty rewrites without sixty node start-ups). */
async function runInProcess(repo: string, t: Target): Promise<void> {
  const l = t === 'auto' || t === 'keep' ? t : Number(t);
  await repack(discoverRepository({ cwd: repo, env: {}, euid: process.geteuid!() }), {
    levels: { 1: l, 2: l, 3: l, 4: l },
    autoFallback: -1,
    dryRun: false,
    fsck: 'none',
    keepPacks: [],
  });
}

/** Each entry's encoding by object id, read from the pack bytes at the offsets git's show-index gives. */
function census(repo: string): Map<string, Encoding & { data: () => Buffer }> {
  const out = new Map<string, Encoding & { data: () => Buffer }>();
  for (const pack of listPacks(repo)) {
    const bytes = fs.readFileSync(pack);
    const idx = fs.readFileSync(pack.slice(0, -5) + '.idx');
    const entries = gitOk(['show-index'], { cwd: repo, input: idx })
      .trim()
      .split('\n')
      .map((l) => ({ offset: Number(l.split(' ')[0]), oid: l.split(' ')[1]! }))
      .sort((a, b) => a.offset - b.offset);
    entries.forEach((e, k) => {
      const at = entryDataStart(bytes, e.offset, 20);
      const z = bytes.subarray(at, entries[k + 1]?.offset ?? bytes.length - 20);
      out.set(e.oid, {
        flevel: z[1]! >> 6,
        stored: ((z[2]! >> 1) & 3) === 0,
        data: () => inflateSync(z),
      });
    });
  }
  return out;
}

function encodings(c: Map<string, Encoding>): Record<string, string> {
  const o: Record<string, string> = {};
  for (const [id, e] of [...c.entries()].sort())
    o[id] = `flevel ${e.flevel}${e.stored ? ' stored' : ''}`;
  return o;
}

/** What zlib itself makes of an entry's bytes at the target: the expected encoding, from outside the tool. */
function expected(t: Exclude<Target, 'keep'>, data: Buffer): { flevel: number; stored: boolean } {
  const first = (z: Buffer) => ({ flevel: z[1]! >> 6, stored: ((z[2]! >> 1) & 3) === 0 });
  if (t === '0') return { flevel: 0, stored: true };
  if (t === 'auto') {
    if (data.length < AUTO_SMALL) return { flevel: 0, stored: true };
    const six = deflateSync(data, { level: 6 });
    return six.length > AUTO_RATIO * data.length ? { flevel: 0, stored: true } : first(six);
  }
  return first(deflateSync(data, { level: Number(t) }));
}

describe.each(['git', 'zero'] as const)(
  'levels converge from a pack git wrote at %s level',
  (start) => {
    const direct = new Map<Target, Record<string, string>>();

    it.each(TARGETS)(
      'X → %s: what zlib makes of each entry at that level; the dry run predicts the size to the byte',
      (t) => {
        const repo = copyOf(starts[start], `direct-${t}`);
        const before = objectSet(repo);
        const input = census(repo);
        const dry = run(repo, t, ['--dry-run']);
        const real = run(repo, t);
        expect(dry.bytesOut).toBe(real.bytesOut);
        const packs = listPacks(repo);
        expect(packs).toHaveLength(1);
        expect(fs.statSync(packs[0]!).size).toBe(real.bytesOut);
        const after = census(repo);
        expect(objectSet(repo)).toEqual(before);
        expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
        if (t === 'keep') expect(encodings(after)).toEqual(encodings(input));
        else {
          // Every entry is what zlib gives at the target.
          const want: Record<string, string> = {};
          const got: Record<string, string> = {};
          for (const [id, e] of after) {
            const x = expected(t, e.data());
            // From git's pack, entries git compressed at its default level are copied when the
            // target's FLEVEL is the same: their stored-or-not is git's zlib's choice, not node's.
            if (start === 'git' && t === '6') continue;
            want[id] = `flevel ${x.flevel}${x.stored ? ' stored' : ''}`;
            got[id] = `flevel ${e.flevel}${e.stored ? ' stored' : ''}`;
          }
          expect(got).toEqual(want);
        }
        if (t === '0')
          for (const e of after.values()) expect(e).toMatchObject({ flevel: 0, stored: true });
        if (t === '6' || t === '9' || t === '1')
          for (const e of after.values()) expect(e.flevel).toBe(t === '1' ? 0 : t === '6' ? 2 : 3);
        // The same command again changes nothing, and writes nothing: entries it must try (stored
        // ones under 1 or auto) are tried first and all kept.
        const packBefore = fs.readFileSync(packs[0]!);
        // (-a: every pack read again, not left as proven.)
        const again = run(repo, t, ['-a']);
        expect({
          reencoded: again.reencoded,
          unchanged: again.unchanged,
          partitions: again.partitions > 0,
        }).toEqual({ reencoded: 0, unchanged: true, partitions: true });
        expect(listPacks(repo)).toEqual(packs);
        expect(fs.readFileSync(packs[0]!).equals(packBefore)).toBe(true);
        direct.set(t, encodings(census(repo)));
        fs.rmSync(repo, { recursive: true, force: true });
      },
    );

    it.each(TARGETS.filter((a) => a !== 'keep'))(
      'X → %s → S gives what X → S gives, for every S',
      async (a) => {
        const first = copyOf(starts[start], `via-${a}`);
        await runInProcess(first, a);
        const afterA = encodings(census(first));
        for (const s of TARGETS) {
          const repo = copyOf(first, `via-${a}-${s}`);
          await runInProcess(repo, s);
          expect({ path: `${start} → ${a} → ${s}`, encodings: encodings(census(repo)) }).toEqual({
            path: `${start} → ${a} → ${s}`,
            encodings: s === 'keep' ? afterA : direct.get(s),
          });
          // (The census holds every id of the pack: equal to X → S's, whose object set is checked.)
          expect(fsckStrict(repo).status).toBe(0);
          fs.rmSync(repo, { recursive: true, force: true });
        }
        fs.rmSync(first, { recursive: true, force: true });
      },
    );
  },
);
