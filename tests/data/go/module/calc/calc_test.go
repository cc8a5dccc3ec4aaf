package calc

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("2+3")
	}
}

func TestSub(t *testing.T) {
	t.Log("checking Sub")
	if got := Sub(5, 3); got != 2 {
		t.Errorf("Sub(5, 3) = %d, want 2", got)
	}
}

func TestSkipped(t *testing.T) {
	t.Skip("not on this machine")
}

func TestReadsTestdata(t *testing.T) {
	data, err := os.ReadFile("testdata/input.txt")
	if err != nil || !strings.HasPrefix(string(data), "2 3") {
		t.Fatal(err)
	}
}

func TestTable(t *testing.T) {
	cases := []struct {
		name string
		a, b int
		want int
	}{{"positive", 1, 2, 3}, {"with space", 2, 2, 4}, {"negative/nested", -1, -1, -2}, {"fails", 1, 1, 3}}
	for _, c := range cases {
		c := c
		t.Run(c.name, func(t *testing.T) {
			if Add(c.a, c.b) != c.want {
				t.Errorf("Add(%d, %d) != %d", c.a, c.b, c.want)
			}
		})
	}
	t.Run("deeper", func(t *testing.T) {
		t.Run("level two", func(t *testing.T) {})
		t.Run("skipped", func(t *testing.T) { t.Skip("later") })
	})
}

func TestParallel(t *testing.T) {
	for _, name := range []string{"p1", "p2", "p3"} {
		name := name
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fmt.Println("output of", name)
		})
	}
}

func ExampleAdd() {
	fmt.Println(Add(1, 1))
	// Output: 2
}

func FuzzAdd(f *testing.F) {
	f.Add(1, 2)
	f.Fuzz(func(t *testing.T, a, b int) {
		if Add(a, b) != a+b {
			t.Fatal("add")
		}
	})
}
