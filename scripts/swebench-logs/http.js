const assert = require('assert');
describe('supports http with nodejs', function () {
  describe('compression', function () {
    it('should support gunzip', function () { assert.strictEqual(1 + 1, 2); });
    it('should support brotli', function () { assert.strictEqual('br', 'gzip'); });
    it.skip('should support zstd', function () {});
    it('should not fail with chunked responses', function () { assert.ok(true); });
  });
  it('should respect the timeout (compression off)', function () { assert.ok(true); });
});
