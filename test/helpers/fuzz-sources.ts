/**
 * The sources of the mutation fuzzer (fixture packs) and the findings already known: shared by
 * test/fuzz.test.ts.
 */
import * as fs from 'node:fs';
import type { FuzzFinding, FuzzSource } from '../../scripts/reliability/fuzz.mjs';
import { FIXTURES, fixturePath, type FixtureName } from '../fixtures/index.js';
import { listPacks } from './git.js';

export const FUZZ_FIXTURES: FixtureName[] = [
  'basic',
  'ref-delta',
  'sha256',
  'idx-v1',
  'large-offset',
  'pack-v3',
];

export function fuzzSources(): FuzzSource[] {
  return FUZZ_FIXTURES.map((name) => {
    const pack = listPacks(fixturePath(name))[0]!;
    const base = pack.slice(0, -5);
    return {
      name,
      hash: FIXTURES[name].objectFormat === 'sha256' ? 'sha256' : 'sha1',
      pack,
      idx: base + '.idx',
      rev: fs.existsSync(base + '.rev') ? base + '.rev' : undefined,
    };
  });
}
