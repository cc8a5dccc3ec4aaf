describe('broken', () => { it('x', () => {
