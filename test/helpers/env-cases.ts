/** Shared by the issue 31 matrices (env-setup, env-config): cases written relative to a playground root. */
import fs from 'node:fs';
import path from 'node:path';

export type Env = Record<string, string | undefined>;

/** A case's environment with `@` standing for the playground's root. */
export function rooted(env: Env, root: string): Env {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v?.replace(/@/g, root)]));
}

export function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}
