package alpha

import "testing"

func TestSame(t *testing.T) {
	t.Log("alpha's TestSame passes")
}

func TestFails(t *testing.T) {
	t.Errorf("expected %d, got %d", 1, 2)
}

func TestSkipped(t *testing.T) {
	t.Skip("not now")
}

func TestTable(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"case one", true},
		{"ünïcode ✓", true},
		{"with/slash", true},
		{"parens (x)", false},
	}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if !c.want {
				t.Fatal("bad case")
			}
		})
	}
}

func TestNested(t *testing.T) {
	t.Run("level1", func(t *testing.T) {
		t.Run("level2", func(t *testing.T) {})
		t.Run("skipped", func(t *testing.T) { t.Skip("deep skip") })
	})
}

func TestParallel(t *testing.T) {
	for _, n := range []string{"p1", "p2", "p3"} {
		n := n
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			if n == "p2" {
				t.Error("p2 fails")
			}
		})
	}
}

func TestÜnicode(t *testing.T) {}
