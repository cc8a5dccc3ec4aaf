const { test } = require('node:test');
test('other passes', () => {});
test('top level passes', () => { throw new Error('the same name as in math.test.js, failing'); });
