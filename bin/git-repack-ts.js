#!/usr/bin/env node
import module from 'node:module';
import { lstatSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The launcher (bin/git-repack-ts) set glibc malloc variables for this process only, and named
// them in GIT_REPACK_TS_MALLOC: the programs this one starts (git) get the environment as the
// user gave it.
if (process.env.GIT_REPACK_TS_MALLOC !== undefined) {
  for (const name of process.env.GIT_REPACK_TS_MALLOC.split(' ')) if (name.startsWith('MALLOC_')) delete process.env[name];
  delete process.env.GIT_REPACK_TS_MALLOC;
}
// And the certificates file the launcher kept from node's start-up (it is read only then).
if (process.env.GIT_REPACK_TS_CA_CERTS !== undefined) {
  process.env.NODE_EXTRA_CA_CERTS = process.env.GIT_REPACK_TS_CA_CERTS;
  delete process.env.GIT_REPACK_TS_CA_CERTS;
}
/**
 * V8's code cache for the modules loaded from here on (Node 22.1+; Node 20 has none for ES
 * modules): a run compiles only what no run before it compiled, 10 ms of CPU of each start here
 * (docs/decisions.md, "Start-up"). Kept in the package's dist/compile-cache/ (not packed, gone
 * with the package), else, where the package is read-only, in a directory of this user's own
 * under the temporary directory; never in the repository. Node writes each entry to a temporary
 * file renamed into place, and checks its size, checksum, source and Node version as it reads it:
 * concurrent runs, an upgrade or another node binary cost a compile, nothing more.
 * NODE_COMPILE_CACHE (that directory instead) and NODE_DISABLE_COMPILE_CACHE=1 are obeyed.
 */
function enableCompileCache() {
  const { FAILED } = module.constants.compileCacheStatus;
  const own = fileURLToPath(new URL('../dist/compile-cache', import.meta.url));
  if (module.enableCompileCache(own).status !== FAILED) return;
  const uid = process.getuid?.();
  const dir = join(tmpdir(), `git-repack-ts-compile-cache-${uid ?? 'user'}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if (e?.code !== 'EEXIST') return;
  }
  // A directory another user made, or can write to, is not one to load code from.
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st?.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o022) !== 0) return;
  module.enableCompileCache(dir);
}
if (typeof module.enableCompileCache === 'function') enableCompileCache();

/** The module, or undefined when its file is not there. */
async function load(file) {
  try {
    return await import(file);
  } catch (e) {
    if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes(file.slice(2))) throw e;
    return undefined;
  }
}
// The bundle (scripts/bundle.mjs) loads in a third of the time of the modules tsc writes, which
// a build by tsc alone leaves on their own. A bundle older than tsc's output is stale (a `tsc`
// run after `npm run build`): the modules are used then, never yesterday's code.
const mtime = (rel) => statSync(new URL(rel, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? -1;
const fresh = mtime('../dist/bundle/main.js') >= mtime('../dist/cli/main.js');
const main = (fresh ? await load('../dist/bundle/main.js') : undefined) ?? (await load('../dist/cli/main.js'));
if (main === undefined) {
  // A clone linked with `npm install -g .` or `npm link` before `npm run build` (README, "Install").
  process.stderr.write("fatal: git-repack-ts is not built: run 'npm ci && npm run build' in its clone, or install the packed tarball (README)\n");
  process.exit(128);
}
const { run } = main;

// The process ends as soon as the command has returned, not when Node finds its event loop empty.
// At that point Node 20 first waits for V8's background tasks (NodePlatform::DrainTasks), and a
// background compile that needs a garbage collection waits for the main thread in turn: a
// deadlock that ignores SIGTERM (nodejs/node#54918; 1 in 500 `verify` runs of the forged delta
// chain here, every `walk` under node --stress-concurrent-allocation; docs/reliability.md).
// process.exit does not go through that wait, and skips Node's teardown of the heap (15 ms of a
// 0.57 s rewrite of jq). run() returns once every git it started has ended and what stdout and
// stderr still held has been written (Node queues what a full pipe does not take), so nothing is
// cut short.
await run();
process.exit();
