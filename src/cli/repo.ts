import { discoverRepository, type Repository } from '../store/repo.js';
import type { CliContext } from './main.js';

/** The repository a command runs in, found and checked as git finds it (store/setup.ts). */
export function openRepository(ctx: CliContext): Repository {
  return discoverRepository({
    cwd: ctx.cwd,
    gitDir: ctx.gitDir,
    env: ctx.io.env,
    euid: euidOf(ctx),
  });
}

/** geteuid(); a platform without one (Windows) reports owner 0 for every file, so 0 owns them all. */
export function euidOf(ctx: CliContext): number {
  return ctx.io.euid ?? 0;
}
