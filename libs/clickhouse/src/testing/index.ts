// Test helpers: imported as @pipeline/clickhouse/testing, never from the production entry point.
export {};
