package beta

import "testing"

func TestSame(t *testing.T) {
	t.Fatal("beta's TestSame fails")
}

func TestBetaOnly(t *testing.T) {}
