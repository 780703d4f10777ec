package direct

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"

	"github.com/anvil-metal/anvil/internal/ipa"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/oci"
)

// Images from container registries (image_source oci://...), as Ironic
// master's deploy_utils.build_instance_info_for_deploy does for an agent
// that downloads the image itself: the deploy resolves the reference to
// one artifact's blob (oci.Client.Resolve) and keeps what it chose in
// instance_info (image_url, the blob's digest as the checksum,
// oci_image_manifest_url, ...); the agent downloads the blob with a pull
// authorization obtained just before (image_request_authorization, never
// stored) and decompresses it (image_compression_type).

// keyPullSecret is the pull secret's key, in instance_info, else
// driver_info (Ironic's get_image_service_auth_override).
const keyPullSecret = "image_pull_secret"

// isOCI reports whether the node's image is in a registry.
func isOCI(n *model.Node) bool { return oci.IsRef(infoString(n, "image_source")) }

// pullSecret is the node's pull secret, nil for none.
func pullSecret(n *model.Node) *oci.Secret {
	if s, _ := n.InstanceInfo[keyPullSecret].(string); s != "" {
		return oci.ParseSecret(s)
	}
	s, _ := n.DriverInfo[keyPullSecret].(string)
	return oci.ParseSecret(s)
}

// resolveOCI resolves the node's oci:// image_source and records the
// artifact chosen in instance_info (replacing an earlier deploy's).
func (d *Direct) resolveOCI(ctx context.Context, n *model.Node) error {
	ref, err := oci.ParseRef(infoString(n, "image_source"))
	if err != nil {
		return err
	}
	for _, k := range oci.FieldNames {
		delete(n.InstanceInfo, k)
	}
	arch, _ := n.Properties["cpu_arch"].(string)
	im, err := d.oci().Resolve(ctx, ref, arch, pullSecret(n))
	if err != nil {
		return err
	}
	if im.DiskFormat == "bootc" {
		return fmt.Errorf("Image %s is a container image (bootc), not a disk image artifact: the %s deploy interface "+
			"writes disk images; Anvil has no bootc deploy interface (docs/oci.md)", ref, Name)
	}
	if im.DiskFormat == "" {
		// A pinned manifest says nothing of its format (Ironic's
		// "unknown"): the agent looks at the image, whatever the user set.
		delete(n.InstanceInfo, "image_disk_format")
	}
	maps.Copy(n.InstanceInfo, im.Fields())
	return nil
}

func (d *Direct) oci() *oci.Client {
	if d.cfg.OCI == nil {
		return oci.NewClient(oci.Config{})
	}
	return d.cfg.OCI
}

// ociAgentParams adds what the agent needs to pull the resolved image:
// its blob URL, compression, and a fresh pull authorization.
func (d *Direct) ociAgentParams(ctx context.Context, n *model.Node, info map[string]any) error {
	url := infoString(n, "image_url")
	mu := infoString(n, "oci_image_manifest_url")
	if url == "" || mu == "" {
		return fmt.Errorf("the image %s was not resolved by this deploy (instance_info image_url is missing)", infoString(n, "image_source"))
	}
	ref, err := oci.ParseRef(mu)
	if err != nil {
		return err
	}
	info[ipa.ParamURLs] = []any{url}
	if c := infoString(n, "image_compression_type"); c != "" {
		info[ipa.ParamCompression] = c
	}
	auth, err := d.oci().Authorization(ctx, ref, pullSecret(n))
	if err != nil {
		return err
	}
	if auth != "" {
		info[ipa.ParamAuthorization] = base64.StdEncoding.EncodeToString([]byte(auth))
	}
	return nil
}
