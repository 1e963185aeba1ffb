import { parentPort } from 'node:worker_threads';
import { hashAlgoByName } from '../../hash/algo.js';
import { BlobPreHasher, preHashShared, splitPaths, type SharedBatch } from './pre-hash.js';

/** The second core's share of `--stdin-paths` pre-hashing (pre-hash.ts): chunks from a shared counter. */

const hashers = new Map<string, BlobPreHasher>();

parentPort!.on('message', (b: SharedBatch) => {
  let hasher = hashers.get(b.algo);
  if (hasher === undefined)
    hashers.set(b.algo, (hasher = new BlobPreHasher(hashAlgoByName(b.algo)!)));
  preHashShared(hasher, splitPaths(b.targets), b);
});
