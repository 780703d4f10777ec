package agent_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/oci/ocitest"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// setOCIImage points the node's instance_info at an oci:// image, with a
// pull secret or none.
func setOCIImage(t *testing.T, api, node, source, secret string) {
	t.Helper()
	ops := []map[string]any{{"op": "add", "path": "/instance_info", "value": map[string]any{"image_source": source}}}
	if secret != "" {
		ops = append(ops, map[string]any{"op": "add", "path": "/instance_info/image_pull_secret", "value": secret})
	}
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, ops)
}

// TestDeployOCI deploys images from in-process OCI registries through the
// conductor and the agent: a raw artifact by tag, a zstd one chosen from
// an index by its disktype, a gzip one by digest, and one of a private
// registry behind a bearer token service with image_pull_secret — each
// byte for byte on the disk. A wrong digest, a missing tag and a refused
// pull secret fail the deploy with Ironic's error and leave the disk as it
// was; the pull secret never shows.
func TestDeployOCI(t *testing.T) {
	pub := ocitest.New(t, ocitest.NoAuth, "", "")
	priv := ocitest.New(t, ocitest.BearerAuth, "puller", "pull-s3cret")
	const size = 3*mib + 123
	plain, zst, gz, private := randomBytes(t, size), randomBytes(t, size), randomBytes(t, size), randomBytes(t, size)
	pub.PushArtifact(t, "disk/plain", "v1", plain, "application/octet-stream", "plain.raw")
	enc, _ := zstd.NewWriter(nil)
	zm, zl := pub.PushArtifact(t, "disk/multi", "", enc.EncodeAll(zst, nil), "application/zstd", "disk.raw.zst")
	qm, _ := pub.PushArtifact(t, "disk/multi", "", []byte("QFI\xfbnot this one"), "application/octet-stream", "disk.qcow2")
	zm.Annotations, qm.Annotations = map[string]string{"disktype": "raw"}, map[string]string{"disktype": "qcow2"}
	zm.Platform = &ocitest.Platform{Architecture: "amd64", OS: "linux"}
	pub.PushIndex(t, "disk/multi", "v2", qm, zm)
	var gzb bytes.Buffer
	gw := gzip.NewWriter(&gzb)
	_, _ = gw.Write(gz)
	_ = gw.Close()
	gm, _ := pub.PushArtifact(t, "disk/gz", "", gzb.Bytes(), "application/gzip", "disk.raw.gz")
	priv.PushArtifact(t, "team/img", "prod", private, "application/octet-stream", "p.raw")

	api, server := startServerProc(t, "--oci-permit-fallback-to-http")
	const mac = "52:54:00:aa:bb:24"
	node := createNode(t, api, "oci-node", mac)
	disk := tempDisk(t, 32*mib, 0xAA)
	agent := startAgent(t, api, mac, disk)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")

	wrong := "oci://" + pub.Host + "/disk/plain@sha256:" + strings.Repeat("0", 64)
	fails := []struct{ name, source, secret, want string }{
		{"wrong digest", wrong, "", "Image " + wrong + " could not be found."},
		{"missing tag", "oci://" + pub.Host + "/disk/plain:v9", "",
			"Image tag oci://" + pub.Host + "/disk/plain:v9 could not be found, available tags are v1"},
		{"refused pull secret", "oci://" + priv.Host + "/team/img:prod", "puller:wrong-s3cret",
			"Not authorized for image oci://" + priv.Host + "/team/img:prod."},
		{"no pull secret", "oci://" + priv.Host + "/team/img:prod", "", "requires authentication which has not been provided"},
	}
	before, _ := os.ReadFile(disk)
	for _, f := range fails {
		setOCIImage(t, api, node, f.source, f.secret)
		provision(t, api, node, "active")
		n := waitState(t, api, node, "deploy failed")
		le, _ := n["last_error"].(string)
		contains(t, f.name+": last_error", le, f.want)
		if strings.Contains(le, "s3cret") {
			t.Fatalf("%s: last_error shows the pull secret: %s", f.name, le)
		}
		if after, _ := os.ReadFile(disk); !bytes.Equal(before, after) {
			t.Fatalf("%s: the disk was written", f.name)
		}
	}

	// A malformed reference is refused by the deploy's validation, as
	// Ironic's: 400, the node stays as it was.
	setOCIImage(t, api, node, "oci://"+pub.Host+"/Disk/plain:v1", "")
	r := call(t, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active"})
	if r.Status != 400 || !strings.Contains(string(r.Body), `Validation of image href oci://`+pub.Host+`/Disk/plain:v1 failed, reason: invalid repository name`) {
		t.Fatalf("malformed reference: HTTP %d %s", r.Status, r.Body)
	}

	oks := []struct {
		name, source, secret string
		image                []byte
		compression          any
	}{
		{"plain by tag", "oci://" + pub.Host + "/disk/plain:v1", "", plain, nil},
		{"zstd from an index", "oci://" + pub.Host + "/disk/multi:v2", "", zst, "zstd"},
		{"gzip by digest", "oci://" + pub.Host + "/disk/gz@" + gm.Digest, "", gz, "gzip"},
		{"private with a pull secret", "oci://" + priv.Host + "/team/img:prod", "puller:pull-s3cret", private, nil},
	}
	for i, c := range oks {
		if i > 0 {
			provision(t, api, node, "deleted")
			waitState(t, api, node, "available")
		}
		setOCIImage(t, api, node, c.source, c.secret)
		provision(t, api, node, "active")
		n := waitState(t, api, node, "active")
		d, _ := os.ReadFile(disk)
		if len(d) != 32*mib || !bytes.Equal(d[:len(c.image)], c.image) || d[len(c.image)] != 0xAA {
			t.Fatalf("%s: the disk does not hold the image byte for byte", c.name)
		}
		ii := n["instance_info"].(map[string]any)
		if ii["image_source"] != c.source || ii["image_compression_type"] != c.compression ||
			!strings.HasPrefix(ii["oci_image_manifest_url"].(string), "oci://") || ii["image_url"] == nil {
			t.Errorf("%s: instance_info %v", c.name, ii)
		}
		if c.secret != "" && ii["image_pull_secret"] != "******" {
			t.Errorf("%s: image_pull_secret shown as %v", c.name, ii["image_pull_secret"])
		}
		if i == 1 && ii["image_container_blob_digest"] != zl.Digest {
			t.Errorf("the index's zstd raw artifact was not chosen: %v", ii["image_container_blob_digest"])
		}
	}
	if r := mustCall(t, 200, "GET", api+"/v1/nodes/"+node, nil); strings.Contains(string(r.Body), "pull-s3cret") {
		t.Fatal("the node shows the pull secret")
	}
	// Neither the pull secret nor a pull token is in the logs (the agent's
	// at debug level).
	tokens := priv.Tokens()
	if len(tokens) < 2 {
		t.Fatalf("the token service issued %d tokens; the conductor and the agent's pull each need one", len(tokens))
	}
	for _, p := range []*process{server, agent} {
		logs := p.Logs.String()
		for _, s := range append(tokens, "pull-s3cret", "wrong-s3cret") {
			if strings.Contains(logs, s) {
				t.Errorf("%s's logs show the secret %q", p.Name, s)
			}
		}
	}
}

// TestAutodetectDeploy: a node with deploy_interface autodetect deploys an
// oci:// disk image as direct (switched for the deploy, the original kept
// in driver_internal_info, restored by the tear down), and a bootc
// container image is refused before anything starts, saying why.
func TestAutodetectDeploy(t *testing.T) {
	reg := ocitest.New(t, ocitest.NoAuth, "", "")
	img := randomBytes(t, 2*mib+7)
	reg.PushArtifact(t, "disk", "v1", img, "application/octet-stream", "d.raw")
	cfg := reg.PushBlob(t, "os", []byte(`{"architecture":"amd64","os":"linux"}`), "application/vnd.oci.image.config.v1+json")
	l := reg.PushBlob(t, "os", []byte("layer"), "application/vnd.oci.image.layer.v1.tar+gzip")
	reg.PushManifest(t, "os", "latest", map[string]any{"schemaVersion": 2, "mediaType": ocitest.MediaManifest,
		"config": cfg, "layers": []ocitest.Descriptor{l}}, ocitest.MediaManifest)

	api := startServer(t, "--oci-permit-fallback-to-http")
	const mac = "52:54:00:aa:bb:25"
	node := createNode(t, api, "autodetect-node", mac)
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{{"op": "replace", "path": "/deploy_interface", "value": "autodetect"}})
	disk := tempDisk(t, 16*mib, 0)
	startAgent(t, api, mac, disk)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide") // cleaning by the agent, as direct
	waitState(t, api, node, "available")

	setOCIImage(t, api, node, "oci://"+reg.Host+"/os", "")
	r := call(t, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "active"})
	if r.Status != 400 || !strings.Contains(string(r.Body), "is a bootc container image") {
		t.Fatalf("bootc image: HTTP %d %s", r.Status, r.Body)
	}
	if n := getNode(t, api, node); n["deploy_interface"] != "autodetect" || n["provision_state"] != "available" {
		t.Fatalf("after a refused deploy: %v %v", n["deploy_interface"], n["provision_state"])
	}

	setOCIImage(t, api, node, "oci://"+reg.Host+"/disk:v1", "")
	provision(t, api, node, "active")
	n := waitState(t, api, node, "active")
	dii := n["driver_internal_info"].(map[string]any)
	if n["deploy_interface"] != "direct" || dii["original_deploy_interface"] != "autodetect" {
		t.Errorf("active: deploy_interface %v, original %v", n["deploy_interface"], dii["original_deploy_interface"])
	}
	if d, _ := os.ReadFile(disk); !bytes.Equal(d[:len(img)], img) {
		t.Fatal("the disk does not hold the image")
	}
	provision(t, api, node, "deleted")
	n = waitState(t, api, node, "available")
	dii = n["driver_internal_info"].(map[string]any)
	if n["deploy_interface"] != "autodetect" || dii["original_deploy_interface"] != nil {
		t.Errorf("after tear down: deploy_interface %v, original %v", n["deploy_interface"], dii["original_deploy_interface"])
	}
}

// TestDeployOCIOverTLS: a registry over HTTPS with basic authentication,
// verified by the CA bundle given to serve (--oci-verify-ca) and to the
// agent (--ca-file); without the bundle the deploy fails on the
// certificate, naming the image.
func TestDeployOCIOverTLS(t *testing.T) {
	reg, _ := ocitest.NewTLS(t, ocitest.BasicAuth, "puller", "tls-s3cret")
	img := randomBytes(t, 1*mib+3)
	reg.PushArtifact(t, "secure/img", "v1", img, "application/octet-stream", "d.raw")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, reg.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, trusted := range []bool{false, true} {
		var api string
		if trusted {
			api = startServer(t, "--oci-verify-ca", ca)
		} else {
			api = startServer(t)
		}
		mac := "52:54:00:aa:bb:26"
		node := createNode(t, api, "tls-node", mac)
		disk := tempDisk(t, 8*mib, 0)
		start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--disk", disk, "--ca-file", ca,
			"--listen", testbin.FreeAddr(t), "--heartbeat-interval", "100ms")
		provision(t, api, node, "manage")
		waitState(t, api, node, "manageable")
		provision(t, api, node, "provide")
		waitState(t, api, node, "available")
		setOCIImage(t, api, node, "oci://"+reg.Host+"/secure/img:v1", "puller:tls-s3cret")
		provision(t, api, node, "active")
		if !trusted {
			n := waitState(t, api, node, "deploy failed")
			contains(t, "untrusted registry: last_error", n["last_error"].(string), "Failed to download image oci://"+reg.Host+"/secure/img:v1, reason: tls: failed to verify certificate")
			continue
		}
		waitState(t, api, node, "active")
		if d, _ := os.ReadFile(disk); !bytes.Equal(d[:len(img)], img) {
			t.Fatal("the disk does not hold the image")
		}
	}
}
