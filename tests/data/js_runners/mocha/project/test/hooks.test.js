const assert = require('assert');
describe('with a broken hook', function () {
  before(function () { throw new Error('hook boom'); });
  it('never runs', function () { assert.ok(true); });
});
