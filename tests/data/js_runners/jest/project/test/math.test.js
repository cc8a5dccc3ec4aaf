describe('math', () => {
  test('adds', () => { expect(1 + 1).toBe(2); });
  test('subtracts wrongly', () => { expect(2 - 1).toBe(5); });
  test.skip('skipped one', () => { expect(true).toBe(false); });
  describe('nested', () => {
    it('multiplies', () => { expect(2 * 3).toBe(6); });
  });
});
test('top level passes', () => { expect('a').toBe('a'); });
