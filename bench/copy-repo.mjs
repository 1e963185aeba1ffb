// A private copy of a repository for a run that rewrites it: pack files hard-linked (no tool
// modifies an input pack), refs, logs and the small top-level files copied.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function copyRepo(from) {
  const to = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-'));
  // Hard links for the read-only pack files (neither tool modifies an input pack), copies otherwise.
  execFileSync('cp', ['-al', `${from}/.`, to]);
  for (const d of ['refs', 'logs'])
    if (fs.existsSync(path.join(to, d))) {
      fs.rmSync(path.join(to, d), { recursive: true });
      execFileSync('cp', ['-a', path.join(from, d), path.join(to, d)]);
    }
  for (const f of ['HEAD', 'config', 'packed-refs', 'index']) {
    if (fs.existsSync(path.join(to, f))) {
      fs.rmSync(path.join(to, f));
      fs.copyFileSync(path.join(from, f), path.join(to, f));
    }
  }
  return to;
}
