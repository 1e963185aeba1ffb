/**
 * Runs the compiled CLI (`bin/git-repack-ts.js`, built by `npm test` before vitest) the way a
 * user would: a separate process, the pinned git environment, no shell.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitEnv } from './git.js';

export const BIN = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../bin/git-repack-ts.js',
);

export interface ToolResult {
  status: number;
  stdout: string;
  stderr: string;
  signal: NodeJS.Signals | null;
}

export function tool(
  args: string[],
  opts: { cwd: string; env?: Record<string, string | undefined>; input?: string | Buffer },
): ToolResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: opts.cwd,
    env: gitEnv(opts.env),
    input: opts.input,
    maxBuffer: 1 << 30,
    encoding: 'utf8',
  });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/** Runs the CLI and throws with its stderr unless it exits 0. */
export function toolOk(
  args: string[],
  opts: { cwd: string; env?: Record<string, string | undefined>; input?: string | Buffer },
): string {
  const r = tool(args, opts);
  if (r.status !== 0)
    throw new Error(`git-repack-ts ${args.join(' ')} exited ${r.status}\n${r.stderr}`);
  return r.stdout;
}
