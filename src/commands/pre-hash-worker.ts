import { parentPort, workerData } from 'node:worker_threads';
import { hashAlgoByName } from '../hash/algo.js';
import { BlobPreHasher, preHashShared, splitPaths, type SharedBatch } from './pre-hash.js';

/** The second core's share of `--stdin-paths` pre-hashing (pre-hash.ts): chunks from a shared counter. */

const hasher = new BlobPreHasher(hashAlgoByName((workerData as { algo: string }).algo)!);

parentPort!.on('message', (m: { joined: Uint8Array; batch: SharedBatch }) => {
  preHashShared(hasher, splitPaths(m.joined), m.batch);
});
