// The code as the package ships it, once: the command line, the library API and the three worker
// threads bundled into dist/bundle/ (shared code in common chunks), which the launcher, the
// package's "exports" and the workers load instead of the 140-odd modules tsc writes: Node 20's
// ES module loader spends ~1.5 ms on each module it resolves, reads and links, so a repack
// started in 120-130 ms of CPU before its first line of work, against ~40 ms from the bundle
// (docs/benchmarks.md §7). Run after tsc (`npm run build`); the tarball carries the bundle and
// tsc's declarations, not tsc's modules (package.json "files"; docs/decisions.md, "Shipped once").
//
// dist/bundle/ is as deep as dist/<layer>/, and each entry is named as its module: every
// `new URL(…, import.meta.url)` of the sources (the workers beside their pool, package.json, the
// man page and bin/ two levels up, zstd-napi through createRequire) resolves in the bundle as in
// the modules, with nothing rewritten.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const dist = fileURLToPath(new URL('../dist', import.meta.url));
const outDir = path.join(dist, 'bundle');
rmSync(outDir, { recursive: true, force: true });

/** Entry name (the file the sources' URLs name) -> tsc's module. */
const ENTRIES = {
  main: 'cli/main.js',
  index: 'index.js',
  'reencode-worker': 'repack/reencode-worker.js',
  'pre-hash-worker': 'commands/hash-object/pre-hash-worker.js',
  'pack-writer-thread': 'format/pack-writer-thread.js',
};

const bundle = await rolldown({
  input: Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, path.join(dist, v)])),
  platform: 'node',
});
await bundle.write({
  dir: outDir,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: '[name]-[hash].js',
});
await bundle.close();
