// Run by test/zstd-bindings.test.ts under a Node.js line whose node:zlib has zstd with
// dictionaries: the codec on node:zlib against the codec on zstd-napi (libzstd through its own
// binding: the second implementation), on the samples in argv[3] (each a 4-byte big-endian
// length and the bytes). Prints what differs as JSON; the test expects nothing to.
//   node zstd-compare.mjs <dist directory> <samples file>
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, samplesFile] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const { loadNapi, napiCodec } = await load('codec/zstd-napi.js');
const { loadNodeZstd, nodeCodec } = await load('codec/zstd-node.js');
const { trainDictionary } = await load('codec/dict.js');

const raw = readFileSync(samplesFile);
const samples = [];
for (let at = 0; at < raw.length;) {
  const n = raw.readUInt32BE(at);
  samples.push(raw.subarray(at + 4, at + 4 + n));
  at += 4 + n;
}
const b = loadNapi();
const z = loadNodeZstd();
if (typeof b === 'string' || typeof z === 'string')
  throw new Error(`a binding is missing: ${b} / ${z}`);
// A dictionary as the export trains one (zstd --train where the zstd command is, else raw content), and a raw one.
const trained = trainDictionary(
  samples.filter((s) => s.length < 65536),
  16 * 1024,
);
const dicts = [
  trained.dict,
  samples
    .filter((s) => s.length < 65536)
    .slice(0, 40)
    .reduce((a, s) => Buffer.concat([a, s]), Buffer.alloc(0))
    .subarray(0, 8192),
];
const codecs = { node: nodeCodec(z, dicts), napi: napiCodec(b, dicts) };
const other = { node: 'napi', napi: 'node' };

const out = {
  dictMethod: trained.method,
  frames: 0,
  differ: [],
  unread: [],
  streamed: 0,
  streamDiffer: [],
  streamUnread: [],
  refused: {},
};
// Pieces are views of one reused buffer: each copied before the next is asked for.
const whole = (it) => Buffer.concat(Array.from(it, (p) => Buffer.from(p)));
const attempt = (f) => {
  try {
    return f();
  } catch (e) {
    return e;
  }
};

for (const [i, s] of samples.entries()) {
  // Every level on small objects (the export's are 1..22); one on large ones, which cost the most.
  for (const level of s.length > 65536 ? [3] : [1, 3, 10, 19]) {
    for (const dict of [-1, 0, 1]) {
      const label = `sample ${i} (${s.length} bytes) level ${level} dict ${dict}`;
      const f = {};
      for (const name of ['node', 'napi']) f[name] = codecs[name].compress(s, level, dict);
      out.frames++;
      if (!f.node.equals(f.napi)) out.differ.push(label);
      for (const name of ['node', 'napi']) {
        // Each frame read by the other binding, whole and in pieces of 7777 bytes.
        const got = attempt(() => codecs[other[name]].decompress(f[name], s.length, dict));
        if (!(got instanceof Buffer) || !got.equals(s))
          out.unread.push(
            `${label}: ${name}'s frame, by ${other[name]}: ${got instanceof Error ? got.message : 'other bytes'}`,
          );
      }
      // The streaming writer (frames over 1 MiB are written this way), fed in 100 000-byte pieces.
      if (s.length < 200_000) continue;
      const w = {};
      for (const name of ['node', 'napi']) {
        const fw = codecs[name].frameWriter(level, dict, 65536);
        const parts = [];
        for (let at = 0; at < s.length; at += 100_000)
          parts.push(whole(fw.feed(s.subarray(at, at + 100_000))));
        w[name] = Buffer.concat([...parts, whole(fw.end())]);
      }
      out.streamed++;
      if (!w.node.equals(w.napi)) out.streamDiffer.push(label);
      for (const name of ['node', 'napi']) {
        const r = codecs[other[name]].frameReader(dict, 65536);
        const got = attempt(() => {
          const pieces = [];
          for (let at = 0; at < w[name].length; at += 7777)
            for (const p of r.feed(w[name].subarray(at, at + 7777))) pieces.push(Buffer.from(p));
          return Buffer.concat(pieces);
        });
        if (!(got instanceof Buffer) || !got.equals(s) || !r.ended())
          out.streamUnread.push(`${label}: ${name}'s streamed frame, by ${other[name]}`);
      }
    }
  }
}

// Damaged frames: cut short, or with a byte after the end. Each binding must refuse each, whole and streamed.
const victim = samples.find((s) => s.length > 200_000 && s.length < 1 << 20);
const small = samples.find((s) => s.length > 200 && s.length < 4096);
for (const [what, s] of [
  ['small', small],
  ['large', victim],
]) {
  const f = codecs.napi.compress(s, 3, 0);
  const bad = {
    'last byte cut': f.subarray(0, f.length - 1),
    'half cut': f.subarray(0, f.length >> 1),
    'one byte more': Buffer.concat([f, Buffer.from([0])]),
  };
  for (const [how, frame] of Object.entries(bad)) {
    for (const name of ['node', 'napi']) {
      const whole1 = attempt(() => codecs[name].decompress(frame, s.length, 0));
      const r = codecs[name].frameReader(0, 65536);
      const streamed = attempt(() => [...r.feed(frame)].reduce((n, p) => n + p.length, 0));
      // Refused: an error, or (streamed) a frame that did not end, or not all of the bytes.
      const refused =
        whole1 instanceof Error &&
        (streamed instanceof Error || !r.ended() || streamed !== s.length);
      out.refused[`${what} frame, ${how}, ${name}`] = refused;
    }
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
