import { readFileSync } from 'node:fs';
import type { HashAlgo } from '../hash/algo.js';
import type { PackIndex } from '../format/idx.js';
import { parseRev, revPackChecksum } from '../format/rev.js';
import type { FsPath } from './fs-path.js';

/**
 * The pack order a `.rev` file gives, when it belongs to the pack (its checksum) and orders the
 * idx offsets; undefined otherwise: a bad `.rev` is not fatal for reading, git falls back too.
 */
export function revFileOrder(
  file: FsPath,
  shown: string,
  idx: PackIndex,
  count: number,
  algo: HashAlgo,
): Uint32Array | undefined {
  let order: Uint32Array;
  try {
    const buf = readFileSync(file);
    if (!revPackChecksum(buf, algo).equals(idx.packChecksum)) return undefined;
    order = parseRev(buf, count, algo, shown);
  } catch {
    return undefined;
  }
  const offs = idx.offsets;
  for (let i = 1; i < order.length; i++)
    if (offs[order[i]!]! <= offs[order[i - 1]!]!) return undefined;
  return order;
}
