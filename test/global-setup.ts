/**
 * vitest globalSetup: build every fixture repository once, before any test
 * file runs (already-complete fixtures are reused; see test/fixtures/index.ts).
 * The teardown checks that no test modified a pristine fixture; a modified
 * fixture is deleted (so the next run rebuilds it) and the run fails.
 */
import {
  buildAllFixtures,
  discardModifiedFixtures,
  fingerprintFixtures,
  FIXTURE_ROOT,
} from './fixtures/index.js';

export default function setup(): () => void {
  const started = Date.now();
  const built = buildAllFixtures();
  if (built.length > 0) {
    console.log(
      `fixtures: built ${built.join(', ')} in ${Date.now() - started} ms under ${FIXTURE_ROOT}`,
    );
  }
  const fingerprint = fingerprintFixtures();
  return () => {
    const changed = discardModifiedFixtures(fingerprint);
    if (changed.length > 0) {
      // vitest only logs errors thrown by a global teardown: fail the run explicitly too.
      process.exitCode = 1;
      throw new Error(
        `tests modified the pristine fixtures ${changed.join(', ')} (under ${FIXTURE_ROOT}); ` +
          'they were deleted and will be rebuilt. Use copyFixture()/useFixtureCopy() for anything that writes.',
      );
    }
  };
}
