import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// What the pipeline keeps of a tenant function's answer, all pure: the derived message ids of a
// split, consent and timestamp put back, each output held to the event contract; and a batch's
// CPU budget. The runtimes (isolated-vm in a child process, QuickJS in WebAssembly) run tenant
// code and are left to the conformance suite, which runs real sandboxes.
export default mutationConfig({
  dir: 'libs/functions',
  mutate: ['libs/functions/src/function-output.ts', 'libs/functions/src/function-contract.ts'],
  tests: ['src/function-output.test.ts', 'src/function-contract.test.ts'],
  breakAt: 98,
});
