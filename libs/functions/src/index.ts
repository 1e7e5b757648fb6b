export {
  batchCpuBudgetMs,
  defaultFunctionLimits,
  type BatchFailureCode,
  type BatchRun,
  type EventFailureCode,
  type EventResult,
  type FunctionCode,
  type FunctionContext,
  type FunctionLimits,
  type FunctionLog,
  type FunctionRuntime,
} from './function-contract';
export { checkFunctionResult, derivedMessageId, type CheckedResult } from './function-output';
export { createQuickJsRuntime, QuickJsRuntime, type QuickJsRuntimeOptions } from './quickjs/quickjs-runtime';
export {
  createIsolatedVmRuntime,
  IsolatedVmRuntime,
  type IsolatedVmRuntimeOptions,
} from './isolated-vm/isolated-vm-runtime';
