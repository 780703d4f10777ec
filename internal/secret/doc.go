// Package secret decides what is a secret and hides it: the one masking
// used for API responses, logs, events, error texts and the CLI's --debug
// output.
//
// It follows oslo.utils' strutils, which Ironic uses to render nodes: a
// dict key containing one of _SANITIZE_KEYS holds a secret
// (mask_dict_password), and inside any other string, "password=...",
// "--password ...", `"token": "..."` and the like are masked
// (mask_password). Beyond oslo it masks any key ending in "_key", the
// password of credentials in URLs (scheme://user:password@host) and
// Authorization-style headers.
//
// The mask is Ironic's "******". Masking is idempotent and never fails.
package secret
