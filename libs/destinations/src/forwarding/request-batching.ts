/** What one request of a vendor endpoint may hold. */
export interface RequestLimits {
  /** Items (events, objects, records) per request. */
  maxItems: number;
  /** Bytes of the whole request body. */
  maxBodyBytes: number;
  /** Bytes of one item, where the vendor limits it separately (Segment 32 KB, OneSignal 2024 B). */
  maxItemBytes?: number;
}

/** Something to send: one event's items, which always travel in the same request. */
export interface Sized {
  itemCount: number;
  /** The serialized items, each followed by its separator. */
  bytes: number;
}

export interface Batches<T> {
  batches: T[][];
  /** Units that cannot fit any request of this endpoint. */
  oversized: { unit: T; why: string }[];
}

/**
 * Packs units into requests in order, each within the vendor's limits. `envelopeBytes` is
 * the body without any item (the JSON around the array, credentials in the body).
 */
export function packRequests<T extends Sized>(
  units: readonly T[],
  limits: RequestLimits,
  envelopeBytes: number,
  itemBytes: (unit: T) => readonly number[] = () => [],
): Batches<T> {
  const batches: T[][] = [];
  const oversized: { unit: T; why: string }[] = [];
  const room = limits.maxBodyBytes - envelopeBytes;
  let current: T[] = [];
  let count = 0;
  let bytes = 0;
  for (const unit of units) {
    const largest = Math.max(0, ...itemBytes(unit));
    if (limits.maxItemBytes !== undefined && largest > limits.maxItemBytes) {
      oversized.push({ unit, why: `an item of ${largest} bytes exceeds ${limits.maxItemBytes}` });
      continue;
    }
    if (unit.itemCount > limits.maxItems) {
      oversized.push({ unit, why: `${unit.itemCount} items exceed ${limits.maxItems} per request` });
      continue;
    }
    if (unit.bytes > room) {
      oversized.push({ unit, why: `${unit.bytes} bytes exceed ${room} per request` });
      continue;
    }
    if (current.length > 0 && (count + unit.itemCount > limits.maxItems || bytes + unit.bytes > room)) {
      batches.push(current);
      current = [];
      count = 0;
      bytes = 0;
    }
    current.push(unit);
    count += unit.itemCount;
    bytes += unit.bytes;
  }
  if (current.length > 0) batches.push(current);
  return { batches, oversized };
}
