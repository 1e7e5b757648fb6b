import fc from 'fast-check';
import { DEBUG_PAYLOAD_MAX_BYTES, debuggerKeys, debugPayload } from './debug-streams';

// The recorded payload's size rule at its edges (pure: no Redis).

/** An object whose JSON is exactly `length` characters of `char` inside one string field. */
function objectOfJsonLength(length: number, char = 'a') {
  const overhead = JSON.stringify({ s: '' }).length;
  return { s: char.repeat(length - overhead) };
}

describe('debugPayload at the size limit', () => {
  it('keeps an object whose JSON is exactly the limit, and truncates one character more', () => {
    const fits = objectOfJsonLength(DEBUG_PAYLOAD_MAX_BYTES);
    expect(JSON.stringify(fits).length).toBe(DEBUG_PAYLOAD_MAX_BYTES);
    expect(debugPayload(fits)).toEqual({ payload: fits, truncated: false });
    const over = objectOfJsonLength(DEBUG_PAYLOAD_MAX_BYTES + 1);
    expect(debugPayload(over).truncated).toBe(true);
  });

  it('measures bytes, not characters: two-byte text under the limit stays, three-byte text over it is cut', () => {
    // 6,000 characters of é: 12,000 bytes, under 16 KB, though 3 × its length is not.
    const twoByte = objectOfJsonLength(6000, 'é');
    expect(debugPayload(twoByte)).toEqual({ payload: twoByte, truncated: false });
    // 6,000 characters of €: 18,000 bytes, over 16 KB, though its length is not.
    const threeByte = objectOfJsonLength(6000, '€');
    const cut = debugPayload(threeByte);
    expect(cut.truncated).toBe(true);
    expect(cut.payload.bytes).toBe(Buffer.byteLength(JSON.stringify(threeByte)));
  });

  it('keeps a truncated event’s short scalars, its size and the start of its JSON', () => {
    const event = {
      type: 'track',
      event: 'Big',
      seats: 3,
      paid: false,
      id: 'x'.repeat(256),
      tooLong: 'y'.repeat(257),
      properties: { blob: 'z'.repeat(DEBUG_PAYLOAD_MAX_BYTES) },
    };
    const json = JSON.stringify(event);
    expect(debugPayload(event)).toEqual({
      payload: {
        type: 'track',
        event: 'Big',
        seats: 3,
        paid: false,
        id: 'x'.repeat(256),
        truncated: true,
        bytes: Buffer.byteLength(json),
        preview: json.slice(0, 1024),
      },
      truncated: true,
    });
  });

  it('wraps values that are not objects, and cuts them at the limit too', () => {
    expect(debugPayload(null)).toEqual({ payload: { value: null }, truncated: false });
    expect(debugPayload(['a', 1])).toEqual({ payload: { value: ['a', 1] }, truncated: false });
    expect(debugPayload('text')).toEqual({ payload: { value: 'text' }, truncated: false });
    const long = 'q'.repeat(DEBUG_PAYLOAD_MAX_BYTES);
    expect(debugPayload(long)).toEqual({
      payload: {
        truncated: true,
        bytes: DEBUG_PAYLOAD_MAX_BYTES + 2,
        preview: JSON.stringify(long).slice(0, 1024),
      },
      truncated: true,
    });
  });

  it('records what cannot be serialized as truncated, with its text', () => {
    const circular: Record<string, unknown> = { type: 'track' };
    circular.self = circular;
    expect(debugPayload(circular)).toEqual({
      payload: {
        type: 'track',
        truncated: true,
        bytes: Buffer.byteLength('[object Object]'),
        preview: '[object Object]',
      },
      truncated: true,
    });
    expect(debugPayload(10n)).toEqual({
      payload: { truncated: true, bytes: 2, preview: '10' },
      truncated: true,
    });
  });

  it('never records more than the limit plus its preview, whatever the JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const { payload, truncated } = debugPayload(value);
        const size = Buffer.byteLength(JSON.stringify(payload));
        if (!truncated) expect(size).toBeLessThanOrEqual(DEBUG_PAYLOAD_MAX_BYTES + '{"value":}'.length);
        else expect(typeof payload.preview).toBe('string');
      }),
    );
  });
});

describe('debuggerKeys', () => {
  it('names the streams by write key id, under the versioned prefix', () => {
    expect(debuggerKeys.events('wk-1')).toBe('pipeline:debug:v1:events:wk-1');
    expect(debuggerKeys.outcomes('wk-1')).toBe('pipeline:debug:v1:outcomes:wk-1');
  });
});
