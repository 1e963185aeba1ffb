#!/usr/bin/env node
// zlib micro-measurements (issue 33): Adler-32, inflate, stored blocks, loose reads, of one build.
//   node bench/zlib-micro.mjs <build's dist/> <before|after> <objects dir with loose objects>
// before: a build from before codec/zlib.ts (7d55b49 and older); best of 7 runs each, in ms.

import fs from 'node:fs';
import zlib from 'node:zlib';
import { randomBytes } from 'node:crypto';
const [dist, when, dir] = process.argv.slice(2);
const z =
  when === 'before'
    ? {
        ...(await import(`${dist}/codec/inflate.js`)),
        adler32: (await import(`${dist}/codec/parallel-deflate.js`)).adler32,
        storedAdler: (await import(`${dist}/format/zlib-stored.js`)).adler32,
        stored: await import(`${dist}/format/zlib-stored.js`),
      }
    : {
        ...(await import(`${dist}/codec/zlib.js`)),
        storedAdler: (await import(`${dist}/codec/zlib.js`)).adler32,
        stored: await import(`${dist}/codec/zlib.js`),
      };
const loose = await import(`${dist}/store/loose.js`);
const best = (f, reps = 7) => {
  let b = Infinity;
  for (let i = 0; i < reps; i++) {
    const t = process.hrtime.bigint();
    f();
    b = Math.min(b, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return b.toFixed(2);
};
const big = randomBytes(64 << 20);
const smalls = Array.from({ length: 20000 }, (_, i) => randomBytes(100 + (i % 900)));
console.log(
  'adler32 (codec) 64 MiB ms',
  best(() => z.adler32(big)),
);
console.log(
  'adler32 (stored blocks) 64 MiB ms',
  best(() => z.storedAdler(big)),
);
console.log(
  'adler32 (stored blocks) 20000 small ms',
  best(() => {
    for (const s of smalls) z.storedAdler(s);
  }),
);
const plain = smalls.map((s) => Buffer.concat([s, s]));
const streams = plain.map((p) => zlib.deflateSync(p, { level: 6 }));
console.log(
  'inflateSync 20000 small ms',
  best(() => {
    for (const s of streams) zlib.inflateSync(s);
  }),
);
console.log(
  'inflateExact 20000 small ms',
  best(() => {
    for (let i = 0; i < streams.length; i++) z.inflateExact(streams[i], plain[i].length, 'x', 0);
  }),
);
const stored = plain.map((p) => z.stored.storedZlib(p));
console.log(
  'storedZlibEquals 20000 small ms',
  best(() => {
    for (let i = 0; i < stored.length; i++)
      if (!z.stored.storedZlibEquals(stored[i], plain[i])) throw 1;
  }),
);

const files = [];
for (const d of fs.readdirSync(dir).filter((d) => /^[0-9a-f]{2}$/.test(d)))
  for (const n of fs.readdirSync(`${dir}/${d}`)) files.push(`${dir}/${d}/${n}`);
console.log(
  `readLooseFile ${files.length} jq loose files ms`,
  best(() => {
    for (const f of files) loose.readLooseFile(f);
  }),
);
console.log(
  `unknownLooseType ${files.length} jq loose files ms`,
  best(() => {
    for (const f of files) loose.unknownLooseType(f);
  }),
);
