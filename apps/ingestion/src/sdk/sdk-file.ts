import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from '@pipeline/logger';

export interface SdkFile {
  body: Buffer;
  etag: string;
}

/** Loads the built SDK once at start-up; a missing file is logged and served as 404. */
export function loadSdkFile(path: string, logger: Logger): SdkFile | null {
  try {
    const body = readFileSync(path);
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
  } catch (error) {
    logger.warn('SDK file not found; /v1/sdk.js answers 404 until it is built', {
      path,
      error: (error as Error).message,
    });
    return null;
  }
}
