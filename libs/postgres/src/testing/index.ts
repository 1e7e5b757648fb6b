// Test helpers: imported as @pipeline/postgres/testing, never from the production entry point.
export {
  startTestCluster,
  testClusters,
  useTestClusters,
  type TestCluster,
  type TestClusterOptions,
  type TestClusters,
} from './test-clusters';
