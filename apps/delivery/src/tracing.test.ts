import { tracingRequested } from '@pipeline/telemetry';
import { destinationArgument, tracing } from './tracing';

describe('delivery tracing', () => {
  it('names the service after --destination, in each way commander takes it', () => {
    expect(destinationArgument(['--destination', 'warehouse'])).toBe('warehouse');
    expect(destinationArgument(['-d', 'amplitude'])).toBe('amplitude');
    expect(destinationArgument(['--destination=webhook'])).toBe('webhook');
    expect(destinationArgument([])).toBeUndefined();
  });

  it('is on exactly when OTEL_* asks for it (off in a test run without them)', () => {
    expect(tracing.enabled).toBe(tracingRequested(process.env));
  });
});
