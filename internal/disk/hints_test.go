package disk

import (
	"errors"
	"strings"
	"testing"
)

const gib = 1 << 30

var testDevs = []Device{
	{Name: "/dev/sda", Size: 10 * gib, Model: "Big Disk", Vendor: "ACME", Serial: "S-A", WWN: "0x5000c500aaaa", HCTL: "0:0:0:0", Rotational: true, ByPath: "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"},
	{Name: "/dev/sdb", Size: 20 * gib, Model: "Fast SSD", Vendor: "ACME", Serial: "S-B", WWN: "0x5000c500bbbb", HCTL: "1:0:0:0"},
	{Name: "/dev/nvme0n1", Size: 40*gib + gib/2, Model: "NVMe thing", Serial: "S-C"},
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hints map[string]any
		want  string
	}{
		{"serial", map[string]any{"serial": "S-B"}, "/dev/sdb"},
		{"serial case-insensitive", map[string]any{"serial": "s-b"}, "/dev/sdb"},
		{"model with a space", map[string]any{"model": "Fast SSD"}, "/dev/sdb"},
		{"name", map[string]any{"name": "/dev/nvme0n1"}, "/dev/nvme0n1"},
		{"size in GiB, number", map[string]any{"size": float64(20)}, "/dev/sdb"},
		{"size in GiB, string", map[string]any{"size": "10"}, "/dev/sda"},
		{"size >=", map[string]any{"size": ">= 15"}, "/dev/sdb"},
		{"size > (fractional GiB)", map[string]any{"size": "> 40"}, "/dev/nvme0n1"},
		{"size <", map[string]any{"size": "< 15"}, "/dev/sda"},
		{"rotational false", map[string]any{"rotational": false}, "/dev/sdb"},
		{"rotational string", map[string]any{"rotational": "true"}, "/dev/sda"},
		{"<in>", map[string]any{"model": "<in> ssd"}, "/dev/sdb"},
		{"<or>", map[string]any{"serial": "<or> S-X <or> S-C"}, "/dev/nvme0n1"},
		{"<all-in>", map[string]any{"model": "<all-in> nvme thing"}, "/dev/nvme0n1"},
		{"s!=", map[string]any{"vendor": "s!= acme", "serial": "s== s-c"}, ""}, // nvme has no vendor: skipped
		{"all hints", map[string]any{"vendor": "ACME", "rotational": false, "wwn": "0x5000c500bbbb", "hctl": "1:0:0:0"}, "/dev/sdb"},
		{"by_path", map[string]any{"by_path": "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"}, "/dev/sda"},
		{"no match", map[string]any{"serial": "nope"}, ""},
		{"size exact misses 40.5 GiB", map[string]any{"size": 40}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Select(testDevs, tc.hints)
			if tc.want == "" {
				var nd *ErrNoDevice
				if !errors.As(err, &nd) {
					t.Fatalf("Select = %v, %v; want ErrNoDevice", d.Name, err)
				}
				if !strings.HasPrefix(err.Error(), "No suitable device was found for deployment using these hints {") {
					t.Errorf("message %q", err)
				}
				return
			}
			if err != nil || d.Name != tc.want {
				t.Fatalf("Select = %q, %v; want %q", d.Name, err, tc.want)
			}
		})
	}
}

func TestParseHintsErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hints map[string]any
		want  string
	}{
		{"unknown key", map[string]any{"serial": "x", "colour": "red"},
			`The hints "colour" are invalid. Valid hints are: "size, model, wwn, serial, vendor, wwn_with_extension, wwn_vendor_extension, name, rotational, hctl, by_path, tran"`},
		{"string hint not a string", map[string]any{"serial": float64(123)}, `Root device hint "serial" is not a string value. Hint expression: 123`},
		{"size not an integer", map[string]any{"size": "big"}, `Root device hint "size" is not an integer value. Current value: big`},
		{"size zero", map[string]any{"size": float64(0)}, `Root device hint "size" should be a positive integer. Current value: 0`},
		{"rotational not Boolean", map[string]any{"rotational": "maybe"}, `Root device hint "rotational" is not a Boolean value. Current value: maybe`},
		{"empty", map[string]any{"model": "  "}, `Root device hint model expression is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHints(tc.hints)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ParseHints error %v\nwant %s", err, tc.want)
			}
			if _, err := Select(testDevs, tc.hints); err == nil || err.Error() != tc.want {
				t.Fatalf("Select error %v, want the validation error", err)
			}
		})
	}
}

func TestNoDeviceMessage(t *testing.T) {
	_, err := Select(testDevs, map[string]any{"serial": "nope", "size": float64(5), "rotational": true})
	want := "No suitable device was found for deployment using these hints {'rotational': True, 'serial': 'nope', 'size': 5}"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestQuote(t *testing.T) {
	if got := quote("fast ssd/1:2"); got != "fast%20ssd/1%3A2" {
		t.Fatalf("quote = %q", got)
	}
}
