import { describe, expect, it, test } from 'vitest'

describe('sum', () => {
  it('adds', () => {
    expect(1 + 2).toBe(3)
  })
  it('fails', () => {
    expect(2 + 2).toBe(3)
  })
  it.skip('later', () => {})
  it.todo('handles overflow')
  test('skips at run time', (ctx) => {
    ctx.skip()
  })
  describe('nested', () => {
    test.todo('deeper todo')
    test('deep pass', () => {
      expect(true).toBe(true)
    })
  })
})

test.todo('top-level todo')
describe.todo('parser')
