const assert = require('assert');
describe('math', function () {
  it('adds', function () { assert.strictEqual(1 + 1, 2); });
  it('subtracts wrongly', function () { assert.strictEqual(2 - 1, 5); });
  it.skip('skipped one', function () { assert.ok(false); });
  it('pending without body');
  describe('nested', function () {
    it('multiplies', function () { assert.strictEqual(2 * 3, 6); });
  });
});
it('top level passes', function () { assert.ok(true); });
