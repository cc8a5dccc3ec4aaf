package broken

import "testing"

func TestOld(t *testing.T) {
	if Old() != 1 {
		t.Fatal("old")
	}
}

func TestNew(t *testing.T) {
	if New() != 2 { // New comes with the fix: the package does not compile before it
		t.Fatal("new")
	}
}
