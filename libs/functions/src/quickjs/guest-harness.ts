/**
 * The code QuickJS evaluates in every context before the tenant's module: it installs `console`
 * and returns the batch runner. It captures every intrinsic it uses (JSON, Array.isArray,
 * String) before the tenant's code runs, so a module that replaces them changes nothing but its
 * own events' results; the host checks every output again (sizes, counts, JSON) whatever the
 * harness says, because the harness runs inside the sandbox and can be fooled.
 *
 * The runner returns one string for the whole batch (one crossing of the Wasm boundary instead
 * of one per event and output), framed with lengths so no value needs escaping:
 *   `D`                          dropped (null or undefined)
 *   `E<len>:<message>`           function_error ('Name: message')
 *   `I<len>:<message>`           function_output_invalid
 *   `O<count>:` then count × `<len>:<json>`  the events, each JSON.stringify'd in the guest
 * Lengths are in UTF-16 code units, as String#length and String#slice count them on both sides.
 * The string ends with `L<dropped>` (log lines the guest did not send because the host said it
 * was full). An out of memory error is rethrown: the host discards the context.
 */
export const guestHarness = String.raw`(function (hostLog) {
  'use strict';
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const isArray = Array.isArray;
  const toText = String;
  const isFinite = Number.isFinite;
  const getPrototypeOf = Object.getPrototypeOf;
  const ObjectProto = Object.prototype;
  const ArrayProto = Array.prototype;
  const Internal = typeof InternalError === 'function' ? InternalError : undefined;
  const maxMessage = 1024;
  let current = 0;
  let accepting = true;
  let dropped = 0;

  const isOutOfMemory = (error) =>
    Internal !== undefined && error instanceof Internal && error.message === 'out of memory';
  const cap = (text) => (text.length > maxMessage ? text.slice(0, maxMessage) + '…' : text);
  const describe = (error) => {
    try {
      if (error !== null && typeof error === 'object') {
        // QuickJS's name for what V8 calls a RangeError: the message a tenant sees does not
        // depend on the runtime that ran the function.
        if (Internal !== undefined && error instanceof Internal && error.message === 'stack overflow')
          return 'RangeError: Maximum call stack size exceeded';
        return cap(toText(error.name) + ': ' + toText(error.message));
      }
      return cap('Error: ' + toText(error));
    } catch (inner) {
      if (isOutOfMemory(inner)) throw inner;
      return 'Error: (the thrown value could not be described)';
    }
  };
  const frame = (kind, text) => kind + text.length + ':' + text;
  const format = (args) => {
    let line = '';
    for (let i = 0; i < args.length; i++) {
      const value = args[i];
      let part;
      if (typeof value === 'string') part = value;
      else {
        try {
          part = stringify(value);
        } catch (error) {
          if (isOutOfMemory(error)) throw error;
        }
        if (typeof part !== 'string') part = toText(value);
      }
      line += (i === 0 ? '' : ' ') + part;
    }
    return line;
  };
  const write = (level) =>
    function () {
      if (!accepting) {
        dropped += 1;
        return;
      }
      accepting = hostLog(level, current, format(arguments)) === true;
    };
  globalThis.console = { log: write('log'), info: write('info'), warn: write('warn'), error: write('error') };

  class Invalid {
    constructor(message) {
      this.message = message;
    }
  }
  // JSON.stringify's replacer, called with the raw value as this[key]: what JSON cannot carry
  // exactly (functions, symbols, bigints, NaN and infinities, class instances, whose toJSON or
  // missing properties would change the data silently) fails the output instead.
  function exact(key, value) {
    const raw = this[key];
    switch (typeof raw) {
      case 'number':
        if (!isFinite(raw)) throw new Invalid(toText(key) + ' is ' + toText(raw) + ', which JSON cannot carry');
        return value;
      case 'function':
      case 'symbol':
      case 'bigint':
        throw new Invalid(toText(key) + ' is a ' + typeof raw + ', which JSON cannot carry');
      case 'object':
        if (raw !== null) {
          const proto = getPrototypeOf(raw);
          if (proto !== ObjectProto && proto !== ArrayProto && proto !== null)
            throw new Invalid(toText(key) + ' is not a plain object or array');
        }
        return value;
      default:
        return value;
    }
  }

  const one = (transform, event, ctx, maxOutputs, maxChars) => {
    let value;
    try {
      value = transform(event, ctx);
    } catch (error) {
      if (isOutOfMemory(error)) throw error;
      return frame('E', describe(error));
    }
    if (value === null || value === undefined) return 'D';
    const list = isArray(value) ? value : [value];
    const count = list.length;
    if (count > maxOutputs)
      return frame('I', 'the function returned ' + count + ' events, more than ' + maxOutputs);
    let out = 'O' + count + ':';
    for (let j = 0; j < count; j++) {
      const output = list[j];
      if (output === null || typeof output !== 'object' || isArray(output))
        return frame('I', 'output ' + j + ' is not an object');
      let text;
      try {
        text = stringify(output, exact);
      } catch (error) {
        if (isOutOfMemory(error)) throw error;
        if (error instanceof Invalid) return frame('I', 'output ' + j + ': ' + error.message);
        return frame('I', 'output ' + j + ' is not JSON: ' + describe(error));
      }
      if (typeof text !== 'string') return frame('I', 'output ' + j + ' is not JSON');
      // A UTF-8 byte count is never below the UTF-16 length: past it, the event is too big for sure.
      if (text.length > maxChars)
        return frame('I', 'output ' + j + ' is over ' + maxChars + ' bytes of JSON');
      out += text.length + ':' + text;
    }
    return out;
  };

  return function run(transform, input, ctxJson, maxOutputs, maxChars) {
    const events = typeof input === 'string' ? parse(input) : input;
    const ctx = parse(ctxJson);
    let out = '';
    if (typeof transform !== 'function') {
      const message = frame('E', 'TypeError: the module exports no transform function');
      for (let i = 0; i < events.length; i++) out += message;
      return out + 'L0';
    }
    accepting = true;
    dropped = 0;
    for (let i = 0; i < events.length; i++) {
      current = i;
      out += one(transform, events[i], ctx, maxOutputs, maxChars);
    }
    return out + 'L' + dropped;
  };
})`;
