/**
 * inspect's census against what git and the pack's own bytes say: every number of each type's row
 * from `git verify-pack -v` (real type, size, size in pack, depth) and from each entry's zlib
 * header read here. inspect reads only the head of an entry it does not need whole (issue 20), so
 * the fixtures include entries larger than its 64 KiB and 1 MiB read sizes (big-blob).
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { listPacks, verifyPack } from './helpers/git.js';
import { entryDataStart, entryZlibInfo } from './helpers/pack-bytes.js';
import { tool } from './helpers/tool.js';
import type { TypeCensus as Row } from '../src/commands/inspect.js';

const FIXTURES: FixtureName[] = [
  'basic',
  'multi-pack',
  'ref-delta',
  'sha256',
  'big-blob',
  'promisor',
  'keep',
];

/** A level-0 zlib stream of `n` bytes: header, one 5-byte header per block of at most 65535 bytes, the data, Adler-32. */
function storedLength(n: number): number {
  return 2 + 5 * Math.max(1, Math.ceil(n / 65535)) + n + 4;
}

/** The census of one pack, per type, from git verify-pack -v and the entries' bytes. */
function expectedCensus(repo: string, pack: string, hashLen: number): Row[] {
  const bytes = fs.readFileSync(pack);
  const rows = new Map<string, Row>();
  for (const e of verifyPack(repo, pack.replace(/\.pack$/, '.idx')).entries) {
    let r = rows.get(e.type);
    if (r === undefined) {
      r = {
        type: e.type,
        entries: 0,
        deltas: 0,
        depthHistogram: [],
        packedBytes: 0,
        inflatedBytes: 0,
        stored: 0,
        zlibLevels: [0, 0, 0, 0],
        packedBytesAtLevel0: 0,
      };
      rows.set(e.type, r);
    }
    const headerLen = entryDataStart(bytes, e.offset, hashLen) - e.offset;
    const z = entryZlibInfo(bytes, e.offset, hashLen);
    r.entries++;
    if (e.depth > 0) r.deltas++;
    for (let d = r.depthHistogram.length; d <= e.depth; d++) r.depthHistogram[d] = 0;
    r.depthHistogram[e.depth]!++;
    r.packedBytes += e.sizeInPack;
    r.inflatedBytes += e.size;
    if (z.flevel === 0 && z.stored && e.sizeInPack - headerLen >= storedLength(e.size)) r.stored++;
    r.zlibLevels[z.flevel]!++;
    r.packedBytesAtLevel0 += headerLen + storedLength(e.size);
  }
  return [...rows.values()];
}

describe('inspect --json agrees with git verify-pack -v and the zlib headers, pack by pack', () => {
  for (const name of FIXTURES) {
    it(name, () => {
      const repo = fixturePath(name);
      const r = tool(['inspect', '--json'], { cwd: repo });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const census = JSON.parse(r.stdout) as {
        objectFormat: string;
        packs: { pack: string; objects: number; size: number; types: Row[] }[];
      };
      const hashLen = census.objectFormat === 'sha256' ? 32 : 20;
      const packs = listPacks(repo);
      expect(census.packs.map((p) => fs.realpathSync(p.pack)).sort()).toEqual(
        packs.map((p) => fs.realpathSync(p)).sort(),
      );
      for (const p of census.packs) {
        const want = expectedCensus(repo, p.pack, hashLen);
        expect(p.size).toBe(fs.statSync(p.pack).size);
        expect(p.objects).toBe(want.reduce((a, row) => a + row.entries, 0));
        const got = p.types.filter((t) => t.entries > 0);
        expect(got.sort((a, b) => a.type.localeCompare(b.type))).toEqual(
          want.sort((a, b) => a.type.localeCompare(b.type)),
        );
      }
    });
  }

  it('big-blob has entries over 64 KiB and over 1 MiB (what inspect reads only the head of)', () => {
    const repo = fixturePath('big-blob');
    const sizes = verifyPack(repo, listPacks(repo)[0]!.replace(/\.pack$/, '.idx')).entries.map(
      (e) => e.sizeInPack,
    );
    expect(sizes.some((s) => s > 64 << 10 && s < 1 << 20)).toBe(true);
    expect(sizes.some((s) => s > 1 << 20)).toBe(true);
  });
});
