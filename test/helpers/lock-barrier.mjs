// Loaded with `node --import` by the lock-takeover test (test/reliability-journal.test.ts): the
// run stops itself (SIGSTOP) once it has read `maintenance.lock` for the first time, so that a
// test can start many runs against a stale lock, wait until every one has read it and stopped,
// and release them together (SIGCONT) just where each decides to take it over. Once continued it
// writes `$LOCK_BARRIER_DIR/<pid>`. It patches node's fs, not the tool: the same barrier holds for
// any build (an older one too, to show what that one did).
import fs from 'node:fs';
import path from 'node:path';
import { syncBuiltinESMExports } from 'node:module';

const { openSync, closeSync, writeFileSync } = fs;
const dir = process.env.LOCK_BARRIER_DIR;
let lockFd;
let armed = true;
fs.openSync = function (file, ...rest) {
  const fd = openSync.call(this, file, ...rest);
  if (armed && lockFd === undefined && String(file).endsWith('/maintenance.lock')) lockFd = fd;
  return fd;
};
fs.closeSync = function (fd) {
  closeSync.call(this, fd);
  if (armed && fd === lockFd) {
    armed = false;
    process.kill(process.pid, 'SIGSTOP');
    if (dir) writeFileSync(path.join(dir, String(process.pid)), '');
  }
};
syncBuiltinESMExports();
