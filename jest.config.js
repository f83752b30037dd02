/** Jest runs the TypeScript suites through ts-jest; GPU suites live apart (jest.gpu.config.js). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/test/gpu/'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
  testTimeout: 30000,
};
