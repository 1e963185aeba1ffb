import v8 from 'node:v8';
import vm from 'node:vm';

let gc: (() => void) | undefined | null;

/**
 * A full garbage collection between phases of a large job. With a tiny JS heap and hundreds of
 * megabytes of short-lived buffers outside it, V8 may not collect before the next phase
 * allocates, and the peak RSS adds the two; collecting here keeps the peak at the larger one.
 */
export function collectGarbage(): void {
  if (gc === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      gc = vm.runInNewContext('gc') as () => void;
    } catch {
      gc = null;
    }
  }
  gc?.();
}
