/** GPU suites (`npm run test:gpu`): each skips with a visible message when no CUDA device exists. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test/gpu'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
  testTimeout: 60000,
};
