/// <reference types="node" preserve="true" />
// (The declarations name Buffer and NodeJS: a consumer with `types: []`, the default of TypeScript 7,
// gets them from this reference; TypeScript 5.5+ keeps it in dist/index.d.ts only with preserve.)
/**
 * git-repack-ts as a library: `import { inspect, repack, verify, hashObject, walk, zstdExport,
 * zstdImport } from 'git-repack-ts'` (docs/api.md). Each function resolves to exactly the object
 * its command prints with `--json` (the CLI prints what these return) and rejects only with
 * GitRepackError. None of them writes to stdout or stderr, reads argv or exits: progress and
 * warnings are callbacks.
 */
export { inspect, type InspectOptions, type InspectReport } from './api/inspect.js';
export { repack, type RepackOptions } from './api/repack.js';
export { verify, type VerifyOptions, type VerifyReport } from './api/verify.js';
export { hashObject, type HashObjectOptions } from './api/hash-object.js';
export { walk, type WalkOptions } from './api/walk.js';
export {
  zstdExport,
  zstdImport,
  type ZstdExportOptions,
  type ZstdImportOptions,
} from './api/zstd.js';
export type { ProgressCallback } from './api/common.js';
export { GitRepackError, type ErrorCode } from './errors.js';

export type { InspectResult, PackCensus, TypeCensus } from './commands/inspect.js';
export type { PartitionResult, RepackResult } from './commands/repack.js';
export type { VerifyPackResult } from './commands/verify.js';
export type { WalkResult } from './commands/walk.js';
export type { ExportResult } from './commands/zstd.js';
export type { HeadUpdate, ImportResult, RefUpdate } from './commands/zstd-import.js';
export type { RewriteStats, TypeCounts } from './repack/rewrite.js';
export type { Level } from './repack/levels.js';
export type { FsckMode } from './store/fsck.js';
export type { ScanProblem } from './store/pack-scan.js';
