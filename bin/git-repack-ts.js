#!/usr/bin/env node
// The launcher (bin/git-repack-ts) fixed glibc's mmap threshold for this process only: the
// programs this one starts (git) get the environment as the user gave it.
if (process.env.GIT_REPACK_TS_MALLOC === 'set') {
  delete process.env.MALLOC_MMAP_THRESHOLD_;
  delete process.env.GIT_REPACK_TS_MALLOC;
}
const { run } = await import('../dist/cli/main.js');

await run();
