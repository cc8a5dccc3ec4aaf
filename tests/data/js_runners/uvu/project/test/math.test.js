const { suite, test } = require('uvu');
const assert = require('uvu/assert');
const math = suite('math');
math('adds', () => { assert.is(1 + 1, 2); });
math('subtracts wrongly', () => { assert.is(2 - 1, 5); });
math.skip('skipped one', () => { assert.ok(false); });
math.run();
test('top level passes', () => { assert.ok(true); });
test.run();
