/**
 * Vitest-aware fixture copies: `useFixtureCopy(name)` inside a test returns
 * a private copy of the fixture that is deleted when the test finishes
 * (kept if REPACK_TS_KEEP_COPIES=1, for debugging).
 */
import { onTestFinished } from 'vitest';
import { copyFixture, removeCopy, type FixtureName } from '../fixtures/index.js';

export function useFixtureCopy(name: FixtureName): string {
  const repo = copyFixture(name);
  onTestFinished(() => {
    if (process.env.REPACK_TS_KEEP_COPIES !== '1') removeCopy(repo);
  });
  return repo;
}
