import { deflateSync } from 'node:zlib';
import { storedZlib } from '../format/zlib-stored.js';

/** Deflates at a zlib level; level 0 is written directly as stored blocks, exactly as zlib would. */
export function deflateAt(data: Uint8Array, level: number): Buffer {
  if (level === 0) return storedZlib(data);
  // Room for the whole stream in one chunk (deflate can exceed its input by a few bytes per block).
  return deflateSync(data, { level, chunkSize: Math.max(64, data.length + (data.length >> 8) + 64) });
}
