/**
 * The script that runs first in every function version's context, before the tenant's module.
 * It evaluates to a factory that takes the module's namespace and returns the batch runner; the
 * host keeps both as References, so nothing of them is reachable from the guest's global.
 *
 * It captures the intrinsics it uses before tenant code runs: a function that replaces
 * `Array.prototype.push` or `JSON.stringify` can only spoil its own results, which the host checks
 * again anyway (sandbox-host.ts).
 *
 * Runner arguments: `(events, ctx, caps)` with caps `{maxOutputEvents, maxOutputBytesPerEvent,
 * maxLogLines, maxLogBytes, maxMessageBytes}`. It returns
 * `{results, logs, logsDropped}` where each result is the contract's EventResult.
 */
export const guestBootstrap = String.raw`
(() => {
  'use strict';
  const G = globalThis;
  const ObjectKeys = Object.keys;
  const getPrototypeOf = Object.getPrototypeOf;
  const defineProperty = Object.defineProperty;
  const ObjectCreate = Object.create;
  const freeze = Object.freeze;
  const isArray = Array.isArray;
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const stringify = JSON.stringify;
  const StringCtor = String;
  const isFinite = Number.isFinite;
  const apply = Reflect.apply;

  // What the host must never find in the guest, in case a future isolated-vm default adds any.
  for (const name of ['ivm', '_ivm', 'require', 'process', 'global', 'setTimeout', 'setInterval',
    'setImmediate', 'queueMicrotask', 'fetch', 'WebAssembly']) {
    try { delete G[name]; } catch {}
  }

  let caps = { maxLogLines: 0, maxLogBytes: 0, maxMessageBytes: 1024 };
  let current = -1;
  let logs = [];
  let logBytes = 0;
  let logsDropped = 0;

  // No TextEncoder in a bare isolate: UTF-8 length from the UTF-16 units (a surrogate half counts 2, a pair 4).
  const utf8Bytes = (text) => {
    let bytes = 0;
    for (let i = 0; i < text.length; i += 1) {
      const unit = text.charCodeAt(i);
      bytes += unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit < 0xe000) ? 2 : 3;
    }
    return bytes;
  };

  const cap = (text, max) => (text.length > max ? text.slice(0, max) + '…' : text);

  const show = (value) => {
    if (typeof value === 'string') return value;
    try {
      if (value instanceof Error) return StringCtor(value.name) + ': ' + StringCtor(value.message);
      const text = stringify(value, (_k, v) => (typeof v === 'bigint' ? StringCtor(v) + 'n' : v));
      return text === undefined ? StringCtor(value) : text;
    } catch {
      try { return StringCtor(value); } catch { return '[unprintable]'; }
    }
  };

  const logger = (level) => (...args) => {
    if (logs.length >= caps.maxLogLines) { logsDropped += 1; return; }
    let message = '';
    for (let i = 0; i < args.length; i += 1) {
      if (i > 0) message += ' ';
      message += show(args[i]);
      // A single argument can be huge: stop building once the line cannot fit anyway.
      if (message.length > caps.maxLogBytes) break;
    }
    const bytes = utf8Bytes(message);
    if (logBytes + bytes > caps.maxLogBytes) { logsDropped += 1; return; }
    logBytes += bytes;
    logs[logs.length] = { event: current, level, message };
  };
  const console = freeze({ log: logger('log'), info: logger('info'), warn: logger('warn'), error: logger('error') });
  defineProperty(G, 'console', { value: console, writable: false, enumerable: false, configurable: false });

  const describeError = (error) => {
    try {
      if (error !== null && (typeof error === 'object' || typeof error === 'function')) {
        const name = error.name;
        const message = error.message;
        if (typeof message === 'string')
          return cap((typeof name === 'string' && name ? name + ': ' : '') + message, caps.maxMessageBytes);
      }
      return cap('thrown: ' + show(error), caps.maxMessageBytes);
    } catch {
      return 'a value that cannot be described was thrown';
    }
  };

  class Invalid { constructor(message) { this.message = message; } }

  // A deep copy that keeps only what JSON can carry, made in the guest so a getter, a cycle or a
  // proxy fails this event here (under the batch's timeout) instead of the copy out of the isolate.
  // It counts UTF-16 units of strings and keys: UTF-8 is never shorter, so a count over the limit
  // proves the JSON is over it before the host measures exactly. The path to a value is kept as
  // raw keys in 'trail' and written out only for an error: building it for every value doubled
  // the cost of an identity function.
  const where = (trail, depth) => {
    let text = trail[0];
    for (let i = 1; i <= depth; i += 1) {
      const step = trail[i];
      text += typeof step === 'number' ? '[' + step + ']' : '.' + step;
    }
    return text;
  };
  const plain = (value, trail, depth, budget) => {
    switch (typeof value) {
      case 'string':
        budget.units += value.length;
        if (budget.units > budget.max) throw new Invalid(trail[0] + ' is larger than ' + budget.max + ' bytes');
        return value;
      case 'number':
        if (!isFinite(value)) throw new Invalid(where(trail, depth) + ' is ' + StringCtor(value) + ', which JSON cannot carry');
        return value;
      case 'boolean':
        return value;
      case 'object':
        break;
      default:
        throw new Invalid(where(trail, depth) + ' is a ' + typeof value + ', which JSON cannot carry');
    }
    if (value === null) return null;
    if (depth > 64) throw new Invalid(where(trail, depth) + ' is nested more than 64 levels deep (or is a cycle)');
    if (isArray(value)) {
      if (getPrototypeOf(value) !== ArrayProto) throw new Invalid(where(trail, depth) + ' is not a plain array');
      const out = [];
      const n = value.length;
      for (let i = 0; i < n; i += 1) {
        const item = value[i];
        trail[depth + 1] = i;
        out[i] = item === undefined ? null : plain(item, trail, depth + 1, budget);
      }
      return out;
    }
    const proto = getPrototypeOf(value);
    if (proto !== ObjectProto && proto !== null) throw new Invalid(where(trail, depth) + ' is not a plain object');
    // No prototype, so no setter (a __proto__ key, or one the tenant put on Object.prototype) is
    // hit by the assignments; the copy out of the isolate gives the host ordinary objects.
    const out = ObjectCreate(null);
    const keys = ObjectKeys(value);
    for (let i = 0; i < keys.length; i += 1) {
      const key = keys[i];
      const item = value[key];
      if (item === undefined) continue;
      budget.units += key.length;
      trail[depth + 1] = key;
      out[key] = plain(item, trail, depth + 1, budget);
    }
    return out;
  };

  const deepFreeze = (value) => {
    if (value !== null && typeof value === 'object') {
      for (const key of ObjectKeys(value)) deepFreeze(value[key]);
      freeze(value);
    }
    return value;
  };

  return (namespace) => {
    const transform = typeof namespace.transform === 'function' ? namespace.transform
      : typeof namespace.default === 'function' ? namespace.default : undefined;
    return {
      run(events, ctx, limits) {
        caps = limits;
        logs = [];
        logBytes = 0;
        logsDropped = 0;
        const frozenCtx = deepFreeze(ctx);
        const results = [];
        for (let i = 0; i < events.length; i += 1) {
          current = i;
          if (transform === undefined) {
            results[i] = { result: 'error', code: 'function_error', message: 'the module exports no transform function (named or default)' };
            continue;
          }
          let output;
          try {
            output = apply(transform, undefined, [events[i], frozenCtx]);
          } catch (error) {
            results[i] = { result: 'error', code: 'function_error', message: describeError(error) };
            continue;
          }
          try {
            if (output === null || output === undefined) { results[i] = { result: 'dropped' }; continue; }
            const list = isArray(output) ? output : [output];
            if (list.length > limits.maxOutputEvents)
              throw new Invalid('returned ' + list.length + ' events; at most ' + limits.maxOutputEvents + ' are allowed');
            const out = [];
            for (let k = 0; k < list.length; k += 1) {
              const item = list[k];
              if (item === null || typeof item !== 'object' || isArray(item))
                throw new Invalid('output ' + k + ' is not an object');
              out[k] = plain(item, ['output[' + k + ']'], 0, { units: 0, max: limits.maxOutputBytesPerEvent });
            }
            results[i] = { result: 'ok', events: out };
          } catch (error) {
            const message = error instanceof Invalid ? cap(error.message, caps.maxMessageBytes) : describeError(error);
            results[i] = { result: 'error', code: 'function_output_invalid', message };
          }
        }
        current = -1;
        return { results, logs, logsDropped };
      },
      // After a timeout: what was logged before the loop was stopped.
      takeLogs() {
        return { logs, logsDropped };
      },
    };
  };
})()
`;
