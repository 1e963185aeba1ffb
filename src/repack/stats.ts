import { typeName } from '../format/object-type.js';

/** What a rewrite did, by entry (`--json`'s stats). */
export interface TypeCounts {
  commit: number;
  tree: number;
  blob: number;
  tag: number;
}

export interface RewriteStats {
  objects: number;
  copied: number;
  reencoded: TypeCounts;
  whole: number;
  loose: number;
  duplicatesDropped: number;
  excluded: number;
  bytesIn: number;
  bytesOut: number;
}

export function countType(c: TypeCounts, type: number, by: number): void {
  const n = typeName(type);
  if (n === 'commit' || n === 'tree' || n === 'blob' || n === 'tag') c[n] += by;
}
