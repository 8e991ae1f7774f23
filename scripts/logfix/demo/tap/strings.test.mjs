import test from 'node:test';

test('only in strings', () => {});
test('skip with reason', { skip: 'platform' }, () => {});
test('parent with subtests', async (t) => {
  await t.test('child passes', () => {});
  await t.test('child skipped', { skip: true }, () => {});
});
