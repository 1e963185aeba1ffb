// The command line as a few files (dist/bundle/), which the launcher loads instead of the 60-odd
// modules tsc writes: Node 20's ES module loader spends ~1.5 ms on each module it resolves, reads
// and links, so a repack started in 120-130 ms of CPU before its first line of work, against
// ~40 ms from the bundle (docs/benchmarks.md §7). Run after tsc (`npm run build`); the modules in
// dist/ stay what the library API (dist/index.js) and the worker threads load.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rolldown } from 'rolldown';

const dist = fileURLToPath(new URL('../dist', import.meta.url));
const outDir = path.join(dist, 'bundle');
rmSync(outDir, { recursive: true, force: true });

const bundle = await rolldown({
  input: path.join(dist, 'cli/main.js'),
  platform: 'node',
  plugins: [
    {
      // Each module's `import.meta.url` stays the URL of its file in dist/: the worker threads,
      // package.json, the man page and zstd-napi are found as from the unbundled build.
      name: 'keep-import-meta-url',
      transform(code, id) {
        if (!code.includes('import.meta.url')) return null;
        const rel = path.relative(outDir, id).split(path.sep).join('/');
        return code.replaceAll(
          'import.meta.url',
          `new URL(${JSON.stringify(rel)}, import.meta.url).href`,
        );
      },
    },
  ],
});
await bundle.write({
  dir: outDir,
  format: 'esm',
  entryFileNames: '[name].js',
  chunkFileNames: '[name]-[hash].js',
});
await bundle.close();
