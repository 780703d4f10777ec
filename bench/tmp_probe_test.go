package bench

import (
	"context"
	"os"
	"testing"
)

func TestTmpWriteFleet(t *testing.T) {
	p := os.Getenv("PROBE_DB")
	if p == "" {
		t.Skip()
	}
	if err := writeFleet(context.Background(), p, fleetNodes); err != nil {
		t.Fatal(err)
	}
}
