import { describe, it, expect } from 'vitest';
const double = (n: number): number => n * 2;
describe('typed', () => {
  it('doubles', () => { expect(double(2)).toBe(4); });
  it.todo('todo one');
});
