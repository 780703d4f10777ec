package raid

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Level is what Ironic's redfish RAID module knows of a RAID level.
type Level struct {
	MinDisks, MaxDisks int
	Spanned            bool
	SpanType           string // level of each span (spanned levels)
	RedfishType        string // Redfish RAIDType
	Overhead           int    // drives of redundancy per span
}

// Levels are the RAID levels Ironic's redfish RAID supports (RAID_LEVELS);
// the schema also allows JBOD and 2, which it refuses.
var levelOrder = []string{"0", "1", "5", "6", "1+0", "5+0", "6+0"}

// LevelInfo returns a level's facts.
func LevelInfo(level string) (Level, bool) {
	switch level {
	case "0":
		return Level{MinDisks: 1, MaxDisks: 1000, RedfishType: "RAID0"}, true
	case "1":
		return Level{MinDisks: 2, MaxDisks: 2, RedfishType: "RAID1", Overhead: 1}, true
	case "5":
		return Level{MinDisks: 3, MaxDisks: 1000, RedfishType: "RAID5", Overhead: 1}, true
	case "6":
		return Level{MinDisks: 4, MaxDisks: 1000, RedfishType: "RAID6", Overhead: 2}, true
	case "1+0":
		return Level{Spanned: true, SpanType: "1", RedfishType: "RAID10"}, true
	case "5+0":
		return Level{Spanned: true, SpanType: "5", RedfishType: "RAID50"}, true
	case "6+0":
		return Level{Spanned: true, SpanType: "6", RedfishType: "RAID60"}, true
	}
	return Level{}, false
}

// LevelOfRedfishType maps a Redfish RAIDType back to Ironic's level ("" if none).
func LevelOfRedfishType(t string) string {
	for _, l := range levelOrder {
		if li, _ := LevelInfo(l); li.RedfishType == t {
			return l
		}
	}
	return ""
}

// Drive is a physical drive a controller offers.
type Drive struct {
	ID            string // Redfish Id (what physical_disks name)
	Path          string // @odata.id
	Storage       string // Id of the Storage resource holding it
	CapacityBytes int64
	MediaType     string // Redfish MediaType: HDD, SSD
	Protocol      string // Redfish Protocol: SAS, SATA, ...
}

// Volume is a logical disk to create, as Plan resolved it.
type Volume struct {
	RAIDLevel    string
	SizeBytes    int64
	Controller   string   // Storage Id
	Drives       []string // drive IDs
	IsRootVolume bool
	Name         string
}

// PlanError is Ironic's RedfishError for a configuration the drives cannot
// satisfy.
type PlanError struct{ Reason string }

func (e *PlanError) Error() string { return "Redfish exception occurred. Error: " + e.Reason }

func planErr(format string, args ...any) error {
	return &PlanError{Reason: fmt.Sprintf(format, args...)}
}

const (
	gib          = int64(1) << 30
	stripeSizeKB = 64 * 1024 // Ironic's stripe_size_kb default, 64 Ki "KB"
)

// ld is a logical disk being planned (Ironic's dict with size_bytes).
type ld struct {
	raw          map[string]any
	level        string
	max          bool // size_gb "MAX"
	sizeBytes    int64
	disks        []string // physical_disks (nil: to choose)
	hasDisks     bool
	share        bool
	controller   string
	diskType     string
	ifaceType    string
	numDisks     int // 0: any
	isRoot       bool
	name         string
	spanDepth    int
	spanLength   int
	assignedSize int64
}

func (l ld) clone() ld { l.disks = slices.Clone(l.disks); return l }

// Plan matches the logical disks of a valid target configuration to
// drives and sizes, as Ironic's redfish create_configuration does
// (convert_drive_units, _find_configuration, _filter_logical_disks), and
// returns the volumes to create grouped by controller. Drives already in a
// volume (inUse) count as full, where Ironic assumes every drive is free.
func Plan(nodeUUID string, cfg map[string]any, drives []Drive, inUse map[string]bool, createRoot, createNonRoot bool) ([]Volume, error) {
	lds, err := convert(nodeUUID, cfg)
	if err != nil {
		return nil, err
	}
	free := map[string]int64{}
	for _, d := range drives {
		free[d.ID] = d.CapacityBytes
		if inUse[d.ID] {
			free[d.ID] = 0
		}
	}
	out, err := findConfiguration(lds, drives, free)
	if err != nil {
		return nil, err
	}
	var vols []Volume
	for _, l := range out {
		if (l.isRoot && !createRoot) || (!l.isRoot && !createNonRoot) {
			continue
		}
		vols = append(vols, Volume{RAIDLevel: l.level, SizeBytes: l.sizeBytes, Controller: l.controller,
			Drives: l.disks, IsRootVolume: l.isRoot, Name: l.name})
	}
	slices.SortStableFunc(vols, func(a, b Volume) int { return strings.Compare(a.Controller, b.Controller) })
	return vols, nil
}

// convert is convert_drive_units: size_gb to bytes; "MAX" needs physical_disks.
func convert(nodeUUID string, cfg map[string]any) ([]ld, error) {
	list, _ := cfg["logical_disks"].([]any)
	var out []ld
	for _, item := range list {
		m, _ := item.(map[string]any)
		l := ld{raw: m}
		l.level, _ = m["raid_level"].(string)
		pd, hasDisks := m["physical_disks"].([]any)
		l.hasDisks = hasDisks
		for _, d := range pd {
			if s, ok := d.(string); ok {
				l.disks = append(l.disks, s)
			}
		}
		if s, _ := m["size_gb"].(string); s == "MAX" {
			if !hasDisks {
				return nil, &Error{Msg: fmt.Sprintf("create_configuration called with invalid target_raid_configuration for node %s. 'physical_disks' is missing from logical_disk while 'size_gb'='MAX' was requested: %s",
					nodeUUID, pyrepr.Repr(m))}
			}
			l.max = true
		} else {
			f, _ := m["size_gb"].(float64)
			l.sizeBytes = int64(f) * gib
		}
		l.share, _ = m["share_physical_disks"].(bool)
		l.controller, _ = m["controller"].(string)
		l.diskType, _ = m["disk_type"].(string)
		l.ifaceType, _ = m["interface_type"].(string)
		if f, ok := m["number_of_physical_disks"].(float64); ok {
			l.numDisks = int(f)
		}
		l.isRoot, _ = m["is_root_volume"].(bool)
		l.name, _ = m["volume_name"].(string)
		out = append(out, l)
	}
	return out, nil
}

func levelOrErr(level string) (Level, error) {
	li, ok := LevelInfo(level)
	if !ok {
		return li, planErr("RAID level %s is not supported by the driver. Supported RAID levels: %s", level, strings.Join(levelOrder, ", "))
	}
	return li, nil
}

// spanLevel resolves a spanned level to its span's facts.
func spanLevel(level string, spans int) (Level, error) {
	li, err := levelOrErr(level)
	if err != nil {
		return li, err
	}
	if li.Spanned {
		if spans <= 1 {
			return li, planErr("Spanned RAID volumes cannot contain a single span")
		}
		li, _ = LevelInfo(li.SpanType)
	}
	return li, nil
}

func overhead(level string, spans int) (int, error) {
	li, err := spanLevel(level, spans)
	return li.Overhead * spans, err
}

func calculateSpans(level string, disks int) (int, error) {
	switch level {
	case "0", "1", "5", "6":
		return 1, nil
	case "5+0", "6+0":
		return 2, nil
	case "1+0":
		return disks >> 1, nil
	}
	return 0, planErr("Cannot calculate spans for RAID level \"%s\"", level)
}

func usableDisks(level string, disks int) (int, error) {
	switch level {
	case "0", "1", "5", "6":
		return disks, nil
	case "5+0", "6+0", "1+0":
		return (disks >> 1) << 1, nil
	}
	_, err := levelOrErr(level)
	return 0, err
}

func maxVolumeSize(level string, sel []Drive, free map[string]int64, spans int) (int64, error) {
	minFree := int64(math.MaxInt64)
	for _, d := range sel {
		minFree = min(minFree, free[d.ID])
	}
	stripesPerDisk := (minFree / 1024) / stripeSizeKB
	oh, err := overhead(level, spans)
	if err != nil {
		return 0, err
	}
	if len(sel) <= oh {
		return 0, planErr("The number of physical drives (%d) is too few for the required number of overhead drives (%d)", len(sel), oh)
	}
	return stripesPerDisk * stripeSizeKB * int64(len(sel)-oh) * 1024, nil
}

func usagePerDisk(l ld, sel []Drive, spans int) (int64, error) {
	oh, err := overhead(l.level, spans)
	if err != nil {
		return 0, err
	}
	volKB := l.sizeBytes / 1024
	stripesPerVol := int64(math.Ceil(float64(volKB) / stripeSizeKB))
	stripesPerDisk := int64(math.Ceil(float64(stripesPerVol) / float64(len(sel)-oh)))
	return stripesPerDisk * stripeSizeKB * 1024, nil
}

// volumeProps is _calculate_volume_props: checks that the chosen drives
// hold the volume, sets its size (MAX), takes its share of their free
// space and defaults its controller.
func volumeProps(l *ld, drives []Drive, free map[string]int64) error {
	var sel []Drive
	for _, d := range drives {
		if slices.Contains(l.disks, d.ID) {
			sel = append(sel, d)
		}
	}
	spans, err := calculateSpans(l.level, len(sel))
	if err != nil {
		return err
	}
	if spans == 0 || len(sel)%spans != 0 {
		return planErr("For RAID level %s, the number of physical disks provided (%d) must be a multiple of the spans count (%d)", l.level, len(sel), spans)
	}
	if l.level != "1+0" {
		l.spanDepth, l.spanLength = spans, len(sel)/spans
	}
	maxSize, err := maxVolumeSize(l.level, sel, free, spans)
	if err != nil {
		return err
	}
	if l.max {
		if maxSize == 0 {
			return planErr("size set to 'MAX' but could not allocate physical disk space")
		}
		l.sizeBytes, l.max = maxSize, false
	} else if maxSize < l.sizeBytes {
		return planErr("The physical disk space (%d bytes) is not enough for the size of the logical disk (%d bytes)", maxSize, l.sizeBytes)
	}
	use, err := usagePerDisk(*l, sel, spans)
	if err != nil {
		return err
	}
	for _, d := range sel {
		if free[d.ID] < use {
			return planErr("The free space of a disk (%d bytes) is not enough for the per-disk size of the logical disk (%d bytes)", free[d.ID], use)
		}
		free[d.ID] -= use
	}
	if l.controller == "" && len(sel) > 0 {
		l.controller = sel[0].Storage
	}
	return nil
}

// driveClass is the key drives are grouped by: a logical disk only spans
// drives of one media type, protocol and capacity.
type driveClass struct {
	media, protocol string
	capacity        int64
}

type classGroup struct {
	class  driveClass
	drives []Drive
}

func classOf(d Drive) driveClass { return driveClass{d.MediaType, d.Protocol, d.CapacityBytes} }

func protocolName(p string) string {
	switch p {
	case "SAS":
		return "sas"
	case "SATA":
		return "sata"
	}
	return ""
}

func cloneFree(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// assign is _assign_disks_to_volume: the first logical disk of *queue on
// some drive class and count, then the rest recursively; on success the
// planned disk is appended to *queue (Ironic's order).
func assign(queue *[]ld, groups []classGroup, free map[string]int64) (bool, map[string]int64, error) {
	l := (*queue)[0]
	*queue = (*queue)[1:]
	for _, g := range groups {
		if l.diskType != "" && !strings.EqualFold(l.diskType, g.class.media) {
			continue
		}
		if l.ifaceType != "" && !strings.EqualFold(l.ifaceType, protocolName(g.class.protocol)) {
			continue
		}
		var disks []Drive
		for _, d := range g.drives {
			if free[d.ID] > 0 {
				disks = append(disks, d)
			}
		}
		slices.SortStableFunc(disks, func(a, b Drive) int { return cmpInt(free[a.ID], free[b.ID]) })
		if !l.share {
			disks = slices.DeleteFunc(disks, func(d Drive) bool { return d.CapacityBytes != free[d.ID] })
		}
		maxSpans, err := calculateSpans(l.level, len(disks))
		if err != nil {
			return false, free, err
		}
		minLevel, err := spanLevel(l.level, min(2, maxSpans))
		if err != nil {
			return false, free, err
		}
		maxLevel, err := spanLevel(l.level, maxSpans)
		if err != nil {
			return false, free, err
		}
		minDisks := minLevel.MinDisks * min(2, maxSpans)
		maxDisks := min(maxLevel.MaxDisks*maxSpans, len(disks))
		for count := minDisks; count <= maxDisks; count++ {
			if l.numDisks != 0 && l.numDisks != count {
				continue
			}
			if u, _ := usableDisks(l.level, count); u != count {
				continue
			}
			cand := l.clone()
			candFree := cloneFree(free)
			cand.disks = nil
			for _, d := range disks[:count] {
				cand.disks = append(cand.disks, d.ID)
			}
			if err := volumeProps(&cand, disks[:count], candFree); err != nil {
				continue
			}
			if len(*queue) > 0 {
				ok, rest, err := assign(queue, groups, candFree)
				if err != nil || !ok {
					continue
				}
				*queue = append(*queue, cand)
				return true, rest, nil
			}
			*queue = append(*queue, cand)
			return true, candFree, nil
		}
	}
	*queue = append([]ld{l}, *queue...)
	return false, free, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// findConfiguration is _find_configuration.
func findConfiguration(lds []ld, drives []Drive, free map[string]int64) ([]ld, error) {
	reserved := map[string]bool{}
	for _, l := range lds {
		if l.hasDisks && l.max && l.share {
			for _, d := range l.disks {
				reserved[d] = true
			}
		}
	}
	var groups, reservedGroups []classGroup
	index := map[driveClass]int{}
	for _, d := range drives {
		c := classOf(d)
		i, ok := index[c]
		if !ok {
			i = len(groups)
			index[c] = i
			groups = append(groups, classGroup{class: c})
			reservedGroups = append(reservedGroups, classGroup{class: c})
		}
		if reserved[d.ID] {
			reservedGroups[i].drives = append(reservedGroups[i].drives, d)
		} else {
			groups[i].drives = append(groups[i].drives, d)
		}
	}
	for _, l := range lds {
		if l.hasDisks && !l.share {
			for i := range groups {
				groups[i].drives = slices.DeleteFunc(groups[i].drives, func(d Drive) bool { return slices.Contains(l.disks, d.ID) })
			}
		}
	}
	var out []ld
	for _, l := range lds { // step 1: given drives, exact size
		if l.hasDisks && !l.max {
			if err := volumeProps(&l, drives, free); err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	var queue []ld // step 2: drives to choose
	for _, l := range lds {
		if !l.hasDisks {
			queue = append(queue, l)
		}
	}
	if len(queue) > 0 {
		ok, f, err := assign(&queue, groups, free)
		if err != nil {
			return nil, err
		}
		if !ok {
			for i := range groups {
				groups[i].drives = append(groups[i].drives, reservedGroups[i].drives...)
			}
			if ok, f, err = assign(&queue, groups, free); err != nil {
				return nil, err
			}
			if !ok {
				return nil, planErr("failed to find matching physical disks for all logical disks")
			}
		}
		free = f
	}
	out = append(out, queue...)
	for _, l := range lds { // step 3: given drives, MAX
		if l.hasDisks && l.max {
			if err := volumeProps(&l, drives, free); err != nil {
				return nil, err
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// IsPlanError reports whether err says the drives cannot hold the configuration.
func IsPlanError(err error) bool {
	var pe *PlanError
	return errors.As(err, &pe)
}
