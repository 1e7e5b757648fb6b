// Two workers, on any machine: the crash suites (warehouse-crash-*.test.ts) spend most of their
// minutes waiting for the consumer group to drop a killed member, so they wait side by side.
module.exports = { ...require('../../jest.preset.js')(__dirname), maxWorkers: 2 };
