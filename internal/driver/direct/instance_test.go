package direct

import (
	"reflect"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/disk"
	"github.com/anvil-metal/anvil/internal/model"
)

func TestDeployParams(t *testing.T) {
	const uuid = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
	netboot := model.JSON{"image_source": "/i", "kernel": "/k", "ramdisk": "/r", "capabilities": map[string]any{"boot_option": "netboot"}}
	with := func(base model.JSON, kv ...any) model.JSON {
		out := model.JSON{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name    string
		info    model.JSON
		props   model.JSON
		want    map[string]any // subset of the parameters
		wantErr string
	}{
		{name: "whole disk, defaults", info: model.JSON{"image_source": "/i"},
			want: map[string]any{"image_type": "whole-disk", "deploy_boot_mode": "uefi", "disk_label": "gpt"}},
		{name: "bios: no label (msdos chosen by the agent)", info: model.JSON{"image_source": "/i"}, props: model.JSON{"capabilities": "boot_mode:bios"},
			want: map[string]any{"deploy_boot_mode": "bios", "disk_label": nil}},
		{name: "disk_label capability", info: model.JSON{"image_source": "/i"}, props: model.JSON{"capabilities": "boot_mode:uefi,disk_label:msdos"},
			want: map[string]any{"disk_label": "msdos"}},
		{name: "bad disk_label", info: model.JSON{"image_source": "/i"}, props: model.JSON{"capabilities": "disk_label:zfs"}, wantErr: `invalid disk_label capability "zfs"`},
		{name: "hints from properties", info: model.JSON{"image_source": "/i"}, props: model.JSON{"root_device": map[string]any{"serial": "S-1"}},
			want: map[string]any{"root_device": map[string]any{"serial": "S-1"}}},
		{name: "instance_info hints win", info: model.JSON{"image_source": "/i", "root_device": map[string]any{"size": ">= 10"}}, props: model.JSON{"root_device": map[string]any{"serial": "S-1"}},
			want: map[string]any{"root_device": map[string]any{"size": ">= 10"}}},
		{name: "unknown hint", info: model.JSON{"image_source": "/i"}, props: model.JSON{"root_device": map[string]any{"serial": "S-1", "colour": "red"}},
			wantErr: `Failed to validate the root device hints {'colour': 'red', 'serial': 'S-1'} (from the node's properties) for node ` + uuid + `: The hints "colour" are invalid. Valid hints are: "size, model,`},
		{name: "qcow2", info: model.JSON{"image_source": "/i", "image_disk_format": "QCOW2"}, want: map[string]any{"disk_format": "qcow2"}},
		{name: "vmdk", info: model.JSON{"image_source": "/i", "image_disk_format": "vmdk"}, wantErr: `image_disk_format "vmdk" is not supported`},
		{name: "partition image, local boot by default", info: model.JSON{"image_source": "/i", "kernel": "/k", "ramdisk": "/r", "root_gb": 10.0},
			want: map[string]any{"image_type": "partition", "boot_option": "local", "root_mb": int64(10240)}},
		{name: "partition image, local boot", info: model.JSON{"image_source": "/i", "kernel": "/k", "ramdisk": "/r", "root_gb": 1.0,
			"capabilities": map[string]any{"boot_option": "local"}}, want: map[string]any{"boot_option": "local"}},
		{name: "partition image, unknown boot option", info: model.JSON{"image_source": "/i", "kernel": "/k", "ramdisk": "/r", "root_gb": 1.0,
			"capabilities": map[string]any{"boot_option": "pxe"}}, wantErr: "Invalid boot_option 'pxe', valid options are: local, netboot"},
		{name: "partition by image_type, no kernel", info: model.JSON{"image_source": "/i", "image_type": "partition", "root_gb": 10.0},
			wantErr: "Missing are: ['instance_info.kernel', 'instance_info.ramdisk']"},
		{name: "partition, netboot", info: with(netboot, "root_gb", "2", "swap_mb", 64.0, "ephemeral_gb", 1.0),
			want: map[string]any{"image_type": "partition", "root_mb": int64(2048), "swap_mb": int64(64), "ephemeral_mb": int64(1024), "ephemeral_format": "ext4", "boot_option": "netboot"}},
		{name: "partition, netboot via properties", info: model.JSON{"image_source": "/i", "kernel": "/k", "ramdisk": "/r", "root_gb": 1.0}, props: model.JSON{"capabilities": "boot_option:netboot"},
			want: map[string]any{"root_mb": int64(1024), "swap_mb": int64(0)}},
		{name: "partition, no root_gb", info: netboot, wantErr: "Some parameters were missing in node's instance_info. Missing are: ['instance_info.root_gb']"},
		{name: "partition, no ramdisk", info: with(netboot, "ramdisk", nil, "root_gb", 1.0), wantErr: "Missing are: ['instance_info.ramdisk']"},
		{name: "partition, ephemeral xfs", info: with(netboot, "root_gb", 1.0, "ephemeral_gb", 1.0, "ephemeral_format", "xfs"), wantErr: `ephemeral_format: "xfs" is not a filesystem the agent makes (ext2, ext3, ext4)`},
		{name: "partition, bad swap", info: with(netboot, "root_gb", 1.0, "swap_mb", "lots"), wantErr: "Invalid parameter swap_mb: lots is not an integer value."},
		{name: "configdrive string", info: model.JSON{"image_source": "/i", "configdrive": "http://127.0.0.1/cd"}, want: map[string]any{"configdrive": "http://127.0.0.1/cd"}},
		{name: "configdrive bad key", info: model.JSON{"image_source": "/i", "configdrive": map[string]any{"meta_data": map[string]any{}, "extra": 1.0}},
			wantErr: "Additional properties are not allowed ('extra' was unexpected)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := deployParams(&model.Node{UUID: uuid, InstanceInfo: tt.info, Properties: tt.props})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v\nwant %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if !reflect.DeepEqual(p[k], v) {
					t.Errorf("%s = %#v, want %#v (all: %v)", k, p[k], v, p)
				}
			}
		})
	}
}

func TestStoreConfigDrive(t *testing.T) {
	n := &model.Node{UUID: "u-1", Name: "node-1", InstanceInfo: model.JSON{"configdrive": map[string]any{
		"meta_data": map[string]any{"hostname": "h"}, "user_data": "#cloud-config\n"}}}
	if err := storeConfigDrive(n); err != nil {
		t.Fatal(err)
	}
	s, ok := n.InstanceInfo["configdrive"].(string)
	if !ok {
		t.Fatalf("configdrive still %T", n.InstanceInfo["configdrive"])
	}
	iso, err := disk.FetchConfigDrive(t.Context(), nil, s)
	if err != nil {
		t.Fatal(err)
	}
	// The ISO's content is checked in internal/disk; here: the node's
	// uuid and name were added to meta_data.
	if !strings.Contains(string(iso), `"uuid":"u-1"`) || !strings.Contains(string(iso), `"name":"node-1"`) || !strings.Contains(string(iso), `"hostname":"h"`) {
		t.Fatal("meta_data lacks the node's uuid and name, or the given hostname")
	}
	params, err := deployParams(n)
	if err != nil || params["configdrive"] != s {
		t.Fatalf("the stored config drive is not passed on: %v", err)
	}
}
