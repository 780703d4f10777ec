package ramdisk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LoadModule returns a Coldplug.Load that loads modules from dir (the
// running kernel's /lib/modules/<release>) with finit_module(2), as
// insmod does; a module already loaded is no error.
func LoadModule(dir string) func(ctx context.Context, module, rel string) error {
	return func(_ context.Context, module, rel string) error {
		if rel == "" {
			return fmt.Errorf("module %s is not in modules.dep", module)
		}
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		defer f.Close()
		err = unix.FinitModule(int(f.Fd()), "", 0)
		if errors.Is(err, unix.EEXIST) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("finit_module %s: %w", rel, err)
		}
		return nil
	}
}
