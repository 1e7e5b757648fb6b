/* eslint-disable no-console -- the browser console is the SDK's only channel to the site's developer */

const prefix = '[analytics]';

export interface Log {
  error(message: string, detail?: unknown): void;
  warn(message: string): void;
}

export const consoleLog: Log = {
  error: (message, detail) =>
    detail === undefined ? console.error(prefix, message) : console.error(prefix, message, detail),
  warn: (message) => console.warn(prefix, message),
};
