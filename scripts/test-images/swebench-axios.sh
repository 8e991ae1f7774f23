#!/usr/bin/env bash
# Fixture task image shaped like a SWE-bench Multilingual JavaScript instance: /testbed holds a
# tiny repository named like axios/axios, tested with node:test's TAP reporter (Debian's
# Node.js 18, swebench-axios.debs, installed here: the container has no network), graded by
# upstream's parse_log_tap. /fixture-shas names the base and fix commits.
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
# --force-depends: the node-* libraries' own JavaScript dependencies are not needed here.
dpkg -i --force-depends /debs/*.deb >/dev/null 2>&1 || dpkg -i --force-depends /debs/*.deb >/dev/null
node --version
mkdir -p /testbed/lib/helpers /testbed/test/unit/helpers && cd /testbed
git init -q -b main .
cat > package.json <<'JS'
{ "name": "axios", "version": "1.6.0", "scripts": { "test": "node --test --test-reporter=tap test/" } }
JS
cat > lib/helpers/combineURLs.js <<'JS'
'use strict';

/**
 * Creates a new URL by combining the specified URLs.
 */
module.exports = function combineURLs(baseURL, relativeURL) {
  return relativeURL ? baseURL + '/' + relativeURL.replace(/^\/+/, '') : baseURL;
};
JS
cat > test/unit/helpers/combineURLs.test.js <<'JS'
'use strict';
const { describe, it } = require('node:test');
const assert = require('assert');
const combineURLs = require('../../../lib/helpers/combineURLs');

describe('helpers::combineURLs', () => {
  it('should combine URLs', () => {
    assert.strictEqual(combineURLs('https://api.github.com', '/users'), 'https://api.github.com/users');
  });

  it('should combine URLs with an empty relative URL', () => {
    assert.strictEqual(combineURLs('https://api.github.com/users', ''), 'https://api.github.com/users');
  });

  it.skip('should follow redirects', () => {});
});
JS
node --test --test-reporter=tap test/ >/dev/null
git add -A && git commit -qm "initial"
base=$(git rev-parse HEAD)
git checkout -q -b fix
sed -i "s|baseURL + '/' +|baseURL.replace(/\\\\/+\$/, '') + '/' +|" lib/helpers/combineURLs.js
grep -q "replace(/\\\\/+\$/, '')" lib/helpers/combineURLs.js
git commit -qam "combineURLs: no double slash after a base ending in /"
fix=$(git rev-parse HEAD)
git checkout -q main
git branch -q -D fix
test "$(git rev-parse HEAD)" = "$base"
printf 'base=%s\nfix=%s\n' "$base" "$fix" > /fixture-shas
