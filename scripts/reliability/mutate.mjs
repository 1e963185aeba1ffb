// The mutation engine of the fuzzer, shared by the reader fuzzer (fuzz-worker.mjs) and the
// repack fuzzer (test/fuzz.test.ts): a case is a pure function of its seed and its source files.
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';

/** mulberry32, as test/helpers/prng.ts. */
export function prng(seed) {
  let s = seed >>> 0;
  const u32 = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return { u32, int: (n) => u32() % n, pick: (a) => a[u32() % a.length] };
}

const cache = new Map();
/** A fuzz source's bytes (read once) and its entry spans. */
export function loadSource(src) {
  let s = cache.get(src.name);
  if (!s) {
    const read = (p) => (p && fs.existsSync(p) ? fs.readFileSync(p) : undefined);
    s = { ...src, bytes: { pack: read(src.pack), idx: read(src.idx), rev: read(src.rev) } };
    s.hashLen = src.hash === 'sha256' ? 32 : 20;
    s.entries = entrySpans(s.bytes.idx, s.bytes.pack.length, s.hashLen);
    cache.set(src.name, s);
  }
  return s;
}

/** Entry spans [offset, end) from an idx v2 or v1 (for fixing CRCs after an in-place edit). */
function entrySpans(idx, packLen, len) {
  const v2 = idx.readUInt32BE(0) === 0xff744f63;
  const fan = v2 ? 8 : 0;
  const n = idx.readUInt32BE(fan + 1020);
  const offs = [];
  for (let i = 0; i < n; i++) {
    if (v2) {
      const o = idx.readUInt32BE(fan + 1024 + n * len + n * 4 + i * 4);
      if (o & 0x80000000) return undefined; // 64-bit offsets: no CRC fixing
      offs.push([o, i]);
    } else offs.push([idx.readUInt32BE(fan + 1024 + i * (len + 4)), i]);
  }
  offs.sort((a, b) => a[0] - b[0]);
  return {
    v2,
    n,
    spans: offs.map(([o, i], k) => ({
      start: o,
      end: k + 1 < offs.length ? offs[k + 1][0] : packLen - len,
      pos: i,
    })),
  };
}

const INTERESTING32 = [
  0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
];

/** One case: what to mutate and how, drawn from the seed. */
export function planCase(seed, s) {
  const r = prng(seed);
  const targets = s.bytes.rev
    ? ['pack', 'pack', 'pack', 'idx', 'idx', 'rev']
    : ['pack', 'pack', 'pack', 'idx', 'idx'];
  const target = r.pick(targets);
  const len = s.bytes[target].length;
  // Half of the cases keep every checksum (and CRC) consistent, so that the damage reaches the
  // parsers behind them; the other half must be caught by a checksum at least.
  const fix = r.int(2) === 0;
  const pos = () => {
    const k = r.int(4);
    if (k === 0) return r.int(Math.min(len, 1100));
    if (k === 1) return Math.max(0, len - 1 - r.int(Math.min(len, 72)));
    return r.int(len);
  };
  const ops = [];
  const nops = 1 + r.int(3);
  for (let i = 0; i < nops; i++) {
    const k = r.int(fix ? 4 : 8);
    if (k === 0) ops.push({ op: 'flip', at: pos(), bit: r.int(8) });
    else if (k === 1)
      ops.push({ op: 'byte', at: pos(), value: r.pick([0, 0xff, 0x7f, 0x80, r.int(256)]) });
    else if (k === 2 || k === 3)
      ops.push({ op: 'u32', at: pos() & ~3, value: r.pick(INTERESTING32) });
    else if (k === 4) ops.push({ op: 'truncate', to: r.int(len + 1) });
    else if (k === 5)
      ops.push({
        op: 'insert',
        at: pos(),
        bytes: Array.from({ length: 1 + r.int(16) }, () => r.int(256)),
      });
    else if (k === 6) ops.push({ op: 'delete', at: pos(), n: 1 + r.int(32) });
    else ops.push({ op: 'dup', from: pos(), n: 1 + r.int(64), at: pos() });
  }
  return { seed, target, fix, ops };
}

export function applyOps(buf, ops) {
  let b = Buffer.from(buf);
  for (const o of ops) {
    if (o.op === 'flip' && o.at < b.length) b[o.at] ^= 1 << o.bit;
    else if (o.op === 'byte' && o.at < b.length) b[o.at] = o.value;
    else if (o.op === 'u32' && o.at + 4 <= b.length) b.writeUInt32BE(o.value >>> 0, o.at);
    else if (o.op === 'truncate') b = b.subarray(0, Math.min(o.to, b.length));
    else if (o.op === 'insert')
      b = Buffer.concat([b.subarray(0, o.at), Buffer.from(o.bytes), b.subarray(o.at)]);
    else if (o.op === 'delete') b = Buffer.concat([b.subarray(0, o.at), b.subarray(o.at + o.n)]);
    else if (o.op === 'dup')
      b = Buffer.concat([b.subarray(0, o.at), b.subarray(o.from, o.from + o.n), b.subarray(o.at)]);
  }
  return b;
}

function resum(buf, hash, len) {
  if (buf.length < len) return buf;
  const out = Buffer.from(buf);
  createHash(hash)
    .update(out.subarray(0, out.length - len))
    .digest()
    .copy(out, out.length - len);
  return out;
}

/** The mutated files of a case, written into `dir` as `<baseName>.pack` etc. */
export function materialise(s, plan, dir, baseName = 'pack-fuzz') {
  const files = {
    pack: Buffer.from(s.bytes.pack),
    idx: Buffer.from(s.bytes.idx),
    rev: s.bytes.rev && Buffer.from(s.bytes.rev),
  };
  const len = s.hashLen;
  files[plan.target] = applyOps(files[plan.target], plan.ops);
  if (plan.fix) {
    if (plan.target === 'pack' && files.pack.length === s.bytes.pack.length && s.entries) {
      // In-place edit: the CRCs of touched entries, the trailer, and the copies of it.
      const idx = files.idx;
      const { v2, n } = s.entries;
      for (const e of s.entries.spans) {
        if (!v2) break;
        if (!files.pack.subarray(e.start, e.end).equals(s.bytes.pack.subarray(e.start, e.end))) {
          idx.writeUInt32BE(
            crc32(files.pack.subarray(e.start, e.end)) >>> 0,
            8 + 1024 + n * len + e.pos * 4,
          );
        }
      }
      files.pack = resum(files.pack, s.hash, len);
      files.pack.subarray(files.pack.length - len).copy(idx, idx.length - 2 * len);
      files.idx = resum(idx, s.hash, len);
      if (files.rev) {
        files.pack.subarray(files.pack.length - len).copy(files.rev, files.rev.length - 2 * len);
        files.rev = resum(files.rev, s.hash, len);
      }
    } else if (plan.target !== 'pack') {
      files[plan.target] = resum(files[plan.target], s.hash, len);
    }
  }
  const base = path.join(dir, baseName);
  const put = (ext, data) => {
    fs.rmSync(base + ext, { force: true });
    fs.writeFileSync(base + ext, data, { mode: 0o444 });
  };
  put('.pack', files.pack);
  put('.idx', files.idx);
  if (files.rev) put('.rev', files.rev);
  else fs.rmSync(base + '.rev', { force: true });
  const changed =
    !files.pack.equals(s.bytes.pack) ||
    !files.idx.equals(s.bytes.idx) ||
    (files.rev !== undefined && !files.rev.equals(s.bytes.rev));
  return { base, changed };
}
