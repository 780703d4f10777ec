package disk

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/diskfs/go-diskfs/partition/gpt"
)

func TestPlanAndWriteTable(t *testing.T) {
	const size = 64 << 20
	for _, tc := range []struct {
		name   string
		layout Layout
		label  string
		want   []entry // typ, start, end in MiB units below
	}{
		{"bios: msdos, root only", Layout{BootMode: "bios", RootMB: 10}, LabelMSDOS,
			[]entry{{typ: "0x83", start: 1, end: 11}}},
		{"uefi: gpt, ephemeral swap configdrive root", Layout{BootMode: "uefi", RootMB: 20, SwapMB: 4, EphemeralMB: 8, ConfigDriveMB: 2}, LabelGPT,
			[]entry{{typ: string(gptType(RoleEphemeral)), start: 1, end: 9, name: "ephemeral"},
				{typ: "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", start: 9, end: 13, name: "swap"},
				{typ: "0FC63DAF-8483-4772-8E79-3D69D8477DE4", start: 13, end: 15, name: "config-2"},
				{typ: "0FC63DAF-8483-4772-8E79-3D69D8477DE4", start: 15, end: 35, name: "root"}}},
		{"bios with disk_label gpt, local boot: BIOS boot partition first", Layout{BootMode: "bios", Label: LabelGPT, LocalBoot: true, RootMB: 10}, LabelGPT,
			[]entry{{typ: "21686148-6449-6E6F-744E-656564454649", start: 1, end: 2, name: RoleBIOSBoot},
				{typ: "0FC63DAF-8483-4772-8E79-3D69D8477DE4", start: 2, end: 12, name: "root"}}},
		{"msdos swap", Layout{BootMode: "bios", RootMB: 10, SwapMB: 3}, LabelMSDOS,
			[]entry{{typ: "0x82", start: 1, end: 4}, {typ: "0x83", start: 4, end: 14}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := tc.layout.Plan(size)
			if err != nil {
				t.Fatal(err)
			}
			disk := tempDisk(t, size, 0)
			if err := WriteTable(disk, tc.layout.TableType(), parts); err != nil {
				t.Fatal(err)
			}
			b := readAll(t, disk)
			var got []entry
			if tc.label == LabelGPT {
				got = readGPT(t, b)
			} else {
				got = readMBR(t, b)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("table %+v, want %d partitions", got, len(tc.want))
			}
			for i, w := range tc.want {
				w.start, w.end = w.start<<20, w.end<<20
				if tc.label == LabelGPT {
					w.guid = parts[i].UUID // set by WriteTable
					if len(w.guid) != 36 {
						t.Fatalf("partition %d has no GUID: %+v", i+1, parts[i])
					}
				}
				if got[i] != w {
					t.Errorf("partition %d = %+v, want %+v", i+1, got[i], w)
				}
			}
		})
	}
}

// TestWriteTableReplacesGPT: an MBR written over a GPT disk leaves no GPT
// header nor backup behind.
func TestWriteTableReplacesGPT(t *testing.T) {
	disk := tempDisk(t, 16<<20, 0)
	p := []Partition{{Role: RoleRoot, Number: 1, Start: 1 << 20, Size: 8 << 20}}
	if err := WriteTable(disk, LabelGPT, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(disk, LabelMSDOS, p); err != nil {
		t.Fatal(err)
	}
	b := readAll(t, disk)
	if bytes.Contains(b[512:1024], []byte("EFI PART")) || bytes.Contains(b[len(b)-512:], []byte("EFI PART")) {
		t.Fatal("a GPT header survived the new MBR")
	}
	if got := readMBR(t, b); len(got) != 1 || got[0].typ != "0x83" {
		t.Fatalf("MBR %+v", got)
	}
}

func TestPlanErrors(t *testing.T) {
	if _, err := (Layout{RootMB: 100}).Plan(64 << 20); !errors.Is(err, ErrTooSmall) {
		t.Errorf("100 MiB root on a 64 MiB disk: %v", err)
	}
	if _, err := (Layout{}).Plan(64 << 20); err == nil {
		t.Error("a zero root size was accepted")
	}
	l := Layout{BootMode: "uefi", LocalBoot: true, Label: LabelMSDOS, RootMB: 1, SwapMB: 1, EphemeralMB: 1, ConfigDriveMB: 1}
	if _, err := l.Plan(1 << 30); err == nil {
		t.Error("5 partitions in an msdos table were accepted")
	}
}

// readTable is ReadTable of the disk at path.
func readTable(t *testing.T, path string) []Partition {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, parts, err := ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func TestAddConfigDrivePartition(t *testing.T) {
	const size = 128 << 20
	for _, label := range []string{LabelGPT, LabelMSDOS} {
		t.Run(label, func(t *testing.T) {
			disk := tempDisk(t, size, 0)
			// A whole-disk image of 16 MiB with one partition, as built
			// elsewhere: its table describes a 16 MiB disk.
			img := tempDisk(t, 16<<20, 0)
			if err := WriteTable(img, label, []Partition{{Role: RoleEFI, Number: 1, Start: 1 << 20, Size: 10 << 20, Bootable: true},
				{Role: RoleBIOSBoot, Number: 2, Start: 11 << 20, Size: 1 << 20, Attrs: 1 << 60}}); err != nil {
				t.Fatal(err)
			}
			before := readTable(t, img)
			bootCode := bytes.Repeat([]byte{0xCC}, 440) // an image's boot loader in the MBR
			f, _ := os.OpenFile(disk, os.O_WRONLY, 0)
			_, _ = f.WriteAt(readAll(t, img), 0)
			_, _ = f.WriteAt(bootCode, 0)
			f.Close()
			cd, err := AddConfigDrivePartition(disk)
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, disk)
			var got []entry
			if label == LabelGPT {
				got = readGPT(t, b)
			} else {
				got = readMBR(t, b)
			}
			if len(got) != 3 || got[0].start != 1<<20 || got[0].end != 11<<20 {
				t.Fatalf("table after adding the config drive: %+v", got)
			}
			// The image's partitions keep their types, names, attributes,
			// boot flag and GUIDs, and its boot code stays.
			after := readTable(t, disk)
			if !reflect.DeepEqual(after[:2], before) {
				t.Errorf("the image's partitions changed:\nbefore %+v\nafter  %+v", before, after[:2])
			}
			if label == LabelGPT && (after[0].Role != string(gpt.EFISystemPartition) || after[0].Name != RoleEFI || after[1].Attrs != 1<<60) {
				t.Errorf("GPT: %+v", after)
			}
			if label == LabelMSDOS && (after[0].Role != "0xef" || !after[0].Bootable || after[1].Bootable) {
				t.Errorf("MBR: %+v", after)
			}
			if !bytes.Equal(b[:440], bootCode) {
				t.Error("the MBR's boot code was overwritten")
			}
			last := got[2]
			if last.start != cd.Start || last.end != cd.Start+cd.Size || last.end-last.start < 63<<20 || last.start%(1<<20) != 0 {
				t.Fatalf("config drive partition %+v (planned %+v): want ~64 MiB, MiB-aligned, at the end", last, cd)
			}
			end := int64(size)
			if label == LabelGPT {
				end -= 33 * 512
			}
			if end-last.end >= 1<<20 {
				t.Errorf("config drive partition ends %d bytes before the usable end", end-last.end)
			}
		})
	}
	t.Run("no table", func(t *testing.T) {
		disk := tempDisk(t, size, 0xAB)
		if _, err := AddConfigDrivePartition(disk); err == nil {
			t.Fatal("a disk without a partition table got a config drive")
		}
		if !bytes.Equal(readAll(t, disk)[:4096], bytes.Repeat([]byte{0xAB}, 4096)) {
			t.Fatal("the failed attempt wrote to the disk")
		}
	})
}
