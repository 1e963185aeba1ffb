import zlib from 'node:zlib';
import { nativeEngine, type NativeHandle } from './zlib.js';

/*
 * `zlib.deflateSync` for one small stream, without the stream object around the engine.
 * `deflateSync` builds a Deflate Transform (ZlibBase, Duplex, its options checked) per call; on
 * the ~1,400 loose objects of a 200-commit fetch that construction cost as much as the deflating
 * (jq profile: 46 of 127 ms). Here the native handle is made and initialised as the Zlib
 * constructor does (lib/zlib.js: `new binding.Zlib(mode)`, `handle.init(windowBits, level,
 * memLevel, strategy, writeState, …)`), written once with Z_FINISH as `processChunkSync` does,
 * and closed: a fresh engine per stream, so the bytes are deflateSync's own. (An engine reused
 * with deflateReset is not: its window keeps the last stream's bytes, which longest_match may
 * read past the lookahead; docs/decisions.md.)
 */

interface DeflateHandle extends NativeHandle {
  init(
    windowBits: number,
    level: number,
    memLevel: number,
    strategy: number,
    writeState: Uint32Array,
    processCallback: () => void,
    dictionary: undefined,
  ): void;
  close(): void;
}

type HandleClass = new (mode: number) => DeflateHandle;

const { Z_FINISH, Z_DEFAULT_WINDOWBITS, Z_DEFAULT_MEMLEVEL, DEFLATE } = zlib.constants as Record<
  string,
  number
> as {
  Z_FINISH: number;
  Z_DEFAULT_WINDOWBITS: number;
  Z_DEFAULT_MEMLEVEL: number;
  DEFLATE: number;
};

/** The native handle's class, from one Deflate stream; null where this runtime has none. */
let handleClass: HandleClass | null | undefined;

function nativeClass(): HandleClass | null {
  if (handleClass !== undefined) return handleClass;
  const s = new zlib.Deflate();
  const e = nativeEngine<DeflateHandle>(s);
  const ok =
    e !== undefined &&
    typeof e.handle.init === 'function' &&
    typeof e.handle.close === 'function' &&
    typeof DEFLATE === 'number';
  handleClass = ok ? (e.handle.constructor as HandleClass) : null;
  s.close();
  return handleClass;
}

const state = new Uint32Array(2);
const ignore = (): void => {};

/**
 * `zlib.deflateSync(data, { level, strategy, chunkSize })`, byte for byte, when the stream fits in
 * `chunkSize` bytes (the caller sizes it so); otherwise, and where there is no native handle,
 * deflateSync itself.
 */
export function deflateOnce(
  data: Uint8Array,
  level: number,
  strategy: number,
  chunkSize: number,
): Buffer {
  const H = nativeClass();
  if (H !== null) {
    const h = new H(DEFLATE);
    let error = false;
    h.onerror = () => {
      error = true;
    };
    try {
      h.init(Z_DEFAULT_WINDOWBITS, level, Z_DEFAULT_MEMLEVEL, strategy, state, ignore, undefined);
      const out = Buffer.allocUnsafe(chunkSize);
      h.writeSync(Z_FINISH, data, 0, data.length, out, 0, out.length);
      // room left and all input taken: Z_STREAM_END (processChunkSync stops there too)
      if (!error && state[0]! > 0 && state[1] === 0) return out.subarray(0, out.length - state[0]!);
    } finally {
      h.close();
    }
  }
  return zlib.deflateSync(data, { level, strategy, chunkSize });
}
