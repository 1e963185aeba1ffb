import { discoverRepository, type Repository } from '../store/repo.js';
import type { CliContext } from './main.js';

export function openRepository(ctx: CliContext): Repository {
  return discoverRepository({ cwd: ctx.cwd, gitDir: ctx.gitDir, env: ctx.io.env, euid: ctx.io.euid });
}
