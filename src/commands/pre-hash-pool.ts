import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { HashAlgo } from '../hash/algo.js';
import { BlobPreHasher, joinPaths, preHashShared, sharedBatch, sharedResult, type PreHashed } from './pre-hash.js';

/**
 * Pre-hashing on this thread and, for batches large enough to pay for a thread's start (~20 ms),
 * on a second one: both take chunks from one counter, so whichever is faster does more, and this
 * thread never waits for the other to start.
 */

/** Paths below which a second thread is not started (its start-up costs more than it saves). */
const WORKER_MIN_PATHS = 512;

export class PreHashPool {
  private readonly hasher: BlobPreHasher;
  private worker: Worker | undefined;

  constructor(private readonly algo: HashAlgo) {
    this.hasher = new BlobPreHasher(algo);
  }

  /** Results by index: undefined where the path is to be hashed in order. */
  run(targets: Buffer[]): (PreHashed | undefined)[] {
    const batch = sharedBatch(targets.length, this.algo.len);
    if (targets.length >= WORKER_MIN_PATHS && availableParallelism() > 1) {
      this.worker ??= this.start();
      this.worker.postMessage({ joined: joinPaths(targets), batch });
    }
    preHashShared(this.hasher, targets, batch);
    return targets.map((_, i) => sharedResult(batch, i));
  }

  private start(): Worker {
    const w = new Worker(new URL('./pre-hash-worker.js', import.meta.url), { workerData: { algo: this.algo.name } });
    w.unref();
    w.on('error', () => {}); // its paths are then hashed in order (sharedResult)
    return w;
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}
