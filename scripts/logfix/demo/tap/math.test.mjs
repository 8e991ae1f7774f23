import test, { describe, it } from 'node:test';
import assert from 'node:assert';

test('adds', () => assert.equal(1 + 1, 2));
test('broken', () => assert.equal(1, 2));
test('later', { skip: 'not now' }, () => {});
test('todo # with hash \\ and backslash', { todo: true }, () => {
  throw new Error('not written yet');
});
test('ünïcode ✓ name', () => {});
test('prints output', () => {
  console.log('ok 99 - this is output, not a TAP result');
});
describe('suite', () => {
  it('inner', () => {});
  it('inner fails', () => {
    throw new Error('no');
  });
  describe('deeper', () => {
    it('deepest', () => {});
  });
});
