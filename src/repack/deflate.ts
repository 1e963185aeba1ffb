import { constants, deflateSync } from 'node:zlib';
import { storedZlib } from '../codec/zlib.js';
import { FIXED_HUFFMAN } from './levels.js';

/**
 * Deflates at a zlib level; level 0 is written directly as stored blocks, exactly as zlib would;
 * FIXED_HUFFMAN is level 6 with fixed Huffman codes only.
 */
export function deflateAt(data: Uint8Array, level: number): Buffer {
  if (level === 0) return storedZlib(data);
  // Room for the whole stream in one chunk (deflate can exceed its input by a few bytes per block).
  const chunkSize = Math.max(64, data.length + (data.length >> 8) + 64);
  if (level === FIXED_HUFFMAN)
    return deflateSync(data, { level: 6, strategy: constants.Z_FIXED, chunkSize });
  return deflateSync(data, { level, chunkSize });
}
