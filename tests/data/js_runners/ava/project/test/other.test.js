const test = require('ava');
test('other passes', t => { t.pass(); });
