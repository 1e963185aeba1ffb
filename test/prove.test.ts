import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SHA1, SHA256, type HashAlgo } from '../src/hash/algo.js';
import { emitIdxV2, parseIdx } from '../src/format/idx.js';
import { encodeRev, packOrderFromOffsets } from '../src/format/rev.js';
import { proveWrittenStreamed } from '../src/repack/prove.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { listPacks, verifyPack } from './helpers/git.js';
import { Pack } from '../src/store/pack.js';
import { releaseNow } from '../src/release.js';
import { COPY_CRC, REENCODE, runBatch } from '../src/repack/batch.js';
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import { storedZlib } from '../src/codec/zlib.js';

/**
 * The proof of a pack the writing thread read back holds the `.idx` and `.rev` on disk against
 * what was written, a chunk at a time. Here the "written" pack is one git wrote; its offsets and
 * CRC32s (from git's own index) stand in for what the writing thread read back.
 */
function setup(fixture: 'basic' | 'sha256', off32Limit?: number) {
  const repo = useFixtureCopy(fixture);
  const algo: HashAlgo = fixture === 'sha256' ? SHA256 : SHA1;
  const packPath = listPacks(repo)[0]!;
  const gitIdx = parseIdx(fs.readFileSync(packPath.replace(/\.pack$/, '.idx')), algo, 'git.idx');
  const n = gitIdx.count;
  const offsets = Array.from(gitIdx.offsets);
  const crcs = Array.from({ length: n }, (_, r) => gitIdx.crc(r));
  const dir = path.dirname(packPath);
  const idxPath = path.join(dir, 'tmp_test.idx');
  const revPath = path.join(dir, 'tmp_test.rev');
  const parts: Buffer[] = [];
  emitIdxV2(
    { count: n, ids: gitIdx.ids, offsets: gitIdx.offsets, crcs: Uint32Array.from(crcs) },
    gitIdx.packChecksum,
    algo,
    (b) => parts.push(Buffer.from(b)),
    off32Limit,
  );
  fs.writeFileSync(idxPath, Buffer.concat(parts));
  fs.writeFileSync(
    revPath,
    encodeRev(packOrderFromOffsets(gitIdx.offsets), gitIdx.packChecksum, algo),
  );
  const w = { packPath, idxPath, revPath, checksum: gitIdx.packChecksum, count: n };
  const readBack = { offsetAt: (r: number) => offsets[r]!, crcAt: (r: number) => crcs[r]! };
  const olds = [{ ids: Buffer.from(gitIdx.ids), what: 'the old pack' }];
  const prove = (o = olds, retained: (id: Uint8Array, pos: number) => boolean = () => false) =>
    proveWrittenStreamed(w, algo, readBack, o, retained);
  /** Changes the file with `f`, runs the proof, puts the file back. */
  const damaged =
    (file: string, f: (b: Buffer) => void): (() => void) =>
    () => {
      const orig = fs.readFileSync(file);
      const b = Buffer.from(orig);
      f(b);
      fs.chmodSync(file, 0o644);
      fs.writeFileSync(file, b);
      try {
        prove();
      } finally {
        fs.writeFileSync(file, orig);
      }
    };
  return { algo, n, w, offsets, crcs, olds, prove, damaged, gitIdx };
}

describe('proveWrittenStreamed: the new .idx and .rev on disk, read a chunk at a time', () => {
  it("passes git's own pack with an index byte for byte like git's (SHA-1 and SHA-256)", () => {
    for (const fixture of ['basic', 'sha256'] as const) {
      const s = setup(fixture);
      expect(
        fs
          .readFileSync(s.w.idxPath)
          .equals(fs.readFileSync(s.w.packPath.replace(/\.pack$/, '.idx'))),
      ).toBe(true);
      expect(() => s.prove()).not.toThrow();
    }
  });

  it('passes with every offset in the 64-bit table, and catches a wrong 64-bit offset', () => {
    const s = setup('basic', 0);
    expect(() => s.prove()).not.toThrow();
    const size = fs.statSync(s.w.idxPath).size;
    const len = s.algo.len;
    // The last 64-bit entry is just before the trailer; its low word gets one more.
    expect(
      s.damaged(s.w.idxPath, (b) =>
        b.writeUInt32BE(b.readUInt32BE(size - 2 * len - 4) + 1, size - 2 * len - 4),
      ),
    ).toThrow(/64-bit offset \d+ is not the one written/);
  });

  it('catches a CRC32, an offset, an id out of order, a bad fanout, a trailer or a truncation', () => {
    const s = setup('basic');
    const len = s.algo.len;
    const n = s.n;
    const idsAt = 8 + 1024;
    const crcAt = idsAt + n * len;
    const offAt = crcAt + n * 4;
    expect(s.damaged(s.w.idxPath, (b) => (b[crcAt + 4 * 3]! ^= 1))).toThrow(
      new RegExp(`tmp_test.idx: a CRC32 that is not the one read back at offset ${crcAt + 12}`),
    );
    expect(
      s.damaged(s.w.idxPath, (b) => b.writeUInt32BE(b.readUInt32BE(offAt + 8) + 1, offAt + 8)),
    ).toThrow(/offset \d+, the entry was written at \d+ at offset/);
    // Two neighbouring ids swapped: out of order (the merge would also miss nothing).
    expect(
      s.damaged(s.w.idxPath, (b) => {
        const a = Buffer.from(b.subarray(idsAt, idsAt + len));
        b.copy(b, idsAt, idsAt + len, idsAt + 2 * len);
        a.copy(b, idsAt + len);
      }),
    ).toThrow(/object ids out of order|outside its fanout bucket/);
    expect(s.damaged(s.w.idxPath, (b) => b.writeUInt32BE(0, 8 + 255 * 4))).toThrow(
      /non-monotonic fanout|fanout counts 0 objects/,
    );
    expect(s.damaged(s.w.idxPath, (b) => (b[b.length - 1]! ^= 1))).toThrow(
      /index checksum does not match its contents/,
    );
    expect(s.damaged(s.w.idxPath, (b) => (b[b.length - len - 1]! ^= 1))).toThrow(
      /pack checksum is not the new pack/,
    );
    expect(() => {
      const orig = fs.readFileSync(s.w.idxPath);
      fs.writeFileSync(s.w.idxPath, orig.subarray(0, orig.length - 7));
      try {
        s.prove();
      } finally {
        fs.writeFileSync(s.w.idxPath, orig);
      }
    }).toThrow(/does not fit|ends at offset/);
    expect(() => s.prove()).not.toThrow(); // every file put back
  });

  it('catches offsets the writing thread did not read back, and a first entry not at 12', () => {
    const s = setup('basic');
    const moved = {
      offsetAt: (r: number) => s.offsets[r]! + (r === 5 ? 1 : 0),
      crcAt: (r: number) => s.crcs[r]!,
    };
    expect(() => proveWrittenStreamed(s.w, s.algo, moved, s.olds, () => false)).toThrow(
      /offset \d+, the entry was written at \d+/,
    );
    const first = s.offsets.indexOf(12);
    // Every offset shifted by the same amount, index and read-back agreeing: still not a pack.
    const parts: Buffer[] = [];
    const shifted = Float64Array.from(s.offsets, (o) => o + 1);
    emitIdxV2(
      { count: s.n, ids: s.gitIdx.ids, offsets: shifted, crcs: Uint32Array.from(s.crcs) },
      s.w.checksum,
      s.algo,
      (b) => parts.push(Buffer.from(b)),
    );
    fs.writeFileSync(s.w.idxPath, Buffer.concat(parts));
    const allMoved = { offsetAt: (r: number) => shifted[r]!, crcAt: (r: number) => s.crcs[r]! };
    expect(first).toBeGreaterThanOrEqual(0);
    expect(() =>
      proveWrittenStreamed({ ...s.w, revPath: undefined }, s.algo, allMoved, s.olds, () => false),
    ).toThrow(/first entry at offset 13, not 12/);
  });

  it('catches a pack header or trailer that is not the one written', () => {
    const s = setup('basic');
    expect(s.damaged(s.w.packPath, (b) => b.writeUInt32BE(b.readUInt32BE(8) + 1, 8))).toThrow(
      /header does not read back as written/,
    );
    expect(s.damaged(s.w.packPath, (b) => (b[b.length - 1]! ^= 1))).toThrow(
      /trailer does not read back as written at offset/,
    );
  });

  it('catches a .rev out of pack order, or with a bad checksum', () => {
    const s = setup('basic');
    expect(
      s.damaged(s.w.revPath, (b) => {
        const a = b.readUInt32BE(12);
        b.writeUInt32BE(b.readUInt32BE(16), 12);
        b.writeUInt32BE(a, 16);
      }),
    ).toThrow(/tmp_test.rev: entries not in pack order at offset 16/);
    expect(s.damaged(s.w.revPath, (b) => b.writeUInt32BE(s.n, 12))).toThrow(
      /entries not in pack order at offset 12/,
    );
    expect(s.damaged(s.w.revPath, (b) => (b[b.length - 1]! ^= 1))).toThrow(
      /tmp_test.rev: checksum does not match its contents/,
    );
  });

  it('an old id missing from the new index fails unless it is retained elsewhere', () => {
    const s = setup('basic');
    const len = s.algo.len;
    // An old list with one more id than the new index: one between two real ids, one past the end.
    const ids = s.olds[0]!.ids;
    let tried = 0;
    for (const at of [3, s.n]) {
      // The id just above the one before `at` (strictly between it and the next, if they differ by more).
      const bump = Buffer.from(ids.subarray((at - 1) * len, at * len));
      for (let k = len - 1; k >= 0; k--) {
        if (bump[k]! < 255) {
          bump[k]!++;
          break;
        }
        bump[k] = 0;
      }
      if (at < s.n && Buffer.compare(bump, ids.subarray(at * len, (at + 1) * len)) >= 0) continue;
      const old = Buffer.concat([ids.subarray(0, at * len), bump, ids.subarray(at * len)]);
      const olds = [{ ids: old, what: 'pack-old.pack' }];
      expect(() => s.prove(olds)).toThrow(
        new RegExp(`object ${bump.toString('hex')} of pack-old.pack is missing from the new pack`),
      );
      expect(() =>
        s.prove(
          olds,
          (id, pos) => Buffer.compare(Buffer.from(id.subarray(pos, pos + len)), bump) === 0,
        ),
      ).not.toThrow();
      tried++;
    }
    expect(tried).toBeGreaterThanOrEqual(1);
    // Two old lists (two packs, or a pack and the loose objects), each a part of the new index.
    const half = Math.floor(s.n / 2);
    const evens = Buffer.concat(
      Array.from({ length: s.n }, (_, i) => i)
        .filter((i) => i % 2 === 0)
        .map((i) => ids.subarray(i * len, (i + 1) * len)),
    );
    const rest = Buffer.concat([ids.subarray(0, half * len)]);
    expect(() =>
      s.prove([
        { ids: evens, what: 'a' },
        { ids: rest, what: 'b' },
      ]),
    ).not.toThrow();
  });
});

describe('Pack.releaseIds: the ids let go while writing, read again when needed', () => {
  it('keeps CRC32s and offsets, reads the same ids back, and refuses ids that changed', () => {
    const repo = useFixtureCopy('basic');
    const pack = Pack.open(listPacks(repo)[0]!, SHA1);
    onTestFinished(() => pack.close());
    const idxPath = pack.idxPath;
    const idx = pack.idx;
    const ids = Buffer.from(idx.ids);
    const crcs = Array.from({ length: idx.count }, (_, i) => idx.crc(i));
    pack.releaseIds();
    expect(() => idx.raw).toThrow(/index file no longer held/);
    expect(Array.from({ length: idx.count }, (_, i) => idx.crc(i))).toEqual(crcs);
    expect(idx.ids.equals(ids)).toBe(true);
    expect(idx.find(ids, 5 * 20)).toBe(5);
    // The CRC32 table too: read again, the same values.
    idx.releaseCrcs();
    expect(Array.from({ length: idx.count }, (_, i) => idx.crc(i))).toEqual(crcs);
    // Released again, and the file's ids changed meanwhile: an error, not other ids.
    pack.releaseIds();
    const b = fs.readFileSync(idxPath);
    b[8 + 1024 + 3 * 20]! ^= 1;
    fs.chmodSync(idxPath, 0o644);
    fs.writeFileSync(idxPath, b);
    expect(() => idx.ids).toThrow(
      new RegExp(
        `${idxPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*object ids changed since the index was first read`,
      ),
    );
    // And a CRC32 changed in the file while the table was let go.
    idx.releaseCrcs();
    const crcAt = 8 + 1024 + idx.count * 20;
    b[8 + 1024 + 3 * 20]! ^= 1;
    b[crcAt + 8]! ^= 1;
    fs.writeFileSync(idxPath, b);
    expect(() => idx.crc(2)).toThrow(/CRC32s changed since the index was first read/);
  });
});

describe('Pack.entryLengths: what the rewrite keeps instead of the pack order', () => {
  it('gives each entry its size in the pack as git verify-pack counts it, and rebuilds the order once released', () => {
    for (const fixture of ['basic', 'sha256'] as const) {
      const repo = useFixtureCopy(fixture);
      const packPath = listPacks(repo)[0]!;
      const pack = Pack.open(packPath, fixture === 'sha256' ? SHA256 : SHA1);
      try {
        const lens = pack.entryLengths();
        pack.releaseOrder();
        const byOffset = new Map(
          verifyPack(repo, packPath).entries.map((e) => [e.offset, e.sizeInPack]),
        );
        expect(byOffset.size).toBe(pack.count);
        for (let j = 0; j < pack.count; j++)
          expect(lens[j]).toBe(byOffset.get(pack.idx.offsets[j]!));
        // Rebuilt when asked for again.
        expect(pack.order.length).toBe(pack.count);
      } finally {
        pack.close();
      }
    }
  });
});

describe('releaseNow', () => {
  it('frees a large owned buffer at once (the array reads as empty), and leaves pooled, shared or small ones alone', () => {
    const big = new Uint32Array(1 << 18);
    big.fill(7);
    const small = new Uint32Array(100);
    const pooled = Buffer.from('pooled'); // a slice of Node's Buffer pool
    const shared = new Uint32Array(new SharedArrayBuffer(1 << 20));
    releaseNow(big, small, pooled, shared, undefined);
    expect(big.length).toBe(0);
    expect(big.buffer.byteLength).toBe(0);
    expect(small.length).toBe(100);
    expect(pooled.toString()).toBe('pooled');
    expect(shared.length).toBe(1 << 18);
  });
});

describe('runBatch: sizes from the entry headers it reads', () => {
  const job = (bytes: number[], headerLen: number, mode: number) => ({
    buf: Uint8Array.from(bytes).buffer,
    n: 1,
    rawStart: Uint32Array.of(0),
    rawLen: Uint32Array.of(bytes.length),
    headerLen: Uint8Array.of(headerLen),
    hashLen: 20,
    mode: Uint8Array.of(mode),
    level: Int8Array.of(0),
    crc: Uint32Array.of(crc32(Buffer.from(bytes))),
    files: ['x.pack'],
    fds: [-1],
    spans: new Float64Array(0),
    fileIndex: Uint16Array.of(0),
    offset: Float64Array.of(1234),
  });
  it("hands back each entry's declared size, and refuses a header whose size runs past the length the scan found", () => {
    // A blob of 300 bytes: type 3, size 300 = 0b1_0010_1100 -> 0xbc 0x12; then some data.
    const ok = runBatch(job([0xbc, 0x12, 1, 2, 3], 2, COPY_CRC));
    expect(ok.error).toBeUndefined();
    expect(Array.from(ok.size)).toEqual([300]);
    const bad = runBatch(job([0xbc, 0x92, 1, 2, 3], 2, COPY_CRC));
    expect(bad.error?.message).toBe('entry header changed since the pack was scanned');
    expect(bad.error?.offset).toBe(1234);
    expect(bad.error?.file).toBe('x.pack');
  });

  it("auto's length limit: a re-encode longer than maxLen is stored instead, a shorter one kept", () => {
    // A commit of 300 bytes that level 6 compresses, packed at level 9.
    const plain = Buffer.from(
      'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\n'
        .repeat(4)
        .slice(0, 300),
    );
    const src = Buffer.concat([Buffer.from([0x9c, 0x12]), deflateSync(plain, { level: 9 })]);
    const six = deflateSync(plain, { level: 6 });
    const run = (maxLen: number) => {
      const r = runBatch({
        ...job([...src], 2, REENCODE),
        level: Int8Array.of(6),
        maxLen: Float64Array.of(maxLen),
      });
      expect(r.error).toBeUndefined();
      return Buffer.from(r.out).subarray(r.outStart[0]!, r.outStart[0]! + r.outLen[0]!);
    };
    expect(run(six.length).equals(six)).toBe(true);
    expect(run(Infinity).equals(six)).toBe(true);
    const stored = run(six.length - 1);
    expect(stored.equals(storedZlib(plain))).toBe(true);
    expect(inflateSync(stored).equals(plain)).toBe(true);
  });
});
