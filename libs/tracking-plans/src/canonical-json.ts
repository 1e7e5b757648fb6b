import { createHash } from 'node:crypto';
import type { TrackingPlan } from './plan-document';

/**
 * JSON text with every object's keys sorted (by UTF-16 code units, as Array.prototype.sort
 * does) and no whitespace; arrays keep their order, as JSON Schema gives it meaning
 * (`prefixItems`, `enum` read in order by people). Written directly rather than by rebuilding
 * objects, so a key such as `__proto__` is carried as data. Keys whose value is undefined are
 * left out, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`${typeof value} has no JSON form`);
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(',')}}`;
}

/** The plan's content hash: sha256 (hex) of its canonical JSON, the same whatever its key order. */
export const planHash = (plan: TrackingPlan): string =>
  createHash('sha256').update(canonicalJson(plan), 'utf8').digest('hex');
