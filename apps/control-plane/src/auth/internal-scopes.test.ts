import { callerHasScope, type InternalCaller } from './internal-tokens';

const ingestion: InternalCaller = { caller: 'ingestion' };
const amplitude: InternalCaller = { caller: 'delivery', appType: 'amplitude' };
const warehouse: InternalCaller = { caller: 'warehouse' };

describe('callerHasScope', () => {
  it('gives each internal scope to its callers only', () => {
    const matrix = (scope: string) =>
      [ingestion, amplitude, warehouse].map((caller) => callerHasScope(caller, scope));
    expect(matrix('write_keys.resolve')).toEqual([true, false, false]);
    expect(matrix('write_keys.lookup')).toEqual([false, true, false]);
    expect(matrix('warehouses.resolve')).toEqual([false, false, true]);
    expect(matrix('warehouses.report')).toEqual([false, false, true]);
    // Every service that accepts or delivers events decides them by the account's regulations.
    expect(matrix('regulations.subjects')).toEqual([true, true, true]);
    expect(matrix('regulations.write')).toEqual([false, false, false]);
    // Ingestion compiles the plan version a key binds; the consumers get the policy in the envelope.
    expect(matrix('tracking_plans.versions')).toEqual([true, false, false]);
    expect(matrix('tracking_plans.read')).toEqual([false, false, false]);
    expect(matrix('')).toEqual([false, false, false]);
  });
});
