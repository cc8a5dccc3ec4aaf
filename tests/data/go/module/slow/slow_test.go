package slow

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestSleeps(t *testing.T) {
	time.Sleep(time.Minute)
}
