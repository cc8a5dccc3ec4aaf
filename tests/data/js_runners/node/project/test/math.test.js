const { describe, it, test } = require('node:test');
const assert = require('node:assert');
describe('math', () => {
  it('adds', () => { assert.strictEqual(1 + 1, 2); });
  it('subtracts wrongly', () => { assert.strictEqual(2 - 1, 5); });
  it.skip('skipped one', () => { assert.ok(false); });
  it.todo('todo one');
  describe('nested', () => {
    it('multiplies', () => { assert.strictEqual(2 * 3, 6); });
  });
});
test('top level passes', () => { assert.ok(true); });
test('with subtests', async (t) => {
  await t.test('inner passes', () => {});
});
