import { expect, test } from 'vitest'

test('parses', () => {
  expect(JSON.parse('{"a":1}')).toEqual({ a: 1 })
})
test('waits', async () => {
  // over vitest's 300 ms slowTestThreshold, so the log shows the duration
  await new Promise(resolve => setTimeout(resolve, 400))
})
let attempts = 0
test('flaky', { retry: 2 }, () => {
  attempts += 1
  expect(attempts).toBe(2)
})
