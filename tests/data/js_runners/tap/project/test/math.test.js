const t = require('tap');
t.test('math', async t => {
  t.test('adds', async t => { t.equal(1 + 1, 2); });
  t.test('subtracts wrongly', async t => { t.equal(2 - 1, 5); });
  t.test('skipped one', { skip: true }, async t => { t.fail(); });
  t.test('nested', async t => {
    t.test('multiplies', async t => { t.equal(2 * 3, 6); });
  });
});
t.test('top level passes', async t => { t.ok(true); });
