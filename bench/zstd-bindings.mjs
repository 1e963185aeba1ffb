#!/usr/bin/env node
// zstd's two bindings side by side on the frames of a zstd pack (run on Node 22.19+ or 24.6+,
// where node:zlib has zstd with dictionaries): every frame decompressed, then every object
// compressed again at the pack's level with its dictionary, by the codec on node:zlib (ours: one
// native handle kept per dictionary), by node:zlib's one-call zstdDecompressSync/zstdCompressSync
// (a context and a dictionary load per call), and by the codec on zstd-napi. Rounds interleaved;
// median CPU µs per frame (this process's user + system time: the machine is shared), and whether each binding's frames are the pack's bytes. Usage:
//   node bench/zstd-bindings.mjs <file.zpack> [rounds]
import zlib from 'node:zlib';
import { Pack } from '../dist/store/pack.js';
import { SHA1, SHA256 } from '../dist/hash/algo.js';
import { loadNapi, napiCodec } from '../dist/codec/zstd-napi.js';
import { loadNodeZstd, nodeCodec } from '../dist/codec/zstd-node.js';

const [file, roundsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/zstd-bindings.mjs <file.zpack> [rounds]');
  process.exit(129);
}
const rounds = Number(roundsArg ?? 5);
let p;
try {
  p = Pack.open(file, SHA1);
} catch {
  p = Pack.open(file, SHA256);
}
// Every framed entry with its dictionary (a delta's after the type at the bottom of its chain) and its data.
const realOf = new Map();
const frames = [];
for (let i = 0; i < p.order.length; i++) {
  const off = p.offsetAtRank(i);
  const e = p.entryAt(off, p.endOf(off), true);
  const t = e.hdr.type;
  const real =
    t === 6
      ? realOf.get(off - e.hdr.baseDistance)
      : t === 7
        ? realOf.get(p.findOffset(e.raw.subarray(e.hdr.baseIdPos, e.hdr.baseIdPos + p.algo.len)))
        : t;
  realOf.set(off, real);
  const data = e.raw.subarray(e.hdr.headerLen);
  if (data.length === e.hdr.size) continue;
  const delta = t === 6 || t === 7;
  frames.push({
    dict: p.dictFor(real, delta),
    frame: Buffer.from(data),
    plain: Buffer.from(p.unzstd(data, e.hdr.size, real, delta, off)),
  });
}
const dicts = p.zstdDicts.dicts;
const level = p.zpack.level;
const napi = loadNapi();
const node = loadNodeZstd();
if (typeof napi === 'string' || typeof node === 'string')
  throw new Error(`a binding is missing: ${napi} / ${node}`);
const MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
const C = zlib.constants;
const params = {
  [C.ZSTD_c_compressionLevel]: level,
  [C.ZSTD_c_contentSizeFlag]: 0,
  [C.ZSTD_c_checksumFlag]: 0,
  [C.ZSTD_c_dictIDFlag]: 0,
};
const dictOpt = (d) => (d >= 0 ? { dictionary: dicts[d] } : {});
const oneCall = {
  decompress: (f, size, d) =>
    zlib.zstdDecompressSync(Buffer.concat([MAGIC, f]), {
      ...dictOpt(d),
      maxOutputLength: size + 1,
    }),
  compress: (data, lvl, d) => zlib.zstdCompressSync(data, { params, ...dictOpt(d) }).subarray(4),
};
const codecs = {
  'node:zlib, kept handles (ours)': nodeCodec(node, dicts),
  'node:zlib, one call a frame': oneCall,
  'zstd-napi (ours)': napiCodec(napi, dicts),
};
const times = Object.fromEntries(Object.keys(codecs).map((k) => [k, { d: [], c: [] }]));
const same = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, c] of Object.entries(codecs)) {
    const cpu = (since) => {
      const u = process.cpuUsage(since);
      return (u.user + u.system) / frames.length;
    };
    let t = process.cpuUsage();
    for (const f of frames) c.decompress(f.frame, f.plain.length, f.dict);
    times[name].d.push(cpu(t));
    t = process.cpuUsage();
    let n = 0;
    for (const f of frames) if (c.compress(f.plain, level, f.dict).equals(f.frame)) n++;
    times[name].c.push(cpu(t));
    same[name] = n;
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(
  `Node ${process.version}, zstd ${process.versions.zstd}; ${file}: ${frames.length} frames, level ${level}, ${dicts.length} dictionaries; ${rounds} interleaved rounds`,
);
console.log(
  "| binding | decompress, CPU µs/frame | compress, CPU µs/frame | frames equal to the pack's |",
);
console.log('|---|---|---|---|');
for (const [name, t] of Object.entries(times))
  console.log(
    `| ${name} | ${median(t.d).toFixed(1)} | ${median(t.c).toFixed(1)} | ${same[name]} / ${frames.length} |`,
  );
p.close();
