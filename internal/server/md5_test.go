package server

import (
	"strings"
	"testing"
)

// TestAllowMD5Checksum: the direct deploy refuses an md5 image checksum
// unless anvil serve is started with --allow-md5-checksum (Config.AllowMD5,
// Ironic's [agent]allow_md5_checksum), seen in the node's validation.
func TestAllowMD5Checksum(t *testing.T) {
	const md5sum = "0123456789abcdef0123456789abcdef"
	deployValidation := func(allow bool) (bool, string) {
		s := serveWith(t, func(c *Config) { c.AllowMD5 = allow })
		node := s.do("POST", "/v1/nodes", `{"driver":"fake-hardware","deploy_interface":"direct",
			"driver_info":{"deploy_kernel":"http://127.0.0.1:1/k","deploy_ramdisk":"http://127.0.0.1:1/r"},
			"instance_info":{"image_source":"http://127.0.0.1:1/img.raw","image_checksum":"`+md5sum+`","root_gb":1}}`, 201)["uuid"].(string)
		v := s.do("GET", "/v1/nodes/"+node+"/validate", "", 200)
		d, _ := v["deploy"].(map[string]any)
		r, _ := d["reason"].(string)
		return d["result"] == true, r
	}
	if ok, reason := deployValidation(false); ok || !strings.Contains(reason, "md5 image checksums are not allowed") {
		t.Errorf("md5 by default: result %v, reason %q", ok, reason)
	}
	if ok, reason := deployValidation(true); !ok {
		t.Errorf("md5 with AllowMD5: refused: %q", reason)
	}
}
