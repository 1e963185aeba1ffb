import { constants } from 'node:zlib';
import { deflateOnce } from '../codec/deflate-once.js';
import { storedZlib } from '../codec/zlib.js';
import { FIXED_HUFFMAN } from './levels.js';

/**
 * Deflates at a zlib level; level 0 is written directly as stored blocks, exactly as zlib would;
 * FIXED_HUFFMAN is level 6 with fixed Huffman codes only. The bytes are `deflateSync`'s.
 */
export function deflateAt(data: Uint8Array, level: number): Buffer {
  if (level === 0) return storedZlib(data);
  // Room for the whole stream in one chunk (deflate can exceed its input by a few bytes per block).
  const chunkSize = Math.max(64, data.length + (data.length >> 8) + 64);
  if (level === FIXED_HUFFMAN) return deflateOnce(data, 6, constants.Z_FIXED, chunkSize);
  return deflateOnce(data, level, constants.Z_DEFAULT_STRATEGY, chunkSize);
}
