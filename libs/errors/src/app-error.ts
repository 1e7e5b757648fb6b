/**
 * An error as a value: a stable machine-readable code, the HTTP status it maps to, and a
 * message for people. Each service has one handler that renders these in its documented body.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}
