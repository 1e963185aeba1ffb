import { constants } from 'node:zlib';
import { deflateReused } from '../codec/deflate.js';
import { storedZlib } from '../codec/zlib.js';
import { FIXED_HUFFMAN } from './levels.js';

/**
 * Deflates at a zlib level; level 0 is written directly as stored blocks, exactly as zlib would;
 * FIXED_HUFFMAN is level 6 with fixed Huffman codes only.
 */
export function deflateAt(data: Uint8Array, level: number): Buffer {
  if (level === 0) return storedZlib(data);
  if (level === FIXED_HUFFMAN) return deflateReused(data, 6, constants.Z_FIXED);
  return deflateReused(data, level);
}
