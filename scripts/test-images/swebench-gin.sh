#!/usr/bin/env bash
# Fixture task image shaped like a SWE-bench Multilingual Go instance: /testbed holds a tiny
# repository named like gin-gonic/gin at version 2755, tested by upstream's spec command
# `go test -v . -run "^TestTree"` with Debian's Go (swebench-gin.debs, installed here: the
# container has no network). /fixture-shas names the base and fix commits.
set -euo pipefail
export GIT_AUTHOR_NAME=fixture GIT_AUTHOR_EMAIL=fixture@localhost
export GIT_COMMITTER_NAME=fixture GIT_COMMITTER_EMAIL=fixture@localhost
export GIT_AUTHOR_DATE=2026-07-01T00:00:00Z GIT_COMMITTER_DATE=2026-07-01T00:00:00Z
dpkg -i --force-depends /debs/*.deb >/dev/null
# Offline, no C compiler: no cgo, no module proxy; caches where any user's HOME lacks them.
cat > /usr/local/bin/go <<'SH'
#!/bin/sh
export CGO_ENABLED=0 GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GOCACHE="${GOCACHE:-/root/.cache/go-build}" GOPATH="${GOPATH:-/root/go}"
exec /usr/lib/go-1.19/bin/go "$@"
SH
chmod +x /usr/local/bin/go
go version
mkdir -p /testbed && cd /testbed
git init -q -b main .
cat > go.mod <<'GO'
module github.com/gin-gonic/gin

go 1.19
GO
cat > tree.go <<'GO'
package gin

import "strings"

// node is a path tree: static segments and `:name` wildcards.
type node struct {
	children map[string]*node
	wildcard *node
	param    string
	handler  string
}

func newTree() *node { return &node{children: map[string]*node{}} }

func segments(path string) []string {
	return strings.Split(strings.TrimPrefix(path, "/"), "/")
}

// add registers handler for path.
func (n *node) add(path, handler string) {
	for _, s := range segments(path) {
		if strings.HasPrefix(s, ":") {
			if n.wildcard == nil {
				n.wildcard = newTree()
				n.wildcard.param = s[1:]
			}
			n = n.wildcard
			continue
		}
		c, ok := n.children[s]
		if !ok {
			c = newTree()
			n.children[s] = c
		}
		n = c
	}
	n.handler = handler
}

// get returns the handler for path and its parameters.
func (n *node) get(path string) (string, map[string]string) {
	params := map[string]string{}
	for _, s := range segments(path) {
		if c, ok := n.children[s]; ok {
			n = c
			continue
		}
		if n.wildcard == nil {
			return "", nil
		}
		n = n.wildcard
		params[n.param] = s
	}
	return n.handler, params
}
GO
cat > tree_test.go <<'GO'
package gin

import "testing"

func TestTreeAddAndGet(t *testing.T) {
	tree := newTree()
	tree.add("/users/list", "list")
	if h, _ := tree.get("/users/list"); h != "list" {
		t.Fatalf("got %q", h)
	}
}

func TestTreeWildcard(t *testing.T) {
	tree := newTree()
	tree.add("/users/:id", "user")
	for _, tc := range []struct{ name, path, id string }{
		{"number", "/users/42", "42"},
		{"word", "/users/me", "me"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := tree.get(tc.path)
			if h != "user" || p["id"] != tc.id {
				t.Fatalf("got %q %v", h, p)
			}
		})
	}
}

func TestTreeConcurrent(t *testing.T) {
	t.Skip("needs -race")
}

func TestRouterUnrelated(t *testing.T) {}
GO
go vet ./... && go test -v . -run "^TestTree" >/dev/null
git add -A && git commit -qm "initial"
base=$(git rev-parse HEAD)
git checkout -q -b fix
sed -i 's|strings.TrimPrefix(path, "/")|strings.Trim(path, "/")|' tree.go
grep -q 'strings.Trim(path, "/")' tree.go
git commit -qam "tree: a trailing slash names the same route"
fix=$(git rev-parse HEAD)
git checkout -q main
git branch -q -D fix
test "$(git rev-parse HEAD)" = "$base"
rm -rf /root/.cache/go-build
printf 'base=%s\nfix=%s\n' "$base" "$fix" > /fixture-shas
