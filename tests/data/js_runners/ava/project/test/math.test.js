const test = require('ava');
test('adds', t => { t.is(1 + 1, 2); });
test('subtracts wrongly', t => { t.is(2 - 1, 5); });
test.skip('skipped one', t => { t.fail(); });
test.todo('todo one');
