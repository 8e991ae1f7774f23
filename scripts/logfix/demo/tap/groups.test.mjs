import test, { after, describe, it } from 'node:test';
import assert from 'node:assert';

describe('outer', () => {
  describe('middle', () => {
    it('leaf fails', () => assert.strictEqual(1, 2));
    it('leaf passes', () => {});
  });
  it('todo passes', { todo: 'later' }, () => {});
  it('adds', () => {});
});
test('parent fails itself', async (t) => {
  await t.test('child ok', () => {});
  throw new Error('the parent body fails');
});
describe('suite with a failing after hook', () => {
  after(() => {
    throw new Error('cleanup failed');
  });
  it('runs fine', () => {});
});
describe.skip('skipped suite', () => {
  it('never runs', () => {});
});
test('parent passes', async (t) => {
  await t.test('first child', () => {});
  await t.test('second child', () => {});
});
test('parent of a failing child', async (t) => {
  await t.test('failing child', () => assert.strictEqual(1, 2));
  await t.test('passing child', () => {});
});
test.todo('todo without a body');
test('todo that fails', { todo: 'not yet' }, () => {
  throw new Error('not written yet');
});
