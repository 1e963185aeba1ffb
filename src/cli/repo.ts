import { discoverRepository, type Repository } from '../store/repo.js';
import { readPlainConfig } from '../commands/hash-object-config.js';
import type { CliContext } from './main.js';

/**
 * The repository a command runs in, its configuration read without a `git config` process when
 * every file git would read is plain (`readPlainConfig`: ~15 ms of each run here), else from git.
 */
export function openRepository(ctx: CliContext): Repository {
  return discoverRepository({ cwd: ctx.cwd, gitDir: ctx.gitDir, env: ctx.io.env, euid: ctx.io.euid, readConfig: readPlainConfig });
}
