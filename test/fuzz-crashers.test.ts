/**
 * Fuzz cases that found bugs (P1 parseIdx allocating for a damaged fanout's count, P2 verify
 * stopping on an idx offset out of range), kept as regression tests: each must give no finding.
 * docs/reliability.md tells each story.
 */
import { describe, expect, it } from 'vitest';
import { replay } from '../scripts/reliability/fuzz.mjs';
import type { FixtureName } from './fixtures/index.js';
import { fuzzSources } from './helpers/fuzz-sources.js';
import { pinProcessEnv } from './helpers/hostile-run.js';

pinProcessEnv();

const CRASHERS: { source: FixtureName; seed: number; bug: string }[] = [
  {
    source: 'sha256',
    seed: 113,
    bug: 'P1: one byte inserted in the fanout; parseIdx allocated Float64Array(count) for a count of ~2^32',
  },
  { source: 'large-offset', seed: 270, bug: 'P1: nine bytes deleted in the fanout' },
  {
    source: 'ref-delta',
    seed: 132,
    bug: 'P2: an idx offset set past the pack (checksum fixed): Pack.scan threw out of verify',
  },
  { source: 'large-offset', seed: 145, bug: 'P2: a 64-bit offset table entry overwritten' },
  { source: 'basic', seed: 176, bug: 'P2: an offset overwritten with 0x7fffffff' },
];

describe('fuzz crashers replayed', () => {
  for (const c of CRASHERS) {
    it(`${c.source} seed ${c.seed} (${c.bug})`, async () => {
      const src = fuzzSources().find((s) => s.name === c.source)!;
      const f = await replay(src, c.seed, process.env.REPACK_TS_DIST);
      expect(f === undefined ? 'no finding' : `${f.kind}: ${f.message.split('\n')[0]}`).toBe(
        'no finding',
      );
    }, 60_000);
  }
});
