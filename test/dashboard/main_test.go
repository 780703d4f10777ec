// Package dashboard_test opens the dashboard of a real `anvil serve` (the
// binary, fake hardware, a throwaway SQLite database on a loopback port) in
// a real headless Chromium driven over the DevTools protocol
// (github.com/chromedp/chromedp), and checks what an operator sees: the
// diagram's counts against the API, the table's filters and paging against
// the API, transitions made through the API appearing without a reload,
// the node page's masked secrets and allowed actions, and an action
// performed with its confirmation. Chromium runs headless, as root with
// --no-sandbox, and may resolve no name: every URL it opens is loopback.
//
// A missing chromium skips the tests, or fails them in CI (environment
// variable CI set); scripts/test.sh installs Debian's chromium. With
// -screenshots DIR the test saves a PNG of each view there (docs/observability.md's
// pictures in docs/ come from `go test ./test/dashboard -screenshots ../../docs`).
package dashboard_test

import (
	"flag"
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

var screenshots = flag.String("screenshots", "", "save a PNG of each view in this directory")

func TestMain(m *testing.M) {
	os.Exit(testbin.Main(m, &anvilBin, nil))
}
