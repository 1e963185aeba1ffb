/**
 * Runs one variant of the hostile corpus through `verify`, `inspect` and the repack (in-process
 * or through the CLI with its memory and time measured) and judges what they did: see
 * test/hostile.test.ts for the rules.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { main } from '../../src/cli/main.js';
import { FIXTURES, fixturePath, type FixtureName } from '../fixtures/index.js';
import {
  CLI_BIN,
  digestDiff,
  dropScratch,
  integrityProblems,
  objectsDirOf,
  scratchGitDir,
  treeDigest,
} from './faults.js';
import { gitEnv, objectSet, PINNED_ENV } from './git.js';
import { installVariant, type Variant } from './hostile.js';

export type Cmd = 'verify' | 'inspect' | 'repack';

/** The commands run in-process spawn git with process.env: pin it as for the CLI (a forked test worker only). */
export function pinProcessEnv(): void {
  for (const k of Object.keys(process.env)) if (k.startsWith('GIT_')) delete process.env[k];
  Object.assign(process.env, PINNED_ENV);
}

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
  /** Peak resident memory in KiB and wall time in ms (CLI runs only). */
  maxRssKiB?: number;
  ms?: number;
}

export async function inProcess(args: string[], cwd: string): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const status = await main(args, {
    out: (t) => void (stdout += t),
    err: (t) => void (stderr += t),
    stderrIsTty: false,
    env: { ...PINNED_ENV },
    cwd,
  });
  return { status, stdout, stderr };
}

const TIME = fs.existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const LIMIT_MS = 30_000;
const LIMIT_RSS_KIB = 200 * 1024;

/** The CLI in its own process, its peak memory measured by /usr/bin/time when there is one. */
export function viaCli(args: string[], cwd: string): Run {
  const stats = path.join(cwd, '..', `time-${process.pid}-${Math.random().toString(16).slice(2)}`);
  const argv = TIME
    ? [TIME, '-f', '%M', '-o', stats, process.execPath, CLI_BIN, ...args]
    : [process.execPath, CLI_BIN, ...args];
  const t0 = Date.now();
  const r = spawnSync(argv[0]!, argv.slice(1), {
    cwd,
    env: gitEnv(),
    encoding: 'utf8',
    timeout: LIMIT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 1 << 26,
  });
  const ms = Date.now() - t0;
  let maxRssKiB: number | undefined;
  if (TIME && fs.existsSync(stats)) {
    const m = /(\d+)\s*$/.exec(fs.readFileSync(stats, 'utf8'));
    if (m) maxRssKiB = Number(m[1]);
    fs.rmSync(stats);
  }
  return {
    status: r.status ?? -1,
    stdout: r.stdout ?? '',
    stderr: (r.stderr ?? '') + (r.signal ? `\n[killed by ${r.signal} after ${ms} ms]` : ''),
    maxRssKiB,
    ms,
  };
}

export interface Judged {
  /** What went wrong, per command. */
  problems: { cmd: Cmd; msg: string }[];
  /** detected: refused by our own checks; fsck: refused by the git fsck safety net; repaired: rewritten, nothing lost; accepted: a sound control. */
  outcome: 'detected' | 'fsck' | 'repaired' | 'accepted';
  ms: number;
  /** The largest peak RSS of the three runs (CLI only), KiB. */
  maxRssKiB: number;
}

const names = (files: string[]) => files.map((f) => path.basename(f));

/** Does a report line name one of the variant's files and an offset? */
function namesFileAndOffset(line: string, files: string[]): boolean {
  return names(files).some((n) => line.includes(n)) && /at offset \d+/.test(line);
}

export async function tryVariant(
  v: Variant,
  run: (args: string[], cwd: string) => Run | Promise<Run>,
  pristineSet: Map<FixtureName, string[]>,
): Promise<Judged> {
  const t0 = Date.now();
  const repo = scratchGitDir(fixturePath(v.fixture), FIXTURES[v.fixture].gitDir, v.fixture);
  const problems: Judged['problems'] = [];
  let outcome: Judged['outcome'] = 'detected';
  let cmd: Cmd = 'verify';
  const say = (m: string) => problems.push({ cmd, msg: `${v.name}: ${m}` });
  let maxRssKiB = 0;
  const bounded = (what: string, r: Run) => {
    maxRssKiB = Math.max(maxRssKiB, r.maxRssKiB ?? 0);
    if (r.stderr.includes('internal error')) say(`${what} crashed: ${r.stderr.trim()}`);
    if (r.ms !== undefined && r.ms > LIMIT_MS) say(`${what} took ${r.ms} ms`);
    if (r.maxRssKiB !== undefined && r.maxRssKiB > LIMIT_RSS_KIB)
      say(`${what} peaked at ${r.maxRssKiB} KiB`);
  };
  try {
    const objects = objectsDirOf(repo);
    const files = installVariant(repo, objects, v);
    // git itself is not run on a damaged repository (some variants make it allocate gigabytes):
    // what must survive a repack that succeeds is the pristine fixture's objects.
    const before = v.valid ? objectSet(repo) : pristineSet.get(v.fixture)!;
    const digest = treeDigest(repo);

    const ver = await run(['verify'], repo);
    bounded('verify', ver);
    if (v.valid) {
      if (ver.status !== 0 || ver.stderr !== '')
        say(`verify rejected a sound pack (${ver.status}): ${ver.stderr.trim()}`);
    } else {
      if (ver.status !== 1) say(`verify exited ${ver.status}, not 1: ${ver.stderr.trim()}`);
      const lines = ver.stderr.split('\n').filter(Boolean);
      if (lines.length === 0) say('verify reported nothing');
      for (const l of lines) {
        if (/^error: \.\.\. and \d+ more problems/.test(l)) continue;
        if (!/^error: .+ at offset \d+$/.test(l) || !namesFileAndOffset(l, files))
          say(`verify line without the file and offset: ${l}`);
      }
    }

    cmd = 'inspect';
    const ins = await run(['inspect'], repo);
    bounded('inspect', ins);
    if (ins.status !== 0) {
      if (v.valid) say(`inspect rejected a sound pack (${ins.status}): ${ins.stderr.trim()}`);
      else if (
        ins.status !== 128 ||
        !/^fatal: .+\n$/.test(ins.stderr) ||
        !namesFileAndOffset(ins.stderr, files)
      )
        say(
          `inspect failed without naming the file and offset (${ins.status}): ${ins.stderr.trim()}`,
        );
    }

    cmd = 'repack';
    // The full check: the corpus forges damage no CRC32 sees inside entries the rewrite copies
    // byte for byte, which the default check (`changed`: only what was written anew) does not
    // read again; test/repack.test.ts covers what the default must still refuse.
    const rep = await run(['-q', '--graph-compression=0', '--fsck=full'], repo);
    bounded('repack', rep);
    if (rep.status === 0) {
      outcome = v.valid ? 'accepted' : 'repaired';
      for (const p of integrityProblems(repo, before)) say(`repack succeeded but: ${p}`);
    } else {
      if (rep.stderr.includes('git fsck found problems')) outcome = 'fsck';
      if (v.valid) say(`repack rejected a sound pack (${rep.status}): ${rep.stderr.trim()}`);
      else if (
        rep.status !== 128 ||
        !rep.stderr.startsWith('fatal: ') ||
        !namesFileAndOffset(rep.stderr, files)
      )
        say(
          `repack failed without naming the file and offset (${rep.status}): ${rep.stderr.trim()}`,
        );
      const diff = digestDiff(digest, treeDigest(repo));
      if (diff.length > 0)
        say(`repack failed and changed the repository: ${diff.slice(0, 5).join('; ')}`);
    }
  } finally {
    dropScratch(repo);
  }
  return { problems, outcome, ms: Date.now() - t0, maxRssKiB };
}
