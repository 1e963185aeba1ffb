/**
 * Delta chains deeper than git's pack-objects writes (4095) are legal: git index-pack and
 * verify-pack accept them (another tool may write them). Read in pack order, base before delta,
 * they must read as git reads them; a cold read more than 4095 deltas above anything known, and a
 * REF_DELTA cycle, are refused with the one message. Packs are made by an independent writer
 * (test/helpers/forge.ts); for the deep chain git index-pack writes the idx and is the oracle.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gitOk, gitOkBuffer } from './helpers/git.js';
import {
  OBJ,
  buildPack,
  copyOp,
  delta,
  fakeId,
  forge,
  insertOp,
  objectId,
  type ForgeEntry,
} from './helpers/forge.js';
import { SHA1, toHex } from '../src/hash/algo.js';
import { ObjectDatabase } from '../src/store/odb.js';
import { Pack } from '../src/store/pack.js';
import { scanPack } from '../src/store/pack-scan.js';
import { MAX_DELTA_DEPTH, resolveChains } from '../src/store/chain.js';
import { verifyPack } from '../src/commands/verify.js';
import { typeName } from '../src/format/object-type.js';

const DEPTH = 4100;
let tmp = '';
let objects = '';
let packFile = '';
/** `git verify-pack -v` per id: type, depth. */
const gitSays = new Map<string, { type: string; depth: number; offset: number }>();
let tipId = '';

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chain-'));
  gitOk(['init', '-q', '--bare', tmp]);
  objects = path.join(tmp, 'objects');
  // A blob, then DEPTH OFS_DELTAs each on the one before: "x", "xb", "xbc", ...
  const entries: ForgeEntry[] = [{ type: OBJ.blob, data: Buffer.from('x') }];
  let cur = Buffer.from('x');
  for (let i = 1; i <= DEPTH; i++) {
    const next = Buffer.concat([cur, Buffer.from([0x61 + (i % 26)])]);
    const ops = [copyOp(0, cur.length), insertOp(next.subarray(cur.length))];
    entries.push({ type: OBJ.ofs, data: delta(cur.length, next.length, ops), ofsBase: i - 1 });
    cur = next;
  }
  tipId = objectId(OBJ.blob, cur, 'sha1').toString('hex');
  const p = buildPack(entries, 'sha1');
  const name = `pack-${p.checksum.toString('hex')}`;
  packFile = path.join(objects, 'pack', `${name}.pack`);
  fs.writeFileSync(packFile, p.pack);
  // git writes the idx: it accepts the chain (the oracle says the pack is legal).
  gitOk(['index-pack', packFile], { cwd: tmp });
  const v = gitOk(['verify-pack', '-v', packFile], { cwd: tmp });
  for (const l of v.split('\n')) {
    const m = /^([0-9a-f]{40}) (\w+)\s+\d+ \d+ (\d+)(?: (\d+) [0-9a-f]{40})?$/.exec(l);
    if (m) gitSays.set(m[1]!, { type: m[2]!, depth: Number(m[4] ?? 0), offset: Number(m[3]) });
  }
  expect(v).toContain(`chain length = ${DEPTH}: 1 object`);
});

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('a legal delta chain deeper than 4095', () => {
  it('every object reads, in pack order, as git has it', () => {
    const odb = ObjectDatabase.open(SHA1, [objects], 1 << 20);
    try {
      const pack = odb.packs[0]!;
      expect(pack.count).toBe(DEPTH + 1);
      for (const j of pack.order) {
        const id = toHex(pack.idx.idAt(j));
        const o = odb.readAt({ pack, index: j });
        const h = createHash('sha1').update(`blob ${o.data.length}\0`).update(o.data).digest();
        expect(h.toString('hex'), id).toBe(id);
      }
      const tip = odb.read(Buffer.from(tipId, 'hex'));
      expect(tip.data.equals(gitOkBuffer(['cat-file', 'blob', tipId], { cwd: tmp }))).toBe(true);
    } finally {
      odb.close();
    }
  });

  it('inspect and the zstd export (resolveChains) find the types and depths git does', () => {
    const pack = Pack.open(packFile, SHA1);
    try {
      const scan = scanPack(pack, { checkCrc: true, onProblem: (p) => expect(p).toBeUndefined() });
      const { realType, depth } = resolveChains(scan, pack.order);
      let deepest = 0;
      for (let j = 0; j < pack.count; j++) {
        const want = gitSays.get(toHex(pack.idx.idAt(j)))!;
        expect([typeName(realType[j]!), depth[j]]).toEqual([want.type, want.depth]);
        deepest = Math.max(deepest, depth[j]!);
      }
      expect(deepest).toBe(DEPTH);
    } finally {
      pack.close();
    }
  });

  it('a cold read of the tip, more than 4095 deltas above anything known, is refused by the cap', () => {
    const odb = ObjectDatabase.open(SHA1, [objects]);
    try {
      const tip = Buffer.from(tipId, 'hex');
      const at = gitSays.get(tipId)!.offset;
      expect(() => odb.read(tip)).toThrow(
        `${packFile}: delta chain deeper than ${MAX_DELTA_DEPTH} (or a REF_DELTA cycle) at offset ${at}`,
      );
      expect(() => odb.typeOf(tip)).toThrow(`delta chain deeper than ${MAX_DELTA_DEPTH}`);
      // At the cap exactly, a cold read goes through.
      const pack = odb.packs[0]!;
      const j = pack.order[MAX_DELTA_DEPTH]!;
      expect(gitSays.get(toHex(pack.idx.idAt(j)))!.depth).toBe(MAX_DELTA_DEPTH);
      const o = odb.readAt({ pack, index: j });
      expect(
        o.data.equals(gitOkBuffer(['cat-file', 'blob', toHex(pack.idx.idAt(j))], { cwd: tmp })),
      ).toBe(true);
    } finally {
      odb.close();
    }
  });

  it('verify reports the chains past the cap (deeper than git writes), with the one message', async () => {
    const r = await verifyPack(packFile, packFile.replace(/\.pack$/, '.idx'), SHA1);
    expect(r.ok).toBe(false);
    const past = [...gitSays.values()].filter((g) => g.depth > MAX_DELTA_DEPTH);
    const first = past.find((g) => g.depth === MAX_DELTA_DEPTH + 1)!;
    expect(r.problems[0]).toMatchObject({
      offset: first.offset,
      message: `delta chain deeper than ${MAX_DELTA_DEPTH} (or a REF_DELTA cycle)`,
    });
    // The deltas above it are not resolved either: each is named, nothing else is.
    expect(r.problems.map((p) => p.offset).sort()).toEqual(past.map((g) => g.offset).sort());
  });
});

describe('a REF_DELTA cycle', () => {
  it('is refused by the cap, with the one message, naming the pack and the entry', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chain-cycle-'));
    try {
      fs.mkdirSync(path.join(dir, 'pack'));
      const a = fakeId('cycle a', 'sha1');
      const b = fakeId('cycle b', 'sha1');
      const d = delta(3, 3, [copyOp(0, 3)]);
      const f = forge(
        [
          { type: OBJ.ref, data: d, refBase: b },
          { type: OBJ.ref, data: d, refBase: a },
        ],
        [a, b],
        'sha1',
      );
      const file = path.join(dir, 'pack', `${f.name}.pack`);
      fs.writeFileSync(file, f.pack);
      fs.writeFileSync(file.replace(/\.pack$/, '.idx'), f.idx);
      const odb = ObjectDatabase.open(SHA1, [dir]);
      try {
        expect(() => odb.read(a)).toThrow(
          `${file}: delta chain deeper than ${MAX_DELTA_DEPTH} (or a REF_DELTA cycle) at offset ${f.offsets[0]}`,
        );
        expect(() => odb.typeOf(b)).toThrow('(or a REF_DELTA cycle)');
      } finally {
        odb.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
