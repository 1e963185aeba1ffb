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

/**
 * Which chunk each module goes into (codeSplitting groups): rolldown's own splitting, one chunk
 * per set of entries and dynamic imports that share modules, made 26 files of a rewrite with
 * nothing to do, each resolved, read and linked (docs/benchmarks.md §10b). Instead:
 * - `thread-<worker>`: what each worker thread imports (a module that several import goes to the
 *   first of WORKERS), so that a worker loads nothing of the command line;
 * - `main`: the rest of what `cli/main.js` imports, all that `--version` loads;
 * - `cli`: the rest of what the rewrite's command line imports: all that a run loads before it
 *   knows whether there is anything to do (`--auto`, the no-op); the rewrite itself, the export
 *   and the other commands are imported where they start, and chunked by rolldown.
 */
const CLI_PATH = ['cli/main.js', 'cli/repack.js'];
const WORKERS = [
  ENTRIES['pack-writer-thread'],
  ENTRIES['pre-hash-worker'],
  ENTRIES['reencode-worker'],
];

/** The modules `roots` import statically, themselves included. */
function staticClosure(roots, info) {
  const seen = new Set();
  const stack = roots.map((r) => path.join(dist, r));
  while (stack.length > 0) {
    const id = stack.pop();
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(info(id)?.importedIds ?? []));
  }
  return seen;
}
let groups;
/** The group of a module (above), or null: rolldown's. */
function chunkOf(id, ctx) {
  if (groups === undefined) {
    const info = (m) => ctx.getModuleInfo(m);
    groups = new Map();
    const add = (name, ids) => ids.forEach((m) => groups.has(m) || groups.set(m, name));
    for (const w of WORKERS)
      add(
        `thread-${path.basename(w, '.js')}`,
        [...staticClosure([w], info)].filter((m) => m !== path.join(dist, w)),
      );
    add('main', staticClosure(['cli/main.js'], info));
    add('cli', staticClosure(CLI_PATH, info));
  }
  return groups.get(id) ?? null;
}
/** A group for the chunks whose names start with `prefix`, before those of lower priority. */
const group = (prefix, priority) => ({
  name: (id, ctx) => (chunkOf(id, ctx)?.startsWith(prefix) ? chunkOf(id, ctx) : null),
  debugName: prefix,
  priority,
});

const bundle = await rolldown({
  input: Object.fromEntries(Object.entries(ENTRIES).map(([k, v]) => [k, path.join(dist, v)])),
  platform: 'node',
});
await bundle.write({
  dir: outDir,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: '[name]-[hash].js',
  codeSplitting: {
    groups: [group('thread-', 3), group('main', 2), group('cli', 1)],
  },
});
await bundle.close();
