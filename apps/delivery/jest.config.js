const path = require('node:path');
const preset = require('../../jest.preset.js')(__dirname);

// The regulated-delivery suite runs a real control plane in-process, from its sources.
module.exports = {
  ...preset,
  moduleNameMapper: {
    '^@pipeline/control-plane/(.*)$': path.join(__dirname, '../control-plane/src/$1'),
    ...preset.moduleNameMapper,
  },
};
