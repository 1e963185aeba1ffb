// Types of mutate.mjs for the TypeScript tests that use it.
import type { FuzzPlan, FuzzSource } from './fuzz.mjs';

export interface LoadedSource extends FuzzSource {
  bytes: { pack: Buffer; idx: Buffer; rev: Buffer | undefined };
  hashLen: number;
}

export function prng(seed: number): {
  u32(): number;
  int(n: number): number;
  pick<T>(a: readonly T[]): T;
};
export function loadSource(src: FuzzSource): LoadedSource;
export function planCase(seed: number, s: LoadedSource): Required<FuzzPlan>;
export function applyOps(buf: Buffer, ops: Record<string, unknown>[]): Buffer;
export function materialise(
  s: LoadedSource,
  plan: FuzzPlan,
  dir: string,
  baseName?: string,
): { base: string; changed: boolean };
