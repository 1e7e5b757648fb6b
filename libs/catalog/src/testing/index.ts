// Test tools for the workspace's own source tree: imported as @pipeline/catalog/testing, never
// from the production entry point.
export { findCycle, relativeImports, sourceFiles } from './import-graph';
