#!/usr/bin/env node
// The launcher (bin/git-repack-ts) fixed glibc's mmap threshold for this process only: the
// programs this one starts (git) get the environment as the user gave it.
if (process.env.GIT_REPACK_TS_MALLOC === 'set') {
  delete process.env.MALLOC_MMAP_THRESHOLD_;
  delete process.env.GIT_REPACK_TS_MALLOC;
}
let main;
try {
  main = await import('../dist/cli/main.js');
} catch (e) {
  // A clone linked with `npm install -g .` or `npm link` before `npm run build` (README, "Install").
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes('/dist/cli/main.js')) throw e;
  process.stderr.write("fatal: git-repack-ts is not built: run 'npm ci && npm run build' in its clone, or install the packed tarball (README)\n");
  process.exit(128);
}
const { run } = main;

await run();
