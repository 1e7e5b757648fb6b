import { batchCpuBudgetMs, defaultFunctionLimits } from './function-contract';

describe('batchCpuBudgetMs', () => {
  it('gives each event its CPU time, up to the batch cap', () => {
    const limits = { ...defaultFunctionLimits, cpuMsPerEvent: 5, maxBatchCpuMs: 1000 };
    expect([1, 10, 100, 200, 201, 500].map((n) => batchCpuBudgetMs(limits, n))).toEqual([
      5, 50, 500, 1000, 1000, 1000,
    ]);
  });

  it('gives an empty batch one event’s time, never none', () => {
    expect(batchCpuBudgetMs({ ...defaultFunctionLimits, cpuMsPerEvent: 7 }, 0)).toBe(7);
  });

  it('has the documented defaults (docs/functions.md, "Limits")', () => {
    expect(defaultFunctionLimits).toEqual({
      cpuMsPerEvent: 5,
      maxBatchCpuMs: 1000,
      memoryMb: 64,
      maxOutputEvents: 10,
      maxOutputBytesPerEvent: 32 * 1024,
      maxOutputBytesPerBatch: 2 * 1024 * 1024,
      maxLogLines: 50,
      maxLogBytes: 8 * 1024,
    });
  });
});
