const t = require('tap')
const double = (n) => n * 2
t.test('double of zero', (t) => { t.equal(double(0), 0); t.end() })
for (const [n, want] of [[1, 2], [2, 5], [3, 6]]) {
  t.equal(double(n), want, `double ${n} = ${want}`)
}
