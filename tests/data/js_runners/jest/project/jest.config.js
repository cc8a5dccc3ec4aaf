module.exports = { testEnvironment: 'node', transform: { '^.+\\.tsx?$': 'ts-jest' } };
