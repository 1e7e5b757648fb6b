// Shared jest settings for every project: swc compiles TypeScript (with the legacy decorators
// and metadata tsoa and TypeORM need), and workspace libraries resolve to their sources so a
// test never runs against a stale dist/.
const path = require('node:path');

const libs = path.join(__dirname, 'libs');

/** Jest settings for the project whose package.json is in `projectDir`. */
module.exports = (projectDir) => {
  const name = require(path.join(projectDir, 'package.json')).name;
  return {
    displayName: name,
    testEnvironment: 'node',
    testMatch: ['<rootDir>/src/**/*.test.ts'],
    transform: {
      '^.+\\.ts$': [
        '@swc/jest',
        {
          jsc: {
            target: 'es2022',
            parser: { syntax: 'typescript', decorators: true },
            transform: { legacyDecorator: true, decoratorMetadata: true },
          },
          module: { type: 'commonjs' },
          sourceMaps: 'inline',
        },
      ],
    },
    moduleNameMapper: {
      '^@pipeline/([a-z-]+)/testing$': `${libs}/$1/src/testing/index.ts`,
      '^@pipeline/([a-z-]+)$': `${libs}/$1/src/index.ts`,
    },
    // Integration tests talk to real Kafka, PostgreSQL and Redis.
    testTimeout: 30000,
    reporters: ['default', [path.join(__dirname, 'tools/test-report/jest-summary-reporter.js'), { name }]],
  };
};
