// A memory limit for the guest, the way the Rust host has one (wasmtime
// `StoreLimits` with `trap_on_grow_failure`): the core module's own memory
// gets a maximum, so growing past it fails inside the guest, whose allocator
// then traps — the host discards the instance and returns the raw text.
//
// jco has no such option, so the limit is written into the core module's
// memory section before it is compiled. It also keeps the guest's memory
// under 2 GiB, past which jco's bindings read pointers as signed numbers.

/** 64 KiB wasm pages. */
const PAGE = 65536;

/** The largest limit: below 2 GiB, where jco's pointers stay positive. */
export const MAX_MEMORY_BYTES = 2 ** 31 - PAGE;

/** The default, as the Rust host's `Limits::DEFAULT_MEMORY_BYTES`. */
export const DEFAULT_MEMORY_BYTES = 256 * 2 ** 20;

function readU32(bytes, at) {
  let value = 0;
  let shift = 0;
  for (let i = at; i < bytes.length && i < at + 5; i += 1) {
    value += (bytes[i] & 0x7f) * 2 ** shift;
    shift += 7;
    if ((bytes[i] & 0x80) === 0) return { value, next: i + 1 };
  }
  throw new Error('toolprune: malformed LEB128 in a core module');
}

function writeU32(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

/**
 * `bytes` (a core wasm module) with every memory it defines limited to
 * `maxBytes` (rounded down to pages, never below a memory's minimum).
 * Modules without a memory section come back unchanged.
 */
export function limitMemory(bytes, maxBytes) {
  const wasm = new Uint8Array(bytes);
  if (wasm.length < 8 || wasm[0] !== 0 || wasm[1] !== 0x61 || wasm[2] !== 0x73 || wasm[3] !== 0x6d) {
    throw new Error('toolprune: not a core wasm module');
  }
  const limitPages = Math.max(1, Math.floor(Math.min(maxBytes, MAX_MEMORY_BYTES) / PAGE));
  let at = 8;
  while (at < wasm.length) {
    const id = wasm[at];
    const size = readU32(wasm, at + 1);
    const start = size.next;
    const end = start + size.value;
    if (id === 5) {
      const count = readU32(wasm, start);
      let p = count.next;
      const content = writeU32(count.value);
      for (let m = 0; m < count.value; m += 1) {
        const flags = wasm[p];
        if (flags > 1) return wasm; // shared or 64-bit memories: leave as they are
        const min = readU32(wasm, p + 1);
        p = min.next;
        let max = limitPages;
        if (flags === 1) {
          const declared = readU32(wasm, p);
          p = declared.next;
          max = Math.min(max, declared.value);
        }
        content.push(1, ...writeU32(min.value), ...writeU32(Math.max(max, min.value)));
      }
      if (p !== end) throw new Error('toolprune: unexpected memory section layout');
      const section = [5, ...writeU32(content.length), ...content];
      const out = new Uint8Array(wasm.length - (end - at) + section.length);
      out.set(wasm.subarray(0, at), 0);
      out.set(section, at);
      out.set(wasm.subarray(end), at + section.length);
      return out;
    }
    at = end;
  }
  return wasm;
}
