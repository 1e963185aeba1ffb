import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { HashAlgo } from '../../hash/algo.js';
import {
  BlobPreHasher,
  preHashShared,
  sharedBatch,
  sharedResults,
  splitPaths,
  type PreHashed,
} from './pre-hash.js';

/**
 * Pre-hashing on this thread and, for batches large enough to pay for a thread's start (~20 ms),
 * on a second one: both take chunks from one counter, so whichever is faster does more, and this
 * thread never waits for the other to start.
 */

/** Paths below which a second thread is not started (its start-up costs more than it saves). */
export const WORKER_MIN_PATHS = 512;
/** Paths below which a batch is not shared with a thread that is already running (the hand-off). */
const SHARE_MIN_PATHS = 64;

export class PreHashPool {
  private readonly hashers = new Map<string, BlobPreHasher>();
  private worker: Worker | undefined;

  /** Starts the second thread now (when the input is known to be long): it starts while this one works. */
  startWorker(): void {
    if (availableParallelism() > 1) this.worker ??= this.start();
  }

  /** Results by index for the targets of joinTargets: undefined where the path is to be hashed in order. */
  run(algo: HashAlgo, targets: Uint8Array): (PreHashed | undefined)[] {
    const paths = splitPaths(targets);
    const batch = sharedBatch(algo, targets, paths.length);
    if (paths.length >= WORKER_MIN_PATHS) this.startWorker();
    if (this.worker !== undefined && paths.length >= SHARE_MIN_PATHS)
      this.worker.postMessage(batch);
    let hasher = this.hashers.get(algo.name);
    if (hasher === undefined) this.hashers.set(algo.name, (hasher = new BlobPreHasher(algo)));
    preHashShared(hasher, paths, batch);
    return sharedResults(batch, paths.length);
  }

  private start(): Worker {
    const w = new Worker(new URL('./pre-hash-worker.js', import.meta.url));
    w.unref();
    w.on('error', () => {}); // its paths are then hashed in order (sharedResults)
    return w;
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
