import { AppError } from '@pipeline/errors';
import { invalidField } from '../http/api-errors';

/** A function's code, in UTF-8 bytes: 64 KiB (docs/management-api.md#functions). */
export const MAX_CODE_BYTES = 64 * 1024;
export const functionNameMaxLength = 200;
export const functionDescriptionMaxLength = 2000;
/** Pasted events one test call runs on. */
export const MAX_TEST_EVENTS = 100;
/** Debugger events one test call runs on. */
export const MAX_TEST_DEBUGGER_EVENTS = 50;
export const DEFAULT_TEST_DEBUGGER_EVENTS = 10;

/** U+0000, or a surrogate without its pair: PostgreSQL's text would not store it as given. */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what must be found.
const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A name or description as stored: exactly as given, or 400 `validation_failed` naming the field. */
export function checkText(value: string, path: string, maxLength: number, blankAllowed: boolean): string {
  if (!blankAllowed && value.trim() === '') throw invalidField(path, 'must not be blank');
  if (value.length > maxLength) throw invalidField(path, `must be at most ${maxLength} characters`);
  if (unstorable.test(value)) throw invalidField(path, 'must not contain U+0000 or an unpaired surrogate');
  return value;
}

/**
 * Code as stored, byte for byte: not blank, at most MAX_CODE_BYTES of UTF-8, and storable.
 * Otherwise 400 `validation_failed` naming the field, like every other field of the API.
 */
export function checkCode(code: string, path: string): string {
  if (code.trim() === '') throw invalidField(path, 'must not be blank');
  if (Buffer.byteLength(code, 'utf8') > MAX_CODE_BYTES)
    throw invalidField(path, `must be at most ${MAX_CODE_BYTES} bytes of UTF-8`);
  if (unstorable.test(code)) throw invalidField(path, 'must not contain U+0000 or an unpaired surrogate');
  return code;
}

export const functionNotFound = (id: string) => new AppError(404, 'not_found', `No function with id ${id}`);

export const functionVersionNotFound = (id: string) =>
  new AppError(404, 'function_version_not_found', `No published function version with id ${id}`);
