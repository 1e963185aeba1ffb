import fs from 'node:fs';
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inflateSync, deflateSync, crc32 } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import {
  OBJECT_HEADER_ROOM,
  SHA1,
  SHA256,
  hashObjectBuffer,
  objectHeader,
  putObjectHeader,
  toHex,
} from '../src/hash/algo.js';
import { StackArena } from '../src/delta/arena.js';
import { Pack } from '../src/store/pack.js';
import { scanPack } from '../src/store/pack-scan.js';
import { firstBlockCode } from '../src/format/zlib-stored.js';
import { OidTable } from '../src/hash/oid-table.js';
import { sortIds } from '../src/hash/sort.js';
import { encodeIdxV2, firstUnsortedId, parseIdx } from '../src/format/idx.js';
import { encodeRev, packOrderFromOffsets, parseRev } from '../src/format/rev.js';
import {
  encodeEntryHeader,
  encodeOfsDistance,
  encodePackHeader,
  ofsDistanceLength,
  parseEntryHeader,
} from '../src/format/pack.js';
import {
  adler32,
  inflateExact,
  inflatesTo,
  storedZlib,
  storedZlibEquals,
} from '../src/codec/zlib.js';
import { storedZlibLength } from '../src/format/zlib-stored.js';
import { applyDelta } from '../src/delta/apply.js';
import { DeltaBaseCache } from '../src/delta/cache.js';
import { parseConfigInt, parseConfigList } from '../src/store/config.js';
import { GitConfig } from '../src/store/config.js';
import { FIXED_HUFFMAN, resolveLevels } from '../src/repack/levels.js';
import { hasLevel, sameEncoding } from '../src/repack/encoding.js';
import { deflateAt } from '../src/repack/deflate.js';
import { fixturePath } from './fixtures/index.js';
import { listPacks } from './helpers/git.js';

function idxOf(name: 'basic' | 'large-offset' | 'sha256' | 'idx-v1'): string {
  return listPacks(fixturePath(name))[0]!.replace(/\.pack$/, '.idx');
}

describe('idx', () => {
  it("re-encoding git's idx v2 gives the same bytes (sha1 and sha256)", () => {
    for (const [name, algo] of [
      ['basic', SHA1],
      ['sha256', SHA256],
    ] as const) {
      const buf = fs.readFileSync(idxOf(name));
      const idx = parseIdx(buf, algo, 'x.idx');
      const out = encodeIdxV2(
        { count: idx.count, ids: idx.ids, offsets: idx.offsets, crcs: idx.crcArray() },
        idx.packChecksum,
        algo,
      );
      expect(out.equals(buf)).toBe(true);
    }
  });

  it('writes the 64-bit offset table exactly as git index-pack --index-version=2,4096 does', () => {
    const buf = fs.readFileSync(idxOf('large-offset'));
    const idx = parseIdx(buf, SHA1, 'x.idx');
    expect(idx.largeOffsets).toBeGreaterThan(0);
    const out = encodeIdxV2(
      { count: idx.count, ids: idx.ids, offsets: idx.offsets, crcs: idx.crcArray() },
      idx.packChecksum,
      SHA1,
      4096,
    );
    expect(out.equals(buf)).toBe(true);
  });

  it('reads idx v1 to the same ids and offsets as the v2 of the same pack', () => {
    const v1 = parseIdx(fs.readFileSync(idxOf('idx-v1')), SHA1, 'v1.idx');
    const v2 = parseIdx(fs.readFileSync(idxOf('basic')), SHA1, 'v2.idx');
    expect(v1.version).toBe(1);
    expect(v1.hasCrcs).toBe(false);
    expect(v1.ids.equals(v2.ids)).toBe(true);
    expect([...v1.offsets]).toEqual([...v2.offsets]);
  });

  it('offsets past 2^32 survive an encode/parse round trip', () => {
    const ids = Buffer.alloc(40);
    ids[0] = 1;
    ids[20] = 2;
    const offsets = new Float64Array([12, 5 * 2 ** 32 + 7]);
    const out = encodeIdxV2(
      { count: 2, ids, offsets, crcs: new Uint32Array([1, 2]) },
      Buffer.alloc(20),
      SHA1,
    );
    const back = parseIdx(out, SHA1, 'x');
    expect([...back.offsets]).toEqual([12, 5 * 2 ** 32 + 7]);
    expect(back.largeOffsets).toBe(1);
  });

  it('an index of many chunks (and many 64-bit offsets) round-trips and is hashed whole', () => {
    const n = 40_000; // more than two of emitIdxV2's chunks of entries
    const ids = Buffer.alloc(n * 20);
    for (let i = 0; i < n; i++)
      crypto
        .createHash('sha1')
        .update(String(i))
        .digest()
        .copy(ids, i * 20);
    const order = sortIds(ids, n, 20);
    const sorted = Buffer.alloc(n * 20);
    order.forEach((i, r) => ids.copy(sorted, r * 20, i * 20, (i + 1) * 20));
    const offsets = new Float64Array(n).map((_, i) =>
      i % 3 === 0 ? 2 ** 33 + i * 100 : 12 + i * 100,
    );
    const crcs = new Uint32Array(n).map((_, i) => (i * 2654435761) >>> 0);
    const out = encodeIdxV2({ count: n, ids: sorted, offsets, crcs }, Buffer.alloc(20, 7), SHA1);
    const back = parseIdx(out, SHA1, 'x.idx');
    expect(back.ids.equals(sorted)).toBe(true);
    expect([...back.offsets]).toEqual([...offsets]);
    expect([...back.crcArray()]).toEqual([...crcs]);
    expect(back.largeOffsets).toBe(Math.ceil(n / 3));
    expect(
      crypto
        .createHash('sha1')
        .update(out.subarray(0, out.length - 20))
        .digest()
        .equals(out.subarray(out.length - 20)),
    ).toBe(true);
  });

  it('firstUnsortedId finds ids out of order or repeated where only their last bytes differ', () => {
    // Ids that share their first 19 bytes, so that nothing but the full comparison decides.
    const make = (lasts: number[]) => {
      const n = lasts.length;
      const ids = Buffer.alloc(n * 20, 0xab);
      lasts.forEach((b, i) => (ids[i * 20 + 19] = b));
      return parseIdx(
        encodeIdxV2(
          {
            count: n,
            ids,
            offsets: new Float64Array(n).map((_, i) => 12 + i),
            crcs: new Uint32Array(n),
          },
          Buffer.alloc(20),
          SHA1,
        ),
        SHA1,
        'x.idx',
      );
    };
    // The expected position: the first i whose id does not compare greater than the one before (Buffer.compare).
    const expected = (lasts: number[]) =>
      lasts.findIndex(
        (b, i) => i > 0 && Buffer.compare(Buffer.from([lasts[i - 1]!]), Buffer.from([b])) >= 0,
      );
    for (const lasts of [
      [1, 2, 3, 4],
      [1, 3, 2, 4],
      [1, 2, 2, 3],
      [5, 4],
      [0, 255],
    ])
      expect(firstUnsortedId(make(lasts))).toBe(expected(lasts));
    expect(expected([1, 3, 2, 4])).toBe(2);
  });

  it('rejects a non-monotonic fanout with the offset', () => {
    const buf = Buffer.from(fs.readFileSync(idxOf('basic')));
    buf.writeUInt32BE(0xffffff, 8 + 4 * 3);
    expect(() => parseIdx(buf, SHA1, 'x.idx')).toThrow(
      /x\.idx: non-monotonic fanout at offset \d+/,
    );
  });
});

describe('rev', () => {
  it("re-encoding git's .rev gives the same bytes", () => {
    const idxPath = idxOf('basic');
    const revPath = idxPath.replace(/\.idx$/, '.rev');
    const idx = parseIdx(fs.readFileSync(idxPath), SHA1, idxPath);
    const order = packOrderFromOffsets(idx.offsets);
    expect(encodeRev(order, idx.packChecksum, SHA1).equals(fs.readFileSync(revPath))).toBe(true);
    expect([...parseRev(fs.readFileSync(revPath), idx.count, SHA1, revPath)]).toEqual([...order]);
  });

  it('pack order from offsets agrees with a plain sort, including huge offsets', () => {
    const offs = new Float64Array([900, 12, 2 ** 45, 300, 2 ** 33]);
    expect([...packOrderFromOffsets(offs)]).toEqual([1, 3, 0, 4, 2]);
  });
});

describe('pack entry headers', () => {
  it('round-trips type and size, including sizes past 2^32', () => {
    for (const size of [0, 15, 16, 127, 128, 2 ** 31, 2 ** 32 + 5, 2 ** 50]) {
      const b = Buffer.alloc(16);
      const n = encodeEntryHeader(3, size, b, 0);
      const h = parseEntryHeader(b, 0, n, 20, 'p', 100);
      expect(h).toMatchObject({ type: 3, size, headerLen: n });
    }
  });

  it("OFS_DELTA distances round-trip in git's encoding", () => {
    for (const d of [1, 127, 128, 16511, 16512, 2 ** 35]) {
      const b = Buffer.alloc(16);
      const hl = encodeEntryHeader(6, 10, b, 0);
      const n = encodeOfsDistance(d, b, hl);
      expect(n).toBe(ofsDistanceLength(d));
      expect(parseEntryHeader(b, 0, hl + n, 20, 'p', d + 1)).toMatchObject({
        baseDistance: d,
        headerLen: hl + n,
      });
    }
  });

  it('rejects a base offset outside the pack and an overflowing size', () => {
    const b = Buffer.alloc(16);
    const hl = encodeEntryHeader(6, 10, b, 0);
    const n = encodeOfsDistance(500, b, hl);
    expect(() => parseEntryHeader(b, 0, hl + n, 20, 'p.pack', 400)).toThrow(
      /p\.pack: delta base offset out of bound at offset 400/,
    );
    const big = Buffer.from([0x9f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    expect(() => parseEntryHeader(big, 0, big.length, 20, 'p.pack', 12)).toThrow(
      /size overflows at offset 12/,
    );
    expect(() => parseEntryHeader(Buffer.from([0x50]), 0, 1, 20, 'p.pack', 12)).toThrow(
      /bad object type 5/,
    );
  });
});

describe('deltas', () => {
  const base = Buffer.from('0123456789abcdefghij');
  const delta = (...bytes: number[]) => Buffer.from(bytes);

  it('applies copies and inserts', () => {
    // src 20, dst 7: copy 4 bytes at 10, insert "xyz"
    const d = delta(20, 7, 0x91, 10, 4, 3, 0x78, 0x79, 0x7a);
    expect(applyDelta(base, d).toString()).toBe('abcdxyz');
  });

  it('checks both sizes and every copy', () => {
    expect(() => applyDelta(base, delta(19, 4, 0x91, 0, 4))).toThrow(/base size 19 does not match/);
    expect(() => applyDelta(base, delta(20, 4, 0x91, 18, 4))).toThrow(/copy out of range/);
    expect(() => applyDelta(base, delta(20, 3, 0x91, 0, 4))).toThrow(/copy out of range/);
    expect(() => applyDelta(base, delta(20, 5, 0x91, 0, 4))).toThrow(
      /result size 4 does not match declared 5/,
    );
    expect(() => applyDelta(base, delta(20, 1, 0))).toThrow(/opcode 0/);
    expect(() => applyDelta(base, delta(20, 4, 0x91))).toThrow(/truncated/);
    expect(() =>
      applyDelta(base, delta(20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 1 << 20),
    ).toThrow();
  });

  it('writes into a buffer it is given, when that is large enough', () => {
    const d = delta(20, 7, 0x91, 10, 4, 3, 0x78, 0x79, 0x7a);
    const into = Buffer.alloc(16, 0x2e);
    const out = applyDelta(base, d, Number.MAX_SAFE_INTEGER, into);
    expect(out.buffer).toBe(into.buffer);
    expect(into.toString()).toBe('abcdxyz.........');
    const small = Buffer.alloc(6);
    const own = applyDelta(base, d, Number.MAX_SAFE_INTEGER, small);
    expect(own.buffer).not.toBe(small.buffer);
    expect(own.toString()).toBe('abcdxyz');
  });

  it('base and result may share one buffer (either order) and give the same bytes', () => {
    // base: 200 bytes; delta: copy 100 at 50 (long: copyWithin), insert 3, copy 10 at 0 (short)
    const big = Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 7) & 0xff));
    const d = delta(0xc8, 0x01, 113, 0x91, 50, 100, 3, 1, 2, 3, 0x91, 0, 10);
    const want = applyDelta(big, d);
    expect(want.length).toBe(113);
    expect(want.subarray(0, 100).equals(big.subarray(50, 150))).toBe(true);
    const one = Buffer.alloc(400, 0xee);
    big.copy(one, 0);
    const got = applyDelta(one.subarray(0, 200), d, Number.MAX_SAFE_INTEGER, one.subarray(200));
    expect(got.equals(want)).toBe(true);
    expect(got.byteOffset - one.byteOffset).toBe(200);
    expect(one.subarray(0, 200).equals(big)).toBe(true); // the base is left as it was
    // result in front of the base in the same buffer: not the copyWithin layout, still right
    const rev = Buffer.alloc(400, 0xee);
    big.copy(rev, 200);
    expect(
      applyDelta(rev.subarray(200), d, Number.MAX_SAFE_INTEGER, rev.subarray(0, 200)).equals(want),
    ).toBe(true);
  });

  it('a huge declared result size is refused before allocating it', () => {
    const d = delta(20, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x91, 0, 4);
    expect(() => applyDelta(base, d, 1 << 20)).toThrow(/exceeds limit/);
  });
});

describe('pack scan', () => {
  it('declared sizes past 4 GiB widen the size table instead of wrapping', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scan-'));
    try {
      const declared = 2 ** 32 + 5;
      const head = Buffer.alloc(16);
      const hl = encodeEntryHeader(3, declared, head, 0);
      // Not real deflate data (the scan does not inflate), but long enough that 1032:1 could make it.
      const data = Buffer.alloc(4_200_000, 0x55);
      data[0] = 0x78;
      data[1] = 0x01;
      const entry = Buffer.concat([head.subarray(0, hl), data]);
      const body = Buffer.concat([encodePackHeader(1), entry]);
      const sum = crypto.createHash('sha1').update(body).digest();
      fs.writeFileSync(path.join(dir, 'p.pack'), Buffer.concat([body, sum]));
      const idx = encodeIdxV2(
        {
          count: 1,
          ids: Buffer.alloc(20, 0x11),
          offsets: new Uint32Array([12]),
          crcs: new Uint32Array([crc32(entry)]),
        },
        sum,
        SHA1,
      );
      fs.writeFileSync(path.join(dir, 'p.idx'), idx);
      const pack = Pack.open(path.join(dir, 'p.pack'), SHA1);
      try {
        const problems: string[] = [];
        const scan = scanPack(pack, { checkCrc: true, onProblem: (p) => problems.push(p.message) });
        expect(problems).toEqual([]);
        expect(scan.size).toBeInstanceOf(Float64Array);
        expect(scan.size[0]).toBe(declared);
      } finally {
        pack.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('stack arena', () => {
  it('hands out the top, releases back to a mark, and spills what does not fit', () => {
    const a = new StackArena(100);
    const m0 = a.top;
    const x = a.alloc(40);
    const m1 = a.top;
    const y = a.alloc(50);
    expect(a.top).toBe(90);
    expect(x.buffer).toBe(y.buffer);
    expect(y.byteOffset - x.byteOffset).toBe(40);
    const spill = a.alloc(20); // 90 + 20 > 100: a buffer of its own, the top does not move
    expect(spill.buffer).not.toBe(x.buffer);
    expect(spill.length).toBe(20);
    expect(a.top).toBe(90);
    a.release(m1);
    const z = a.alloc(10);
    expect(z.byteOffset).toBe(y.byteOffset);
    a.release(m0);
    expect(a.top).toBe(0);
    a.release(50); // releasing above the top changes nothing
    expect(a.top).toBe(0);
  });
});

describe('delta base cache: one LRU list capped in bytes', () => {
  it('evicts the least recently used entries first, whatever their type', () => {
    const c = new DeltaBaseCache(100);
    c.set(1, { type: 3, data: Buffer.alloc(40) });
    c.set(2, { type: 2, data: Buffer.alloc(40) });
    c.get(1); // 1 is now young
    c.set(3, { type: 1, data: Buffer.alloc(40) }); // over 100: evicts 2
    expect(c.get(2)).toBeUndefined();
    expect(c.get(1)).toBeDefined();
    expect(c.get(3)).toBeDefined();
    expect(c.bytes).toBe(80);
    c.set(4, { type: 3, data: Buffer.alloc(101) }); // larger than the cap: not cached
    expect(c.get(4)).toBeUndefined();
    expect(c.bytes).toBeLessThanOrEqual(100);
  });
});

describe('object ids', () => {
  it('an object header written in front of the data hashes like objectHeader + data', () => {
    for (const [type, data] of [
      ['blob', Buffer.alloc(0)],
      ['commit', Buffer.from('tree x\n')],
      ['tree', crypto.randomBytes(123457)],
    ] as const) {
      const block = Buffer.alloc(OBJECT_HEADER_ROOM + data.length, 0xaa);
      data.copy(block, OBJECT_HEADER_ROOM);
      const from = putObjectHeader(block, OBJECT_HEADER_ROOM, type, data.length);
      expect(block.subarray(from, OBJECT_HEADER_ROOM)).toEqual(objectHeader(type, data.length));
      for (const algo of [SHA1, SHA256])
        expect(algo.digest(block.subarray(from))).toEqual(hashObjectBuffer(algo, type, data));
    }
    const big = Buffer.alloc(OBJECT_HEADER_ROOM);
    const from = putObjectHeader(big, OBJECT_HEADER_ROOM, 'commit', 2 ** 40 + 3);
    expect(big.subarray(from).toString('latin1')).toBe(`commit ${2 ** 40 + 3}\0`);
  });

  it('the open-addressing table finds every id and only those', () => {
    const t = new OidTable(20, 4);
    const ids = Array.from({ length: 5000 }, (_, i) =>
      hashObjectBuffer(SHA1, 'blob', Buffer.from(String(i))),
    );
    ids.forEach((id, i) => expect(t.insert(id, 0)).toBe(i));
    expect(t.insert(ids[7]!, 0)).toBe(~7);
    ids.forEach((id, i) => expect(t.lookup(id, 0)).toBe(i));
    expect(t.lookup(hashObjectBuffer(SHA1, 'blob', Buffer.from('x')), 0)).toBe(-1);
  });

  it('sortIds sorts like a byte-wise comparison', () => {
    const n = 3000;
    const ids = Buffer.alloc(n * 20);
    for (let i = 0; i < n; i++)
      hashObjectBuffer(SHA1, 'tree', Buffer.from([i & 0xff, i >> 8])).copy(ids, i * 20);
    ids.fill(0xab, 0, 2); // a crowded bucket
    ids.fill(0xab, 20, 22);
    const perm = sortIds(ids, n, 20);
    const hexes = [...perm].map((i) => toHex(ids, i * 20, 20));
    expect(hexes).toEqual([...hexes].sort());
    expect(new Set(perm).size).toBe(n);
  });
});

describe('zlib level 0 written without zlib', () => {
  it('is byte-identical to zlib at level 0 for small inputs and inflates back for large ones', () => {
    for (const n of [0, 1, 100, 65535, 65536, 300000]) {
      const d = Buffer.alloc(n);
      for (let i = 0; i < n; i++) d[i] = (i * 31) & 255;
      const s = storedZlib(d);
      expect(s.length).toBe(storedZlibLength(n));
      expect(inflateSync(s).equals(d)).toBe(true);
      if (n < 65535) expect(s.equals(deflateSync(d, { level: 0 }))).toBe(true);
      expect(storedZlibEquals(s, d)).toBe(true);
      if (n > 0) {
        const bad = Buffer.from(s);
        bad[bad.length - 5]! ^= 1;
        expect(storedZlibEquals(bad, d)).toBe(false);
      }
    }
  });
});

describe('zlib through one reused engine (codec/zlib.ts)', () => {
  it("inflates what zlib wrote; Adler-32 is zlib's trailer; a stream one bit off is refused", () => {
    const inputs = [
      Buffer.alloc(0),
      Buffer.from('tree 40\0'.repeat(300)),
      crypto.randomBytes(70000),
    ];
    for (let i = 0; i < 40; i++) {
      const r = crypto.randomBytes(1 + ((i * 997) % 9000));
      inputs.push(Buffer.concat([r, r.subarray(0, r.length >> 1)]));
    }
    for (const d of inputs) {
      const z = deflateSync(d, { level: 6 });
      expect(inflateExact(z, d.length, 'f', 0).equals(d)).toBe(true);
      expect(inflatesTo(z, d)).toBe(true);
      expect(adler32(d)).toBe(z.readUInt32BE(z.length - 4));
      const bad = Buffer.from(z);
      bad[bad.length - 1]! ^= 1;
      expect(inflatesTo(bad, d)).toBe(false);
      expect(() => inflateExact(bad, d.length, 'f', 7)).toThrow(/incorrect data check/);
      expect(() => inflateExact(z, d.length + 1, 'f', 7)).toThrow(
        `inflated size ${d.length} does not match declared size ${d.length + 1}`,
      );
    }
  });
});

describe('config and levels', () => {
  it('parses git config -z --list output', () => {
    const m = parseConfigList(
      Buffer.from('core.bare\nfalse\0pack.graphcompression\n0\0a.b.c\n1\0a.b.c\n2\0flag\0'),
    );
    expect(m.get('a.b.c')).toEqual(['1', '2']);
    expect(m.get('flag')).toEqual([null]);
    expect(parseConfigInt('1k')).toBe(1024);
    expect(parseConfigInt('2m')).toBe(2 * 1024 * 1024);
    expect(parseConfigInt('x')).toBe('invalid unit');
  });

  const cfg = (text: string) => new GitConfig(parseConfigList(Buffer.from(text)));
  it.each([
    ['nothing: every type kept as it is', {}, '', ['keep', 'keep', 'keep', 'keep']],
    ['core.compression', {}, 'core.compression\n3\0', [3, 3, 3, 3]],
    ['pack.compression beats core', {}, 'core.compression\n3\0pack.compression\n4\0', [4, 4, 4, 4]],
    ['graph key', {}, 'pack.compression\n4\0pack.graphcompression\n0\0', [0, 0, 4, 4]],
    [
      'type key beats graph key',
      {},
      'pack.graphcompression\n0\0pack.treecompression\n6\0',
      [0, 6, 'keep', 'keep'],
    ],
    [
      '--compression flag beats every key',
      { compression: 2 },
      'pack.graphcompression\n0\0pack.blobcompression\n9\0',
      [2, 2, 2, 2],
    ],
    ['graph flag beats --compression', { graphCompression: 0, compression: 9 }, '', [0, 0, 9, 9]],
    [
      'type flag beats graph flag',
      { graphCompression: 0, treeCompression: 5 },
      '',
      [0, 5, 'keep', 'keep'],
    ],
    [
      'keep as a flag',
      { graphCompression: 0, blobCompression: 'keep' },
      'pack.compression\n9\0',
      [0, 0, 'keep', 9],
    ],
  ] as const)('%s', (_n, flags, text, want) => {
    const l = resolveLevels(flags, cfg(text));
    expect([l[1], l[2], l[3], l[4]]).toEqual(want);
  });

  it('an entry has a level only when its stream is what that level writes (level 1 is not level 0)', () => {
    // Real zlib streams (node's zlib), classified as the scan classifies them.
    const text = Buffer.from(
      'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A U Thor <a@example.com> 1112911993 -0700\n\n'.repeat(
        3,
      ),
    );
    const noise = Buffer.concat(
      Array.from({ length: 10 }, (_, i) => crypto.createHash('sha256').update(String(i)).digest()),
    );
    const seen = (z: Buffer, data: Buffer) => ({
      flevel: z[1]! >> 6,
      block: firstBlockCode(z[1]! >> 6, z[2], z.length, data.length),
      dataLen: z.length,
      size: data.length,
    });
    const zlib = (level: number, data = text): Buffer =>
      level === FIXED_HUFFMAN
        ? deflateSync(data, { level: 6, strategy: 1 + 3 })
        : deflateSync(data, { level });
    const has = (target: number, level: number, data = text) =>
      hasLevel(target, seen(zlib(level, data), data));
    expect(seen(zlib(0), text).block).toBe(1); // stored
    expect(seen(zlib(FIXED_HUFFMAN), text)).toMatchObject({ flevel: 0, block: 3 }); // zlib writes FLEVEL 0 for Z_FIXED
    expect(has(0, 0)).toBe(true);
    expect(has(0, 1)).toBe(false);
    expect(has(0, 6, noise)).toBe(false); // level 6 that stored a block: FLEVEL 2
    expect(has(-1, 6)).toBe(true);
    expect(has(6, 6, noise)).toBe(true);
    expect(has(9, 6)).toBe(false);
    // The bug of issue 14: a stored stream is never taken for level 1's output, which shares its FLEVEL.
    expect(has(1, 0)).toBe(false);
    expect(has(1, 0, noise)).toBe(false);
    expect(has(1, 1)).toBe(true);
    expect(has(FIXED_HUFFMAN, FIXED_HUFFMAN)).toBe(true);
    expect(has(FIXED_HUFFMAN, 6)).toBe(false);
    expect(has(FIXED_HUFFMAN, 0)).toBe(false);
    // A FLEVEL 0 stream whose first block is stored but which compresses the rest is not level 0.
    const mixed = Buffer.concat([crypto.randomBytes(70000), Buffer.alloc(70000, 97)]);
    const one = zlib(1, mixed);
    expect((one[2]! >> 1) & 3).toBe(0);
    expect(has(0, 1, mixed)).toBe(false);
    expect(inflateSync(deflateAt(text, FIXED_HUFFMAN)).equals(text)).toBe(true);
  });

  it('a re-encoded stream keeps the old one only when zlib gives the same encoding', () => {
    const text = Buffer.from(
      'x'.repeat(3000) + 'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n'.repeat(40),
    );
    const noise = crypto.randomBytes(5000);
    const z = (level: number, data: Buffer) => deflateSync(data, { level });
    // Deflate at 1 of incompressible data stores it: a level-0 entry already is what level 1 gives.
    expect(sameEncoding(z(0, noise), z(1, noise), noise.length)).toBe(true);
    expect(sameEncoding(z(0, text), z(1, text), text.length)).toBe(false);
    expect(sameEncoding(z(6, text), z(6, text), text.length)).toBe(true);
    expect(sameEncoding(z(9, text), z(6, text), text.length)).toBe(false);
    // Stored by level 6 (FLEVEL 2) is not level 0's stored stream.
    expect(sameEncoding(z(6, noise), z(0, noise), noise.length)).toBe(false);
    // Level 1's stored start followed by compressed blocks is not a stored stream.
    const mixed = Buffer.concat([crypto.randomBytes(70000), Buffer.alloc(70000, 97)]);
    expect(sameEncoding(z(1, mixed), z(0, mixed), mixed.length)).toBe(false);
  });
});
