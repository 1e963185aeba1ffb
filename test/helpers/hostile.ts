/**
 * The hostile corpus: damaged packs, indexes and reverse indexes made by script from the real
 * fixtures (truncations, flipped bytes in every region, wrong counts and offsets), and forged
 * packs whose bytes are all well-formed but whose meaning is not (declared sizes far too large,
 * delta copies out of range, chains deeper than 4095, REF_DELTA cycles, a missing base…).
 * Nothing here is a committed binary: every variant is computed from a fixture and a recipe.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import type { FixtureName } from '../fixtures/index.js';
import { fixturePath, FIXTURES } from '../fixtures/index.js';
import { listPacks, verifyPack } from './git.js';
import {
  OBJ,
  copyOp,
  delta,
  entryHeader,
  fakeId,
  forge,
  hashLen,
  insertOp,
  objectId,
  resum,
  type ForgeEntry,
  type HashName,
} from './forge.js';

export interface Variant {
  /** Unique, readable: `<fixture> <region>: <what>`. */
  name: string;
  region: string;
  fixture: FixtureName;
  hash: HashName;
  /** Base name (`pack-<hash>`) of the fixture pack these files replace; undefined: a new pack is added. */
  replaces?: string;
  /** Name of an added pack. */
  adds?: string;
  pack: Buffer;
  idx: Buffer;
  /** A replacement `.rev` (undefined: the fixture's own stays, if any). */
  rev?: Buffer;
  /** A well-formed input that must be accepted, not a damaged one. */
  valid?: boolean;
}

interface Layout {
  offset: number;
  type: number;
  /** Bytes of the type/size header. */
  sizeLen: number;
  /** Bytes of the OFS distance or REF id after it. */
  baseLen: number;
  /** Where the zlib stream starts and the entry ends. */
  zStart: number;
  end: number;
}

/** Entries of a pack in pack order (offsets from git verify-pack, the rest parsed here). */
function layout(repo: string, packPath: string, pack: Buffer, len: number): Layout[] {
  const v = verifyPack(repo, packPath);
  const offs = v.entries.map((e) => e.offset).sort((a, b) => a - b);
  return offs.map((offset, i) => {
    let p = offset;
    let c = pack[p++]!;
    const type = (c >> 4) & 7;
    while (c & 0x80) c = pack[p++]!;
    const sizeLen = p - offset;
    if (type === OBJ.ofs) {
      do c = pack[p++]!;
      while (c & 0x80);
    } else if (type === OBJ.ref) p += len;
    return {
      offset,
      type,
      sizeLen,
      baseLen: p - offset - sizeLen,
      zStart: p,
      end: offs[i + 1] ?? pack.length - len,
    };
  });
}

function flip(buf: Buffer, at: number, mask = 0xff): Buffer {
  const out = Buffer.from(buf);
  out[at] = out[at]! ^ mask;
  return out;
}

function put32(buf: Buffer, at: number, v: number): Buffer {
  const out = Buffer.from(buf);
  out.writeUInt32BE(v >>> 0, at);
  return out;
}

/** Byte-level damage to one fixture's only (or first) pack, its idx and its rev. */
function byteVariants(fixture: FixtureName): Variant[] {
  const repo = fixturePath(fixture);
  const hash: HashName = FIXTURES[fixture].objectFormat === 'sha256' ? 'sha256' : 'sha1';
  const len = hashLen(hash);
  const packPath = listPacks(repo)[0]!;
  const base = path.basename(packPath, '.pack');
  const pack = fs.readFileSync(packPath);
  const idx = fs.readFileSync(packPath.replace(/\.pack$/, '.idx'));
  const revPath = packPath.replace(/\.pack$/, '.rev');
  const rev = fs.existsSync(revPath) ? fs.readFileSync(revPath) : undefined;
  const ents = layout(repo, packPath, pack, len);
  const n = ents.length;
  const out: Variant[] = [];
  const add = (
    region: string,
    what: string,
    files: { pack?: Buffer; idx?: Buffer; rev?: Buffer },
  ) =>
    out.push({
      name: `${fixture} ${region}: ${what}`,
      region,
      fixture,
      hash,
      replaces: base,
      pack: files.pack ?? pack,
      idx: files.idx ?? idx,
      ...(files.rev ? { rev: files.rev } : {}),
    });

  // Pack header: every byte, and the object count.
  for (let i = 0; i < 12; i++) add('pack header', `byte ${i} flipped`, { pack: flip(pack, i) });
  add('pack header', 'object count 0', { pack: put32(pack, 8, 0) });
  add('pack header', `object count ${n + 1}`, { pack: put32(pack, 8, n + 1) });
  add('pack header', 'object count 2^32-1', { pack: put32(pack, 8, 0xffffffff) });

  // Entries: the first, a tree, the largest whole object, a delta and the last.
  const pick = new Map<string, Layout>();
  pick.set('first entry', ents[0]!);
  const tree = ents.find((e) => e.type === OBJ.tree);
  if (tree) pick.set('a tree', tree);
  const whole = ents
    .filter((e) => e.type >= 1 && e.type <= 4)
    .sort((a, b) => b.end - b.offset - (a.end - a.offset))[0];
  if (whole) pick.set('the largest whole entry', whole);
  const ofs = ents.find((e) => e.type === OBJ.ofs);
  if (ofs) pick.set('an OFS_DELTA', ofs);
  const ref = ents.find((e) => e.type === OBJ.ref);
  if (ref) pick.set('a REF_DELTA', ref);
  pick.set('last entry', ents[n - 1]!);
  for (const [label, e] of pick) {
    const at = `${label} at ${e.offset}`;
    add('entry header', `${at}: type bits flipped`, { pack: flip(pack, e.offset, 0x70) });
    add('entry header', `${at}: size bits flipped`, { pack: flip(pack, e.offset, 0x0f) });
    add('entry header', `${at}: continuation bit set on the last size byte`, {
      pack: flip(pack, e.offset + e.sizeLen - 1, 0x80),
    });
    if (e.type === OBJ.ofs) {
      add('entry header', `${at}: OFS distance flipped`, {
        pack: flip(pack, e.offset + e.sizeLen + e.baseLen - 1, 0x7f),
      });
      add('entry header', `${at}: OFS distance continued`, {
        pack: flip(pack, e.offset + e.sizeLen + e.baseLen - 1, 0x80),
      });
    }
    if (e.type === OBJ.ref)
      add('entry header', `${at}: REF base id flipped`, {
        pack: flip(pack, e.offset + e.sizeLen + 3, 0x01),
      });
    add('zlib data', `${at}: zlib header flipped`, { pack: flip(pack, e.zStart) });
    add('zlib data', `${at}: zlib flags flipped`, { pack: flip(pack, e.zStart + 1, 0x20) });
    add('zlib data', `${at}: a middle byte flipped`, {
      pack: flip(pack, (e.zStart + e.end) >> 1, 0x10),
    });
    add('zlib data', `${at}: Adler-32 flipped`, { pack: flip(pack, e.end - 1, 0x01) });
    if (e.type === OBJ.ofs || e.type === OBJ.ref) {
      // The delta itself, re-deflated with one instruction changed and the CRC, trailer and idx
      // made consistent: only the delta's meaning is wrong.
      out.push(...deltaEdits(fixture, hash, base, pack, idx, e, label));
    }
  }
  add('trailer', 'first byte flipped', { pack: flip(pack, pack.length - len) });
  add('trailer', 'last byte flipped', { pack: flip(pack, pack.length - 1) });
  add('trailer', 'garbage appended after the trailer', {
    pack: Buffer.concat([pack, Buffer.from('garbage!!!')]),
  });
  const cuts = new Set([
    0,
    4,
    11,
    12,
    13,
    ents[0]!.zStart + 1,
    ents[n >> 1]!.offset,
    ents[n >> 1]!.zStart + 2,
    pack.length - len - 1,
    pack.length - len,
    pack.length - 1,
  ]);
  for (const c of [...cuts].sort((a, b) => a - b))
    add('truncation', `pack cut to ${c} bytes`, { pack: pack.subarray(0, c) });

  // The idx.
  const v2 = idx.readUInt32BE(0) === 0xff744f63;
  const fan = v2 ? 8 : 0;
  const body = fan + 1024;
  if (v2) {
    add('idx header', 'magic flipped', { idx: flip(idx, 1) });
    add('idx header', 'version 3', { idx: put32(idx, 4, 3) });
  }
  add('idx fanout', 'non-monotonic (entry 10 above entry 11)', {
    idx: put32(idx, fan + 40, idx.readUInt32BE(fan + 44) + 1),
  });
  add('idx fanout', 'non-monotonic, checksum fixed', {
    idx: resum(put32(idx, fan + 40, idx.readUInt32BE(fan + 44) + 1), hash),
  });
  add('idx fanout', `object count ${n + 1}`, { idx: put32(idx, fan + 1020, n + 1) });
  add('idx fanout', `object count ${n - 1}`, { idx: put32(idx, fan + 1020, n - 1) });
  add('idx fanout', 'object count 2^32-1 (must not allocate for it)', {
    idx: put32(idx, fan + 1020, 0xffffffff),
  });
  add('idx fanout', 'every entry 2^31 (must not allocate for it)', {
    idx: Buffer.concat([idx.subarray(0, fan), Buffer.alloc(1024, 0x80), idx.subarray(body)]),
  });
  const rec = v2 ? len : len + 4;
  const idAt = (i: number) => (v2 ? body + i * len : body + i * rec + 4);
  add('idx ids', 'first id flipped', { idx: flip(idx, idAt(0) + len - 1, 0x01) });
  add('idx ids', 'middle id flipped, checksum fixed', {
    idx: resum(flip(idx, idAt(n >> 1) + 5, 0x01), hash),
  });
  {
    const sw = Buffer.from(idx);
    idx.copy(sw, idAt(1), idAt(2), idAt(2) + len);
    idx.copy(sw, idAt(2), idAt(1), idAt(1) + len);
    add('idx ids', 'two ids swapped, checksum fixed', { idx: resum(sw, hash) });
  }
  const offAt = (i: number) => (v2 ? body + n * len + n * 4 + i * 4 : body + i * rec);
  if (v2) {
    const crcAt = body + n * len;
    add('idx crc', 'a CRC32 flipped', { idx: flip(idx, crcAt + 4 * 3 + 1) });
    add('idx crc', 'a CRC32 flipped, checksum fixed', {
      idx: resum(flip(idx, crcAt + 4 * (n >> 1)), hash),
    });
  }
  const o1 = idx.readUInt32BE(offAt(1));
  const big = o1 & 0x80000000 ? 0 : 1; // large-offset: offsets point into the 64-bit table
  if (big) {
    add('idx offsets', 'an offset of 0, checksum fixed', {
      idx: resum(put32(idx, offAt(1), 0), hash),
    });
    add('idx offsets', 'an offset inside its entry, checksum fixed', {
      idx: resum(put32(idx, offAt(1), o1 + 1), hash),
    });
    add('idx offsets', 'an offset past the pack, checksum fixed', {
      idx: resum(put32(idx, offAt(1), pack.length + 100), hash),
    });
    add('idx offsets', 'an offset into the trailer, checksum fixed', {
      idx: resum(put32(idx, offAt(1), pack.length - 5), hash),
    });
    add('idx offsets', 'two entries at one offset, checksum fixed', {
      idx: resum(put32(idx, offAt(1), idx.readUInt32BE(offAt(2))), hash),
    });
  }
  if (v2) {
    add('idx offsets', 'a 64-bit table index out of range, checksum fixed', {
      idx: resum(put32(idx, offAt(1), 0x80000000 | 5000), hash),
    });
    const large = (idx.length - 2 * len - (body + n * (len + 8))) / 8;
    if (large > 0) {
      const t = body + n * (len + 8);
      add('idx 64-bit offsets', 'high word set (offset past 2^53), checksum fixed', {
        idx: resum(put32(idx, t, 0x00ffffff), hash),
      });
      add('idx 64-bit offsets', 'offset past the pack, checksum fixed', {
        idx: resum(put32(idx, t, 1), hash),
      });
      add('idx 64-bit offsets', 'low word flipped', { idx: flip(idx, t + 7, 0x04) });
    }
  }
  add('idx trailer', 'pack checksum flipped', { idx: flip(idx, idx.length - 2 * len) });
  add('idx trailer', 'pack checksum flipped, idx checksum fixed', {
    idx: resum(flip(idx, idx.length - 2 * len + 3), hash),
  });
  add('idx trailer', 'idx checksum flipped', { idx: flip(idx, idx.length - 1) });
  for (const c of [
    0,
    4,
    8,
    500,
    fan + 1024,
    body + 7,
    offAt(n >> 1) + 2,
    idx.length - 2 * len,
    idx.length - 1,
  ]) {
    add('truncation', `idx cut to ${c} bytes`, { idx: idx.subarray(0, c) });
  }
  add('idx', 'the idx of another pack', { idx: otherIdx(hash) });

  if (rev) {
    add('rev', 'signature flipped', { rev: flip(rev, 0) });
    add('rev', 'version 2', { rev: put32(rev, 4, 2) });
    add('rev', 'hash id 9', { rev: put32(rev, 8, 9) });
    add('rev', 'an entry out of range, checksum fixed', {
      rev: resum(put32(rev, 12 + 8, n + 7), hash),
    });
    {
      const sw = Buffer.from(rev);
      rev.copy(sw, 12, 16, 20);
      rev.copy(sw, 16, 12, 16);
      add('rev', 'two entries swapped, checksum fixed', { rev: resum(sw, hash) });
    }
    add('rev', 'checksum flipped', { rev: flip(rev, rev.length - 1) });
    add('rev', 'pack checksum flipped', { rev: flip(rev, rev.length - 2 * len) });
    add('truncation', 'rev cut to 30 bytes', { rev: rev.subarray(0, 30) });
  }
  return out;
}

/** The idx of some other fixture pack of the same hash (it does not belong to this pack). */
function otherIdx(hash: HashName): Buffer {
  if (hash === 'sha256') {
    // No other sha256 fixture pack: a forged one.
    const data = Buffer.from('another pack\n');
    return forge([{ type: OBJ.blob, data }], [objectId(OBJ.blob, data, hash)], hash).idx;
  }
  return fs.readFileSync(listPacks(fixturePath('multi-pack'))[0]!.replace(/\.pack$/, '.idx'));
}

/** Variants that change a delta's instructions inside a consistent pack (re-deflated, CRC, trailer and idx fixed). */
function deltaEdits(
  fixture: FixtureName,
  hash: HashName,
  base: string,
  pack: Buffer,
  idx: Buffer,
  e: Layout,
  label: string,
): Variant[] {
  const len = hashLen(hash);
  const z = pack.subarray(e.zStart, e.end);
  let d: Buffer;
  try {
    d = inflateSync(z);
  } catch {
    return [];
  }
  // Parse the two size varints.
  let p = 0;
  const varint = (): number => {
    let v = 0;
    let m = 1;
    let c: number;
    do {
      c = d[p++]!;
      v += (c & 0x7f) * m;
      m *= 128;
    } while (c & 0x80);
    return v;
  };
  const src = varint();
  const dst = varint();
  const insPos = p;
  const edits: [string, Buffer][] = [
    [
      'copy out of the base',
      Buffer.concat([d.subarray(0, insPos), copyOp(src + 1000, 16), d.subarray(insPos)]),
    ],
    ['result size 2^40 (must not allocate it)', delta(src, 2 ** 40, [d.subarray(insPos)])],
    ['result size 3 GB (must not allocate it)', delta(src, 3_000_000_000, [d.subarray(insPos)])],
    ['result size one byte short', delta(src, Math.max(0, dst - 1), [d.subarray(insPos)])],
    ['base size wrong', delta(src + 1, dst, [d.subarray(insPos)])],
    ['opcode 0', Buffer.concat([d.subarray(0, insPos), Buffer.from([0]), d.subarray(insPos)])],
    ['copy instruction cut short', Buffer.concat([d.subarray(0, insPos), Buffer.from([0x91])])],
    ['insert past the result', delta(src, 1, [insertOp(Buffer.from('too long for one byte'))])],
  ];
  const out: Variant[] = [];
  for (const [what, nd] of edits) {
    const nz = deflateSync(nd);
    const hdr = Buffer.concat([
      entryHeader(e.type, nd.length),
      pack.subarray(e.offset + e.sizeLen, e.zStart),
    ]);
    const grow = hdr.length + nz.length - (e.end - e.offset);
    const body = Buffer.concat([
      pack.subarray(0, e.offset),
      hdr,
      nz,
      pack.subarray(e.end, pack.length - len),
    ]);
    const np = resum(Buffer.concat([body, Buffer.alloc(len)]), hash);
    // The idx: this entry's CRC, later entries' offsets, the pack checksum; later OFS distances
    // point back past this entry and so are unchanged only for bases before it, which is fine:
    // a broken distance further on is one more kind of damage, still to be reported.
    const ni = Buffer.from(idx);
    const v2 = ni.readUInt32BE(0) === 0xff744f63;
    if (!v2) continue;
    const n = ni.readUInt32BE(8 + 1020);
    const idsAt = 8 + 1024;
    const crcAt = idsAt + n * len;
    const offAt = crcAt + n * 4;
    for (let i = 0; i < n; i++) {
      const o = ni.readUInt32BE(offAt + i * 4);
      if (o & 0x80000000) return out; // 64-bit offsets: not worth rewriting here
      if (o === e.offset) ni.writeUInt32BE(crc32(Buffer.concat([hdr, nz])) >>> 0, crcAt + i * 4);
      else if (o > e.offset) ni.writeUInt32BE(o + grow, offAt + i * 4);
    }
    np.subarray(np.length - len).copy(ni, ni.length - 2 * len);
    out.push({
      name: `${fixture} delta data: ${label} at ${e.offset}: ${what}`,
      region: 'delta data',
      fixture,
      hash,
      replaces: base,
      pack: np,
      idx: resum(ni, hash),
    });
  }
  return out;
}

/** Forged packs, added next to basic's own: well-formed bytes, hostile meaning. */
function forgedVariants(): Variant[] {
  const hash: HashName = 'sha1';
  const fixture: FixtureName = 'basic';
  const out: Variant[] = [];
  const add = (
    region: string,
    what: string,
    f: { pack: Buffer; idx: Buffer; name: string },
    valid = false,
  ) =>
    out.push({
      name: `forged ${region}: ${what}`,
      region,
      fixture,
      hash,
      adds: f.name,
      pack: f.pack,
      idx: f.idx,
      ...(valid ? { valid } : {}),
    });
  const baseData = Buffer.from('hello, hostile world\n'.repeat(20));
  const baseId = objectId(OBJ.blob, baseData, hash);
  const blob = (data: Buffer, extra: Partial<ForgeEntry> = {}): ForgeEntry => ({
    type: OBJ.blob,
    data,
    ...extra,
  });
  const commitData = Buffer.from(
    'tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nforged\n',
  );
  const commitId = objectId(OBJ.commit, commitData, hash);

  // Declared sizes.
  for (const [what, size] of [
    ['2^40', 2 ** 40],
    ['3 GB', 3_000_000_000],
    ['2^31-1', 0x7fffffff],
    ['one byte short', baseData.length - 1],
    ['one byte long', baseData.length + 1],
    ['0', 0],
  ] as const) {
    add(
      'declared size',
      `a blob declaring ${what} bytes`,
      forge([blob(baseData, { declaredSize: size })], [baseId], hash),
    );
    if (size > 1000)
      add(
        'declared size',
        `a commit declaring ${what} bytes (re-encoded at level 0)`,
        forge([{ type: OBJ.commit, data: commitData, declaredSize: size }], [commitId], hash),
      );
  }
  {
    // A size varint that never ends within the entry / overflows 2^53.
    const e = forge([blob(baseData)], [baseId], hash);
    const p = Buffer.from(e.pack);
    const huge = Buffer.from([0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    const raw = Buffer.concat([
      p.subarray(0, 12),
      huge,
      p.subarray(12 + entryHeader(OBJ.blob, baseData.length).length, p.length - 20),
      Buffer.alloc(20),
    ]);
    const np = resum(raw, hash);
    const ni = Buffer.from(e.idx);
    ni.writeUInt32BE(crc32(np.subarray(12, np.length - 20)) >>> 0, 8 + 1024 + 20);
    np.subarray(np.length - 20).copy(ni, ni.length - 40);
    add('declared size', 'a size varint past 2^53', {
      pack: np,
      idx: resum(ni, hash),
      name: `pack-${np.subarray(np.length - 20).toString('hex')}`,
    });
  }

  // zlib streams.
  const z = deflateSync(baseData);
  add(
    'zlib data',
    'garbage after the end of the stream',
    forge([blob(baseData, { zlib: Buffer.concat([z, Buffer.from('trailing')]) })], [baseId], hash),
  );
  add(
    'zlib data',
    'the stream cut in half',
    forge([blob(baseData, { zlib: z.subarray(0, z.length >> 1) })], [baseId], hash),
  );
  add(
    'zlib data',
    'not zlib at all',
    forge(
      [blob(baseData, { zlib: Buffer.from('this is not a zlib stream at all') })],
      [baseId],
      hash,
    ),
  );
  add(
    'zlib data',
    'a stored stream of other bytes (wrong object)',
    forge([blob(Buffer.from('other bytes'), { declaredSize: 11 })], [baseId], hash),
  );

  // Entry types.
  add('entry header', 'type 0', forge([{ type: 0, data: baseData }], [baseId], hash));
  add('entry header', 'type 5 (reserved)', forge([{ type: 5, data: baseData }], [baseId], hash));

  // Deltas on a base in the same pack.
  const tgt = Buffer.concat([baseData, Buffer.from('one more line\n')]);
  const good = delta(baseData.length, tgt.length, [
    copyOp(0, baseData.length),
    insertOp(Buffer.from('one more line\n')),
  ]);
  const tgtId = objectId(OBJ.blob, tgt, hash);
  add(
    'delta',
    'a sound OFS_DELTA (control: must be accepted)',
    forge([blob(baseData), { type: OBJ.ofs, data: good, ofsBase: 0 }], [baseId, tgtId], hash),
    true,
  );
  for (const [what, d] of [
    [
      'copy past the end of the base',
      delta(baseData.length, tgt.length, [
        copyOp(10, baseData.length),
        insertOp(Buffer.from('one more line\n')),
      ]),
    ],
    ['copy offset 2^32-1', delta(baseData.length, tgt.length, [copyOp(0xffffffff, 16)])],
    ['copy past the end of the result', delta(baseData.length, 4, [copyOp(0, baseData.length)])],
    [
      'insert past the end of the result',
      delta(baseData.length, 2, [insertOp(Buffer.from('four'))]),
    ],
    ['opcode 0', delta(baseData.length, tgt.length, [Buffer.from([0])])],
    [
      'result shorter than declared',
      delta(baseData.length, tgt.length + 5, [
        copyOp(0, baseData.length),
        insertOp(Buffer.from('one more line\n')),
      ]),
    ],
    [
      'base size wrong',
      delta(baseData.length + 3, tgt.length, [
        copyOp(0, baseData.length),
        insertOp(Buffer.from('one more line\n')),
      ]),
    ],
    [
      'result size 2^40 (must not allocate it)',
      delta(baseData.length, 2 ** 40, [copyOp(0, baseData.length)]),
    ],
    [
      'result size 3 GB (must not allocate it)',
      delta(baseData.length, 3_000_000_000, [copyOp(0, baseData.length)]),
    ],
    ['size varint never ends', Buffer.alloc(40, 0xff)],
    ['empty delta', Buffer.alloc(0)],
  ] as const) {
    add(
      'delta',
      `OFS_DELTA: ${what}`,
      forge([blob(baseData), { type: OBJ.ofs, data: d, ofsBase: 0 }], [baseId, tgtId], hash),
    );
  }
  add(
    'delta',
    'a delta whose result is not the object the idx names',
    forge(
      [blob(baseData), { type: OBJ.ofs, data: good, ofsBase: 0 }],
      [baseId, fakeId('wrong result', hash)],
      hash,
    ),
  );

  // Bases.
  add(
    'delta base',
    'OFS_DELTA distance into the middle of the base entry',
    forge([blob(baseData), { type: OBJ.ofs, data: good, ofsRaw: 20 }], [baseId, tgtId], hash),
  );
  add(
    'delta base',
    'OFS_DELTA distance before the start of the pack',
    forge([blob(baseData), { type: OBJ.ofs, data: good, ofsRaw: 5000 }], [baseId, tgtId], hash),
  );
  add(
    'delta base',
    'REF_DELTA on an object nowhere',
    forge([{ type: OBJ.ref, data: good, refBase: fakeId('missing base', hash) }], [tgtId], hash),
  );
  add(
    'delta base',
    'REF_DELTA on itself',
    forge([{ type: OBJ.ref, data: good, refBase: tgtId }], [tgtId], hash),
  );
  {
    const a = fakeId('cycle a', hash);
    const b = fakeId('cycle b', hash);
    const d2 = delta(baseData.length, baseData.length, [copyOp(0, baseData.length)]);
    add(
      'delta base',
      'REF_DELTA cycle of two',
      forge(
        [
          { type: OBJ.ref, data: d2, refBase: b },
          { type: OBJ.ref, data: d2, refBase: a },
        ],
        [a, b],
        hash,
      ),
    );
    const c = fakeId('cycle c', hash);
    add(
      'delta base',
      'REF_DELTA cycle of three',
      forge(
        [
          { type: OBJ.ref, data: d2, refBase: b },
          { type: OBJ.ref, data: d2, refBase: c },
          { type: OBJ.ref, data: d2, refBase: a },
        ],
        [a, b, c],
        hash,
      ),
    );
  }
  add(
    'delta base',
    'a REF_DELTA on a base in the repository (thin, but resolvable)',
    forge([{ type: OBJ.ref, data: good, refBase: baseId }, blob(baseData)], [tgtId, baseId], hash),
    true,
  );

  // A chain of 4100 deltas (git's pack-objects caps depth at 4095).
  {
    const entries: ForgeEntry[] = [blob(Buffer.from('x'))];
    const ids: Buffer[] = [objectId(OBJ.blob, Buffer.from('x'), hash)];
    let cur = Buffer.from('x');
    for (let i = 1; i <= 4100; i++) {
      const next = Buffer.concat([cur, Buffer.from([0x61 + (i % 26)])]);
      entries.push({
        type: OBJ.ofs,
        data: delta(cur.length, next.length, [
          copyOp(0, cur.length),
          insertOp(next.subarray(cur.length)),
        ]),
        ofsBase: i - 1,
      });
      ids.push(objectId(OBJ.blob, next, hash));
      cur = next;
    }
    add('delta chain', 'an OFS_DELTA chain 4100 deep', forge(entries, ids, hash));
  }

  // Counts and the idx.
  add(
    'pack header',
    'an empty pack (zero objects, well-formed: must be accepted)',
    forge([], [], hash),
    true,
  );
  {
    const f = forge([blob(baseData)], [baseId], hash);
    add('pack header', 'count 0 with one entry (idx says 1)', {
      ...f,
      pack: resum(put32(f.pack, 8, 0), hash),
    });
    add(
      'pack header',
      'count 0 with one entry, idx of zero objects',
      forge([blob(baseData)], [], hash, 0),
    );
  }
  {
    const f = forge([blob(baseData), blob(tgt)], [baseId, tgtId], hash);
    add('idx', 'an idx for fewer entries than the pack has', {
      ...f,
      idx: forge([blob(baseData)], [baseId], hash).idx,
    });
  }
  return out;
}

/** The whole corpus (computed once; a few hundred variants). */
export function hostileCorpus(): Variant[] {
  const fixtures: FixtureName[] = ['basic', 'ref-delta', 'sha256', 'large-offset', 'idx-v1'];
  const all = [...fixtures.flatMap(byteVariants), ...forgedVariants()];
  const seen = new Set<string>();
  for (const v of all) {
    if (seen.has(v.name)) throw new Error(`duplicate variant name ${v.name}`);
    seen.add(v.name);
  }
  return all;
}

/** Writes a variant into a repository copy (read-only files, as git makes them); returns its files. */
export function installVariant(repo: string, objectsDir: string, v: Variant): string[] {
  const dir = path.join(objectsDir, 'pack');
  const base = path.join(dir, v.replaces ?? v.adds!);
  const files: string[] = [];
  const put = (ext: string, data: Buffer) => {
    const f = base + ext;
    if (fs.existsSync(f)) fs.chmodSync(f, 0o644);
    fs.writeFileSync(f, data);
    fs.chmodSync(f, 0o444);
    files.push(f);
  };
  put('.pack', v.pack);
  if (v.rev) put('.rev', v.rev);
  put('.idx', v.idx);
  if (fs.existsSync(base + '.rev') && !v.rev) files.push(base + '.rev');
  return files;
}
