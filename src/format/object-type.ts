import { corrupt } from '../errors.js';
import { hashObjectBuffer, toHex, type HashAlgo } from '../hash/algo.js';
/** Pack entry type numbers (git's `enum object_type`). */
export const OBJ_COMMIT = 1;
export const OBJ_TREE = 2;
export const OBJ_BLOB = 3;
export const OBJ_TAG = 4;
export const OBJ_OFS_DELTA = 6;
export const OBJ_REF_DELTA = 7;

export type BaseType = typeof OBJ_COMMIT | typeof OBJ_TREE | typeof OBJ_BLOB | typeof OBJ_TAG;
export type EntryType = BaseType | typeof OBJ_OFS_DELTA | typeof OBJ_REF_DELTA;

export const TYPE_NAMES = [
  '',
  'commit',
  'tree',
  'blob',
  'tag',
  '',
  'ofs-delta',
  'ref-delta',
] as const;
export type TypeName = 'commit' | 'tree' | 'blob' | 'tag';

export function typeName(t: number): string {
  return TYPE_NAMES[t] ?? `unknown-${t}`;
}

export function typeFromName(name: string): BaseType | undefined {
  switch (name) {
    case 'commit':
      return OBJ_COMMIT;
    case 'tree':
      return OBJ_TREE;
    case 'blob':
      return OBJ_BLOB;
    case 'tag':
      return OBJ_TAG;
    default:
      return undefined;
  }
}

export function isDelta(t: number): boolean {
  return t === OBJ_OFS_DELTA || t === OBJ_REF_DELTA;
}

export function isBaseType(t: number): t is BaseType {
  return t >= OBJ_COMMIT && t <= OBJ_TAG;
}

/** Refuses an object whose data does not hash to the id at `want[pos]` (naming the file and offset it came from). */
export function checkObjectId(
  algo: HashAlgo,
  type: number,
  data: Uint8Array,
  want: Uint8Array,
  pos: number,
  file: string,
  offset: number,
): void {
  const got = hashObjectBuffer(algo, typeName(type), data);
  if (got.compare(want, pos, pos + algo.len) !== 0) {
    throw corrupt(
      'bad-object',
      file,
      offset,
      `object hashes to ${toHex(got)}, expected ${toHex(want, pos, algo.len)}`,
    );
  }
}
