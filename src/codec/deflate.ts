import zlib from 'node:zlib';
import { deflateBound } from '../format/zlib-stored.js';
import { nativeEngine, type NativeHandle } from './zlib.js';

/** What the native engine of a Deflate stream does beyond an inflater's (src/node_zlib.cc). */
interface DeflateHandle extends NativeHandle {
  params(level: number, strategy: number): void;
}

const { Z_FINISH, Z_DEFAULT_STRATEGY } = zlib.constants;

/**
 * One deflate engine per thread, reset and given its level for each stream, instead of
 * `zlib.deflateSync`, which builds a stream object and a fresh engine (deflateInit: ~270 KiB of
 * window and hash tables) per call: the loose objects of a repack are deflated one by one. After
 * deflateReset, deflateParams sets what deflateInit2 would (zlib skips the flush before any
 * input), so the stream is byte for byte `deflateSync`'s (test/format.test.ts compares them).
 */
class Deflater {
  private readonly stream = new zlib.Deflate();
  private readonly engine = nativeEngine<DeflateHandle>(this.stream);
  private error: string | undefined;

  constructor() {
    if (this.engine !== undefined) this.engine.handle.onerror = (m) => void (this.error = m);
  }

  deflate(data: Uint8Array, level: number, strategy: number): Buffer {
    const e = this.engine;
    if (e === undefined || typeof e.handle.params !== 'function')
      return zlib.deflateSync(data, { level, strategy, chunkSize: deflateBound(data.length) });
    e.handle.reset();
    this.error = undefined;
    e.handle.params(level, strategy);
    // zlib's compressBound: room for the whole stream in one call, at any level
    const out = Buffer.allocUnsafeSlow(deflateBound(data.length));
    e.handle.writeSync(Z_FINISH, data, 0, data.length, out, 0, out.length);
    if (this.error !== undefined || e.state[0] === 0 || e.state[1] !== 0)
      throw new Error(`deflate failed: ${this.error ?? 'no room for the stream'}`);
    return out.subarray(0, out.length - e.state[0]!);
  }
}

let shared: Deflater | undefined;

/** `data` deflated at zlib `level` (1-9, -1) with `strategy`, as `zlib.deflateSync` writes it. */
export function deflateReused(
  data: Uint8Array,
  level: number,
  strategy: number = Z_DEFAULT_STRATEGY,
): Buffer {
  return (shared ??= new Deflater()).deflate(data, level, strategy);
}
