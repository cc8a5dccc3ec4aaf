package parallelpanic

import "testing"

// Parallel tests pause at t.Parallel() until the sequential ones are done.
func TestWaitsA(t *testing.T) {
	t.Parallel()
	if Divide(4, 2) != 2 {
		t.Fatal("4 / 2")
	}
}

func TestWaitsB(t *testing.T) {
	t.Parallel()
	if Divide(9, 3) != 3 {
		t.Fatal("9 / 3")
	}
}

func TestFirst(t *testing.T) {
	if Divide(1, 1) != 1 {
		t.Fatal("1 / 1")
	}
}

// TestPanics divides by zero: the binary ends while the parallel tests are still paused.
func TestPanics(t *testing.T) {
	_ = Divide(1, 0)
}
