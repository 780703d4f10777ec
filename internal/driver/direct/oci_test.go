package direct

import (
	"context"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/oci"
	"github.com/anvil-metal/anvil/internal/oci/ocitest"
	"github.com/anvil-metal/anvil/internal/secret"
)

// TestOCISecretsAreMasked: the pull secret and the pull authorization are
// secrets wherever they appear (API, logs, events), and the agent's view of
// the node does not carry the pull secret.
func TestOCISecretsAreMasked(t *testing.T) {
	for _, k := range []string{keyPullSecret, "image_request_authorization", "image_request_authorization_secret"} {
		if !secret.IsKey(k) {
			t.Errorf("%s is not masked", k)
		}
	}
	n := &model.Node{InstanceInfo: model.JSON{keyPullSecret: "u:p", "image_source": "oci://r/x:y"}}
	if ii := AgentNode(n)["instance_info"].(map[string]any); ii[keyPullSecret] != nil || ii["image_source"] == nil {
		t.Errorf("agent's instance_info: %v", ii)
	}
}

// TestResolveOCIRecordsTheArtifact: the deploy's resolution replaces an
// earlier one's fields, drops a disk format the pinned manifest cannot
// confirm, and refuses a bootc container image with a clear error.
func TestResolveOCIRecordsTheArtifact(t *testing.T) {
	r := ocitest.New(t, ocitest.NoAuth, "", "")
	m, l := r.PushArtifact(t, "img", "v1", []byte("disk"), "application/octet-stream", "d.raw")
	cfg := r.PushBlob(t, "os", []byte(`{}`), "application/vnd.oci.image.config.v1+json")
	l1 := r.PushBlob(t, "os", []byte("l1"), "application/vnd.oci.image.layer.v1.tar+gzip")
	r.PushManifest(t, "os", "latest", map[string]any{"schemaVersion": 2, "mediaType": ocitest.MediaManifest,
		"config": cfg, "layers": []ocitest.Descriptor{l1, l1}}, ocitest.MediaManifest)
	d := New(Config{OCI: oci.NewClient(oci.Config{AllowHTTP: true})})
	n := &model.Node{UUID: "n1", InstanceInfo: model.JSON{"image_source": "oci://" + r.Host + "/img@" + m.Digest,
		"image_disk_format": "qcow2", "image_compression_type": "zstd", "image_checksum": "stale",
		"image_os_hash_algo": "sha512", "image_os_hash_value": "stale"}}
	if err := d.resolveOCI(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	ii := n.InstanceInfo
	if ii["image_checksum"] != strings.TrimPrefix(l.Digest, "sha256:") || ii["image_compression_type"] != nil ||
		ii["image_disk_format"] != nil || ii["image_os_hash_algo"] != nil || ii["image_url"] != r.URL+"/v2/img/blobs/"+l.Digest {
		t.Errorf("instance_info %v", ii)
	}
	params, err := imageInfo(n, false)
	if err != nil {
		t.Fatal(err)
	}
	if info := params["image_info"].(map[string]any); info["os_hash_value"] != ii["image_checksum"] {
		t.Errorf("image_info %v", info)
	}
	n.InstanceInfo = model.JSON{"image_source": "oci://" + r.Host + "/os"}
	err = d.resolveOCI(context.Background(), n)
	if err == nil || !strings.Contains(err.Error(), "is a container image (bootc)") {
		t.Errorf("bootc image: %v", err)
	}
}

// TestAutodetectChoice is Ironic's detection: ramdisk when
// ironic_ramdisk_deploy is set (Python truth) with a boot_iso or a kernel
// and a ramdisk; direct otherwise; Deploy itself is never the path.
func TestAutodetectChoice(t *testing.T) {
	a := New(Config{}).Autodetect()
	cases := []struct {
		ii   model.JSON
		want string
	}{
		{model.JSON{"image_source": "http://x/img"}, Name},
		{model.JSON{"ironic_ramdisk_deploy": true, "boot_iso": "http://x/iso"}, RamdiskName},
		{model.JSON{"ironic_ramdisk_deploy": "yes", "kernel": "k", "ramdisk": "r"}, RamdiskName},
		{model.JSON{"ironic_ramdisk_deploy": true, "kernel": "k"}, Name},
		{model.JSON{"ironic_ramdisk_deploy": false, "boot_iso": "http://x/iso"}, Name},
		{model.JSON{"ironic_ramdisk_deploy": "", "boot_iso": "http://x/iso"}, Name},
	}
	for _, c := range cases {
		got, err := a.SwitchDeploy(context.Background(), &model.Node{InstanceInfo: c.ii})
		if err != nil || got != c.want {
			t.Errorf("%v: %s %v, want %s", c.ii, got, err, c.want)
		}
	}
	if _, err := a.Deploy(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "did not switch to a concrete interface") {
		t.Errorf("Deploy: %v", err)
	}
}
