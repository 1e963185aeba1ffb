/**
 * What each supported Node.js line offers for zstd, from Node's changelogs (not from our code):
 * node:zlib has zstd since 22.15 and its dictionary option since 22.19 and 24.6; the releases
 * tested (scripts/node-lines.mjs) are past both. And the line the tool must print where neither
 * node:zlib's zstd nor zstd-napi is there.
 */
import type { NodeLine } from '../../scripts/node-lines.mjs';

export const BUILT_IN_ZSTD: Record<NodeLine, boolean> = { 20: false, 22: true, 24: true };

/** The reason, after "fatal: " (and "cannot read <file>: " for a zstd pack), on a Node without zstd in node:zlib (`version`: "v20.20.2"). */
export function zstdMissing(version: string): string {
  return (
    `zstd is not available: this Node.js (${version}) has no zstd in node:zlib (22.15 and later have), ` +
    "and zstd-napi is not installed beside git-repack-ts (Cannot find module 'zstd-napi/binding'); " +
    'use Node.js 22.19 or later, or `npm install -g zstd-napi` beside git-repack-ts'
  );
}
