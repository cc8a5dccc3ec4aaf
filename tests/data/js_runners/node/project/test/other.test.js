const { test } = require('node:test');
test('other passes', () => {});
