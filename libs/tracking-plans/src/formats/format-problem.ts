/** Why a plan in another tool's format was not brought over (or not written out). */
export interface FormatProblem {
  /** `invalid_input`: not the format at all; `not_mappable`: valid there, with no equivalent here. */
  code: 'invalid_input' | 'not_mappable';
  /** JSON Pointer into the input (for YAML: `/<file index>/<path in the document>`). */
  path: string;
  message: string;
}

export type FormatResult<T> = { ok: true; value: T } | { ok: false; problems: FormatProblem[] };

export const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);
