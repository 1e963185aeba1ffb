// The focused suite on every supported Node.js line but the running one (which `npm test` has
// run whole): what changes from one line to the next. The package as installed from its tarball
// (npm and the launcher on that line), the zstd commands (node:zlib's zstd on 22 and 24,
// zstd-napi on 20), signals and the process's end (Node 20's exit deadlock), the CLI contract.
// The rest (the rewrite, the proof, the readers, the reliability harness) is the same JavaScript
// on any line: run once, by `npm test`. docs/decisions.md, "Node.js lines", has the reasons and
// the times. Run after a build (`npm run test:lines` builds first). Usage:
//   node scripts/test-lines.mjs [<vitest filter or file>...]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_LINES, nodeBinary, runningLine } from './node-lines.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const FOCUSED = [
  'test/package.test.ts',
  'test/zstd.test.ts',
  'test/zstd-stream.test.ts',
  'test/zstd-signals.test.ts',
  'test/signals.test.ts',
  'test/contract.test.ts',
];

const files = process.argv.length > 2 ? process.argv.slice(2) : FOCUSED;
let failed = 0;
for (const line of Object.keys(NODE_LINES).map(Number)) {
  if (line === runningLine()) continue;
  const node = nodeBinary(line);
  const started = Date.now();
  console.log(`\n== Node.js ${NODE_LINES[line]}: ${files.join(' ')}`);
  // Its directory first on PATH: the launcher's `node`, npm's and every test's child processes run on it.
  const env = { ...process.env, PATH: `${path.dirname(node)}:${process.env.PATH}` };
  const r = spawnSync(
    node,
    [path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...files],
    { cwd: ROOT, env, stdio: 'inherit' },
  );
  console.log(
    `== Node.js ${NODE_LINES[line]}: exit ${r.status ?? r.signal} in ${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
