import { spawn } from 'node:child_process';
import { KilledBySignal, killOnSignal, pipeToChild } from '../../cleanup.js';
import { GitError, systemError } from '../../errors.js';
import type { HashObjectOptions } from './hash-object.js';

/**
 * What hash-object does not imitate (filters, ident, encodings, warnings) goes to `git
 * hash-object` itself, one item at a time.
 */

/** A delegated `git hash-object` failed: its stderr and exit code are the command's. */
export class DelegatedGitFailed extends Error {
  constructor(
    readonly status: number,
    readonly stderr: string,
  ) {
    super(stderr.trim() || `git hash-object exited with ${status}`);
    this.name = 'DelegatedGitFailed';
  }
}

export interface Delegation {
  args: string[];
  input: Buffer | 'stdin';
}

/** A git run to its end: its output, or why it could not start. */
interface GitRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  error?: Error;
}

/** git with `stdin` (a descriptor it shares, or bytes), without holding the event loop. */
function runGit(
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; stdin: number | Buffer },
): Promise<GitRun> {
  return new Promise((resolve) => {
    const child = killOnSignal(
      spawn('git', args, {
        cwd: o.cwd,
        env: o.env,
        stdio: [typeof o.stdin === 'number' ? o.stdin : 'pipe', 'pipe', 'pipe'],
      }),
    );
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    // A SIGPIPE from writing into a git that stopped reading is that pipe's: its exit says why.
    const pipeClosed = typeof o.stdin === 'number' ? () => undefined : pipeToChild();
    if (typeof o.stdin !== 'number') {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(o.stdin);
    }
    const done = (status: number | null, signal: NodeJS.Signals | null, error?: Error): void =>
      // The signal, raised during a write, is handled at a later turn: the pipe stays ours until then.
      void setImmediate(() => {
        pipeClosed();
        resolve({
          status,
          signal,
          stdout: Buffer.concat(out),
          stderr: Buffer.concat(err),
          ...(error ? { error } : {}),
        });
      });
    child.on('error', (e) => done(null, null, e));
    child.on('close', (status, signal) => done(status, signal));
  });
}

/**
 * Runs `git hash-object` for one item: git converts it exactly as it would. Not spawnSync: git
 * may wait on our standard input, and a signal to us must reach it (killOnSignal) meanwhile.
 */
export async function runHashObject(
  d: Delegation,
  o: Pick<HashObjectOptions, 'cwd' | 'env' | 'gitDir' | 'write' | 'stdinFd'>,
): Promise<{ id: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...o.env };
  if (o.gitDir !== undefined) env.GIT_DIR = o.gitDir;
  const full = ['hash-object', ...(o.write ? ['-w'] : []), ...d.args];
  const r = await runGit(full, {
    cwd: o.cwd,
    env,
    stdin: d.input === 'stdin' ? (o.stdinFd ?? 0) : d.input,
  });
  if (r.error) throw systemError('io', 'cannot run git hash-object', r.error);
  const stderr = r.stderr.toString('utf8');
  if (r.signal !== null) throw new KilledBySignal('git hash-object', r.signal);
  if (r.status !== 0) throw new DelegatedGitFailed(r.status ?? 128, stderr);
  return { id: r.stdout.toString('latin1').trim(), stderr };
}
