// `npm pack` (prepack) builds dist/ from nothing, so a tarball never carries the output of a
// source file that has since been removed.
import { rmSync } from 'node:fs';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
